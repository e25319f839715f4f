import { QueueflowError } from '../errors/queueflow-error.js';

/**
 * Checks that a string naming something in the store (a run id, an idempotency key, an address,
 * a budget key) is well-formed Unicode: it holds no lone surrogate (`String.prototype.isWellFormed`).
 * Stores keep strings as UTF-8, where a lone surrogate has no encoding: Node writes U+FFFD in its
 * place, so `'k-\uD800'` and `'k-\uDBFF'` would name one key, and Lua's cjson refuses its JSON
 * escape. Every such string that enters (engine calls, `this.send` / `this.receive`, the CLI
 * through them) passes here before anything is written.
 *
 * @param owner - who was called, e.g. `send`.
 * @param option - the argument or option, e.g. `address`.
 * @returns `value`.
 * @throws QueueflowError `INVALID_OPTION` naming the owner, the option and where the lone surrogate is.
 */
export function checkWellFormed(owner: string, option: string, value: string): string {
  if (value.isWellFormed()) return value;
  let at = 0;
  for (const char of value) {
    if (!char.isWellFormed()) break;
    at += char.length;
  }
  // JSON.stringify writes a lone surrogate as its escape (`\ud800`): the message shows which.
  const shown = JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}...` : value);
  throw new QueueflowError(
    'INVALID_OPTION',
    `${owner}: expected \`${option}\` to be well-formed Unicode, got ${shown} with a lone surrogate at index ${at}`,
    { retryable: false },
  );
}
