import { customAlphabet } from 'nanoid';
import { checkWellFormed } from '../core/well-formed.js';
import { QueueflowError } from '../errors/queueflow-error.js';

/**
 * A new run id: 21 letters and digits (about 125 random bits, nanoid's default strength). Not
 * nanoid's URL alphabet, whose `-` could start an id that a command line then reads as an option.
 */
export const newRunId: () => string = customAlphabet(
  '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz',
  21,
);

/**
 * Checks a run id an engine call was given: a non-empty string, well-formed Unicode, without `:`.
 * No run id holds `:` (new ids are letters and digits, a fan-out child's adds `.<step>.<index>`),
 * while a store's keys for a run do (`run:<id>:stream`): an id holding one could name another of
 * the run's keys, not a run.
 *
 * @returns `runId`.
 * @throws QueueflowError `INVALID_OPTION` naming the call and the id.
 */
export function checkRunId(owner: string, runId: unknown): string {
  if (typeof runId !== 'string' || runId === '' || runId.includes(':')) {
    const shown =
      typeof runId === 'string' ? `'${runId.length > 80 ? `${runId.slice(0, 80)}...` : runId}'` : typeof runId;
    throw new QueueflowError(
      'INVALID_OPTION',
      `${owner}: expected \`runId\` to be a run id (a non-empty string, never holding ':'), got ${shown}`,
      { retryable: false },
    );
  }
  return checkWellFormed(owner, 'runId', runId);
}
