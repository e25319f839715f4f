import type { OutgoingMessage } from '@queueflow/runtime/interpreter';

/** Settings every store of run state shares. */
export interface StoreOptions {
  /** How long a finished run's record is kept, in seconds. */
  retentionSeconds: number;
  /** Error records kept per run. */
  maxErrors: number;
  /** Wakes the parked runs whose wake jobs a script returned (messages reached their mailboxes). */
  wake?: (jobIds: string[]) => Promise<void>;
}

/** What a commit did (the codes of commit-step.lua and fan-out.lua). */
export type CommitResult = 'committed' | 'stale' | 'cancelled' | 'missing';

/** What recording a child's end asks the caller to do (child-ended.lua). */
export type ChildEndedResult =
  | { type: 'ignored' }
  | { type: 'recorded'; startIndex: number | undefined }
  | { type: 'parent-ended' }
  | { type: 'fan-in' }
  | { type: 'duplicate' };

const COMMIT_CODES: Record<number, CommitResult> = { 1: 'committed', 0: 'stale', 2: 'cancelled', [-1]: 'missing' };

/** The CommitResult of a script's code. */
export function commitResult(code: number): CommitResult {
  return COMMIT_CODES[code] ?? 'stale';
}

export function childEndedResult(code: number, next: number): ChildEndedResult {
  switch (code) {
    case 1:
      return { type: 'recorded', startIndex: next >= 0 ? next : undefined };
    case 2:
      return { type: 'parent-ended' };
    case 3:
      return { type: 'fan-in' };
    case 4:
      return { type: 'duplicate' };
    default:
      return { type: 'ignored' };
  }
}

/** The outbox as script arguments: its size, then (address, message JSON) pairs. */
export function outboxArgs(outbox: OutgoingMessage[] | undefined): (string | number)[] {
  const args: (string | number)[] = [outbox?.length ?? 0];
  for (const { address, message } of outbox ?? []) args.push(address, JSON.stringify(message));
  return args;
}

/** Wakes the parked runs whose wake job ids a script returned. */
export async function wakeParked(options: StoreOptions, jobIds: string[] | undefined): Promise<void> {
  if (jobIds && jobIds.length > 0 && options.wake) await options.wake(jobIds);
}
