// Test entry: the CLI exactly as bin/loopx.js runs it, from source (via tsx) so tests need no build.
import { main } from '../../src/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
