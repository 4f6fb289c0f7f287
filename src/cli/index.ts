/** Public API of the CLI: the program and its entry point (used by bin/loopx.js and tests). */
export { buildProgram, main } from './main.js';
