/** The session storage port's conformance suite, once per row of the provider table, through the row's own factory. */
import { SESSION_SQL } from '../../../src/owners/session/index.js';
import { describeSessionPort } from '../conformance/session-port.conformance.js';
import { eachProvider, rootPortHarness } from '../conformance/providers.js';

eachProvider((row, place) => {
  describeSessionPort(row.name, () =>
    rootPortHarness(row, place(SESSION_SQL), (ports, root, at) => ports.session(root, at)),
  );
});
