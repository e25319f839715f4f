function describe(value: unknown): string {
  const shown = typeof value === 'string' ? `'${value}'` : String(value);
  return `\`${shown}\` (${value === null ? 'null' : typeof value})`;
}

/**
 * Throws a `TypeError` naming the owner, the option, what was expected and what was received.
 *
 * @see p-queue: "Expected `concurrency` to be a number from 1 and up, got `0` (number)".
 */
export function invalidOption(owner: string, option: string, expected: string, got: unknown): TypeError {
  return new TypeError(`${owner}: expected \`${option}\` to be ${expected}, got ${describe(got)}`);
}

export function checkMaxRetries(owner: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw invalidOption(owner, 'maxRetries', 'an integer from 1 and up (the total number of tries)', value);
  }
  return value;
}

export function checkWait(owner: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalidOption(owner, 'wait', 'a finite number of seconds from 0 and up', value);
  }
  return value;
}

export function checkOptionalPositiveInteger(owner: string, option: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw invalidOption(owner, option, 'an integer from 1 and up', value);
  }
  return value;
}
