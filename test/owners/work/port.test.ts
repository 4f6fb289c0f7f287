/** The work provider port's conformance suite, once per provider (a new provider adds one line). */
import { describeWorkProvider } from '../conformance/work-provider.conformance.js';
import { memoryHarness, sqliteHarness } from './support.js';

describeWorkProvider('memory', memoryHarness);
describeWorkProvider('sqlite', () => sqliteHarness());
