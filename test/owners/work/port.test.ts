/** The work provider port's conformance suite, once per provider (a new provider adds one line). */
import { describeWorkProvider } from '../conformance/work-provider.conformance.js';
import { describePg } from '../../support/pg.js';
import { pgWorkHarnesses } from './pg-harness.js';
import { memoryHarness, sqliteHarness } from './support.js';

describeWorkProvider('memory', memoryHarness);
describeWorkProvider('sqlite', () => sqliteHarness());
describePg('on the real PostgreSQL server', () => describeWorkProvider('postgresql', pgWorkHarnesses()));
