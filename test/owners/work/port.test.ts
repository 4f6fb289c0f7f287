/** The work provider port's conformance suite, once per row of the provider table, through the row's own `work.open`. */
import { WORK_SQL } from '../../../src/owners/work/index.js';
import { eachProvider, goalDirectory } from '../conformance/providers.js';
import { WORK_GOAL, describeWorkProvider } from '../conformance/work-provider.conformance.js';

eachProvider((row, place) => {
  describeWorkProvider(row.name, () => {
    const at = place(WORK_SQL);
    goalDirectory(at.root, WORK_GOAL);
    const location = row.work.ofRoot(at.location, WORK_GOAL);
    return {
      open: async (o = {}) => {
        await at.ready;
        return row.work.open(
          { root: at.root, goal_id: WORK_GOAL, location },
          {
            goal_id: o.goal_id ?? WORK_GOAL,
            create: true,
            ...(o.expected_incarnation ? { expected_incarnation: o.expected_incarnation } : {}),
          },
        );
      },
    };
  });
});
