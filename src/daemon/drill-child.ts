/**
 * The daemon's drill process (drills.ts starts it): one short recovery drill through the drill
 * library, on the synthetic state of its own temporary directory (its environment's TMPDIR), never
 * the daemon's root. It reads `{"command": [...]}` — node's arguments that start the installed CLI
 * every step of the drill runs as — from stdin, and answers on stdout, one JSON document per line:
 * `{"progress": <stage>}` as each stage starts, then exactly one of `{"receipt": …}`,
 * `{"error": {code, message, next_action}}` (a typed refusal of the drill) or `{"failed": true}`
 * (anything else, whose message is not shown: it may name paths).
 */
import { isLoopxError } from '../core/index.js';
import { runRecoveryDrill } from '../runtime/index.js';

const write = (doc: unknown): Promise<void> =>
  new Promise((done) => process.stdout.write(`${JSON.stringify(doc)}\n`, () => done()));

async function main(): Promise<void> {
  let input = '';
  for await (const chunk of process.stdin) input += String(chunk);
  const { command } = JSON.parse(input) as { command: string[] };
  try {
    const { receipt } = await runRecoveryDrill({
      command,
      mode: 'short',
      onProgress: (stage) => void write({ progress: stage }),
    });
    await write({ receipt });
  } catch (e) {
    await write(
      isLoopxError(e)
        ? { error: { code: e.code, message: e.message, next_action: e.nextAction ?? null } }
        : { failed: true },
    );
  }
}

await main();
process.exit(0);
