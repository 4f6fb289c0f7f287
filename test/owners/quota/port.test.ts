/** The quota storage port's conformance suite, once per row of the provider table, through the row's own factory. */
import { QUOTA_SQL } from '../../../src/owners/quota/index.js';
import { eachProvider, rootPortHarness } from '../conformance/providers.js';
import { describeQuotaPort } from '../conformance/quota-port.conformance.js';

eachProvider((row, place) => {
  describeQuotaPort(row.name, () => rootPortHarness(row, place(QUOTA_SQL), (ports, root, at) => ports.quota(root, at)));
});
