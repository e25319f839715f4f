/**
 * Preloaded (`node --import`) into the `queueflow worker` processes of the child-end hand-off
 * fault test. On a store of several partitions a child's end takes two scripts: its commit in the
 * child's partition, then `child-ended.lua` in its parent's (the store's `recordChildEnd`, which
 * `childEnded` and the commit of a child both use). The first process about to run that second
 * side writes `{ pid, parentId, index }` to `<QF_MARKER_DIR>/died-between` (only one process can
 * create it) and SIGKILLs itself there: a real crash between the two sides.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { RedisRunStore } from '@queueflow/worker';

/** The store's method that applies a child's end to its parent (private: reached at run time). */
interface EndRecorder {
  recordChildEnd(parentId: string, parentStep: number, index: number, ...rest: unknown[]): Promise<unknown>;
}
const prototype = RedisRunStore.prototype as unknown as EndRecorder;
const recordChildEnd = prototype.recordChildEnd;

prototype.recordChildEnd = function (this: EndRecorder, ...args: Parameters<EndRecorder['recordChildEnd']>) {
  let marker: number;
  try {
    marker = openSync(join(process.env.QF_MARKER_DIR!, 'died-between'), 'wx');
  } catch {
    return recordChildEnd.apply(this, args); // another process died here already
  }
  const [parentId, , index] = args;
  writeSync(marker, JSON.stringify({ pid: process.pid, parentId, index }));
  closeSync(marker);
  process.kill(process.pid, 'SIGKILL');
  return new Promise<never>(() => {});
};
