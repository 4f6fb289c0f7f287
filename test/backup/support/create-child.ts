// Child process for crash tests: plan and create one backup (argv: root, output dir, backup id).
// LOOPX_TEST_FAULT names the publication point where this process SIGKILLs itself.
import { create, plan } from '../../../src/backup/index.js';

const [root, out, id] = process.argv.slice(2);
const result = await create(plan(root!, { outputDir: out, backupId: id }));
process.stdout.write(`${JSON.stringify({ archive: result.archive, manifest: result.manifest })}\n`);
