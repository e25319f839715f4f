import { Command } from 'commander';
import { isMovedError } from '../moved-error.js';
import { agentCommands } from './agent-commands.js';
import { conversationCommands } from './conversation-commands.js';
import { graphCommand } from './graph-command.js';
import { initCommand } from './init.js';
import { operateCommands } from './operate-commands.js';
import { QUEUEFLOW_VERSION, checkConnectionFlags } from './options.js';
import { runCommands } from './run-commands.js';
import { scheduleCommand } from './schedule-commands.js';
import { studioCommand } from './studio-command.js';
import { tailCommand } from './tail-command.js';
import { workerCommand } from './worker-command.js';

/**
 * The `queueflow` command: start workers; start, inspect, list, retry, fork and cancel runs; follow
 * a run's stream; send messages; list workers; manage schedules; print a flow's graph; serve the studio; write a starter project. `REDIS_URL`,
 * `QUEUEFLOW_CLUSTER` and `QUEUEFLOW_PREFIX` are the defaults of `--redis`, `--cluster` and
 * `--prefix` everywhere.
 *
 * Apart from cli.ts, which parses `process.argv` with it, so that its parsing and checks can be
 * tested without a process of their own.
 */
export function queueflowProgram(): Command {
  const program = new Command()
    .name('queueflow')
    .description('Run queueflow flows over Redis: workers and runs')
    .version(QUEUEFLOW_VERSION)
    .showHelpAfterError()
    // A subcommand's options are its own (`conversation fork <id> --prefix p`), not its parent's.
    .enablePositionalOptions()
    .hook('preAction', (_program, command) => checkConnectionFlags(command));

  const commands = [
    workerCommand(),
    ...runCommands(),
    ...operateCommands(),
    ...agentCommands(),
    ...conversationCommands(),
    scheduleCommand(),
    tailCommand(),
    graphCommand(),
    studioCommand(),
    initCommand(),
  ];
  for (const command of commands) {
    command.copyInheritedSettings(program); // help after an error, as for the program itself
    program.addCommand(command);
  }
  return program;
}

/** The line `queueflow` prints for an error that ends it (exit code 1). */
export function errorLine(error: unknown): string {
  // A cluster node given as --redis whose INFO this user may not read: its first redirection says it.
  const hint = isMovedError(error)
    ? ': this is a Redis Cluster node: use --cluster (QUEUEFLOW_CLUSTER) instead of --redis'
    : '';
  return `queueflow: ${error instanceof Error ? error.message : String(error)}${hint}`;
}
