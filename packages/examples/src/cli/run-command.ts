/**
 * An error that ends a command line with its message, printed as it is, and this exit code: e.g.
 * `interrupted: run <id> cancelled` and 130 after Ctrl-C.
 */
export class CommandExit extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
    this.name = 'CommandExit';
  }
}

/**
 * Runs a command line's `main`. When it fails, prints one line on stderr, `error: <message>` (a
 * {@link CommandExit}'s message as it is), with no stack, and exits with 1 (a CommandExit's code)
 * at once: `main` has closed what it opened by then, and whatever may still be pending, such as
 * a Redis connection that failed to open and retries on its own, must not keep a failed command
 * alive. When it succeeds the process ends as usual, once nothing is left to do.
 *
 * Usage errors are commander's (`error: option '--limit <n>' argument '0' is invalid...`, exit 1),
 * in the same form.
 */
export function runCommand(main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    if (error instanceof CommandExit) {
      console.error(error.message);
      process.exit(error.exitCode);
    }
    console.error(`error: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  });
}
