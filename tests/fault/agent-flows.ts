/**
 * The agent type of the agent fault tests, loaded by worker processes and by sender processes.
 * `tally` keeps the numbers of the messages it handled, in order: a turn committed twice shows as
 * a duplicate, a lost one as a gap, and FIFO order as the order of `seen`. Its `exec` writes
 * `<markerDir>/current` (the worker's pid) so a test knows which process runs the turn, and waits
 * `execMs` (both from the message body).
 */
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineAgent, Node } from '@queueflow/runtime';

interface Tally {
  seen: number[];
  [key: string]: unknown;
}

interface TallyMessage {
  n: number;
  execMs?: number;
  markerDir?: string;
}

class Record extends Node<Tally> {
  override prep(): TallyMessage {
    return this.message!.body as unknown as TallyMessage;
  }
  override async exec(body: TallyMessage): Promise<number> {
    if (body.markerDir) {
      const partial = join(body.markerDir, `current.${process.pid}.tmp`);
      writeFileSync(partial, `${process.pid} ${body.n}`);
      renameSync(partial, join(body.markerDir, 'current')); // atomic on one file system
    }
    if (body.execMs) await new Promise((resolve) => setTimeout(resolve, body.execMs));
    return body.n;
  }
  override post(shared: Tally, _body: TallyMessage, n: number): undefined {
    shared.seen.push(n);
    return undefined;
  }
}

export const tally = defineAgent<Tally>('tally', {
  state: () => ({ seen: [] }),
  turn: () => new Record({ name: 'record' }),
});
