/**
 * The thread a v1 set capture runs on (capture-thread.ts starts it): the owners' captures — SQLite
 * online snapshots, reading the copies back, building and hashing the exports — run here while the
 * main thread streams the archive, so gzip is fed while the owners work. It reads the live root and
 * writes only under the attempt's staging directory, as the capture does on any thread. Messages
 * are `CaptureThreadMessage`s; after each component it waits for the main thread's `continue`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { captureSet } from './set-capture.js';
import {
  serializeError,
  type CaptureThreadInput,
  type CaptureThreadMessage,
  type CaptureThreadReply,
} from './capture-thread.js';

const port = parentPort!;
const input = workerData as CaptureThreadInput;
const post = (m: CaptureThreadMessage, transfer: ArrayBuffer[] = []): void => port.postMessage(m, transfer);

/** The main thread's answer to one component: go on, or stop (the archive failed). */
const replies: Array<(r: CaptureThreadReply) => void> = [];
port.on('message', (r: CaptureThreadReply) => replies.shift()?.(r));
const answered = (): Promise<CaptureThreadReply> => new Promise((resolve) => replies.push(resolve));

try {
  const set = await captureSet({ root: input.root, goalIds: input.goalIds }, input.staging, input.options, {
    plan: (components) => post({ type: 'plan', components }),
    component: async (ready) => {
      post({ type: 'component', ready });
      if ((await answered()).type === 'stop') throw new Error('the backup stopped');
    },
  });
  post({ type: 'done', set });
} catch (e) {
  post({ type: 'error', error: serializeError(e) });
}
// Nothing more to wait for: the thread ends by itself once its messages are out.
port.removeAllListeners('message');
port.unref();
