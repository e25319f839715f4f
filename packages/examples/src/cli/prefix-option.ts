import { InvalidArgumentError, type Command } from 'commander';

/**
 * `--prefix <prefix>`'s value: the workers' key prefix, which the engine checks further (no spaces
 * or ':').
 *
 * @throws InvalidArgumentError for an empty prefix (commander prints it as a usage error).
 */
export function keyPrefix(value: string): string {
  if (value === '') throw new InvalidArgumentError("the prefix is empty: give the workers' key prefix, e.g. '{qf}'");
  return value;
}

/**
 * A usage error (commander's: one line, exit 1) when `--prefix` was given without `--redis`: the
 * prefix names the workers' keys, and an embedded run has none, so it would be ignored.
 */
export function checkPrefixNeedsRedis(program: Command, redis: string | undefined): void {
  if (redis === undefined && program.getOptionValueSource('prefix') === 'cli') {
    program.error("error: --prefix is the workers' key prefix: it needs --redis");
  }
}
