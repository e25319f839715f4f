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

function checkWait(owner: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalidOption(owner, 'wait', 'a finite number of seconds from 0 and up', value);
  }
  return value;
}

/**
 * The pause between tries in seconds, from the options' `wait` (seconds) or `waitMs`
 * (milliseconds). @throws TypeError for a bad value, or when both are given.
 */
export function checkWaitOptions(owner: string, options: { wait?: unknown; waitMs?: unknown }): number {
  if (options.wait !== undefined && options.waitMs !== undefined) {
    throw new TypeError(
      `${owner}: give \`wait\` (seconds) or \`waitMs\` (milliseconds), not both; got wait ${describe(options.wait)} and waitMs ${describe(options.waitMs)}`,
    );
  }
  if (options.waitMs === undefined) return checkWait(owner, options.wait ?? 0);
  const { waitMs } = options;
  if (typeof waitMs !== 'number' || !Number.isFinite(waitMs) || waitMs < 0) {
    throw invalidOption(owner, 'waitMs', 'a finite number of milliseconds from 0 and up', waitMs);
  }
  return waitMs / 1000;
}

export function checkOptionalPositiveInteger(owner: string, option: string, value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw invalidOption(owner, option, 'an integer from 1 and up', value);
  }
  return value;
}
