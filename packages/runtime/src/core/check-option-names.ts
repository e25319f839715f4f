import { closest, distance } from 'fastest-levenshtein';
import { QueueflowError } from '../errors/queueflow-error.js';

/**
 * Refuses an options object with a name its class does not know (a typo such as `limts` would
 * otherwise be ignored in silence: on the `tsx` path no type check runs).
 *
 * @param owner - the class being built (its name starts the message).
 * @param options - the options object as given.
 * @param known - the option names the class takes (its static `optionNames`).
 * @throws QueueflowError `INVALID_OPTION` naming the unknown option and the closest known name
 *   ("did you mean 'limits'?") when one is near, else every known name.
 */
export function checkOptionNames(owner: string, options: object, known: readonly string[]): void {
  for (const name of Object.keys(options)) {
    if (known.includes(name)) continue;
    const near = closest(name, known as string[]);
    const hint =
      near !== undefined && distance(name, near) <= Math.max(2, Math.floor(name.length / 3))
        ? `did you mean '${near}'?`
        : `known options: ${known.map((k) => `'${k}'`).join(', ')}`;
    throw new QueueflowError('INVALID_OPTION', `${owner}: unknown option '${name}'; ${hint}`, { retryable: false });
  }
}
