/**
 * Preloaded (`node --import`) into the `queueflow worker` processes of the child-end hand-off
 * fault test. On a store of several partitions a child's end takes two scripts: its commit in the
 * child's partition, then `RedisRunStore.childEnded` in its parent's. The first process about to
 * run that second side writes `{ pid, parentId, index }` to `<QF_MARKER_DIR>/died-between` (only
 * one process can create it) and SIGKILLs itself there: a real crash between the two sides.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { RedisRunStore } from '@queueflow/worker';

const childEnded = RedisRunStore.prototype.childEnded;

RedisRunStore.prototype.childEnded = function (this: RedisRunStore, ...args: Parameters<typeof childEnded>) {
  let marker: number;
  try {
    marker = openSync(join(process.env.QF_MARKER_DIR!, 'died-between'), 'wx');
  } catch {
    return childEnded.apply(this, args); // another process died here already
  }
  const [parentId, , index] = args;
  writeSync(marker, JSON.stringify({ pid: process.pid, parentId, index }));
  closeSync(marker);
  process.kill(process.pid, 'SIGKILL');
  return new Promise<never>(() => {});
};
