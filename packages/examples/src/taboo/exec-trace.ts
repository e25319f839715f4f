import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PlayerSettings } from './types.js';

/**
 * What an agent's `exec` does before it thinks, for demos and the fault test: with
 * `settings.markerDir`, appends `<pid> <message id> r<round> t<turn>` to `<markerDir>/<agent>.log`
 * (which process holds which message, not yet committed); then waits `settings.execMs`.
 */
export async function traceExec(
  settings: PlayerSettings,
  agent: 'hinter' | 'guesser',
  at: { messageId: string | undefined; round: number; turn: number },
): Promise<void> {
  if (settings.markerDir) {
    appendFileSync(
      join(settings.markerDir, `${agent}.log`),
      `${process.pid} ${at.messageId ?? '-'} r${at.round} t${at.turn}\n`,
    );
  }
  if (settings.execMs && settings.execMs > 0) await new Promise((resolve) => setTimeout(resolve, settings.execMs));
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
