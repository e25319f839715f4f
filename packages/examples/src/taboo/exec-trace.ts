import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentParams } from './types.js';

/**
 * What an agent's `exec` does before it thinks, for demos and the fault test: with
 * `params.markerDir`, appends `<pid> <message id> r<round> t<turn>` to `<markerDir>/<agent>.log`
 * (which process holds which message, not yet committed); then waits `params.execMs`.
 */
export async function traceExec(
  params: AgentParams,
  agent: 'hinter' | 'guesser',
  at: { messageId: string | undefined; round: number; turn: number },
): Promise<void> {
  if (params.markerDir) {
    appendFileSync(
      join(params.markerDir, `${agent}.log`),
      `${process.pid} ${at.messageId ?? '-'} r${at.round} t${at.turn}\n`,
    );
  }
  if (params.execMs && params.execMs > 0) await new Promise((resolve) => setTimeout(resolve, params.execMs));
}

/** The lines of `<markerDir>/<agent>.log` (see {@link traceExec}). */
export interface ExecTraceLine {
  pid: number;
  messageId: string | undefined;
  round: number;
  turn: number;
}

export function parseExecTrace(text: string): ExecTraceLine[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [pid, messageId, round, turn] = line.split(' ');
      return {
        pid: Number(pid),
        messageId: messageId === '-' ? undefined : messageId,
        round: Number(round?.slice(1)),
        turn: Number(turn?.slice(1)),
      };
    });
}
