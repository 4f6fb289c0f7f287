/** The scheduler storage port's conformance suite, once per row of the provider table, through the row's own factory. */
import { SCHEDULER_SQL } from '../../../src/owners/scheduler/index.js';
import { eachProvider, rootPortHarness } from '../conformance/providers.js';
import { describeSchedulerPort } from '../conformance/scheduler-port.conformance.js';

eachProvider((row, place) => {
  describeSchedulerPort(row.name, () =>
    rootPortHarness(row, place(SCHEDULER_SQL), (ports, root, at) => ports.scheduler(root, at)),
  );
});
