#!/usr/bin/env node
import { isMovedError } from './moved-error.js';
import { Command } from 'commander';
import { setWarningHandler } from '@queueflow/runtime';
import { graphCommand } from './cli/graph-command.js';
import { initCommand } from './cli/init.js';
import { operateCommands } from './cli/operate-commands.js';
import { agentCommands } from './cli/agent-commands.js';
import { conversationCommands } from './cli/conversation-commands.js';
import { QUEUEFLOW_VERSION, checkConnectionFlags } from './cli/options.js';
import { runCommands } from './cli/run-commands.js';
import { scheduleCommand } from './cli/schedule-commands.js';
import { studioCommand } from './cli/studio-command.js';
import { tailCommand } from './cli/tail-command.js';
import { workerCommand } from './cli/worker-command.js';

/**
 * The `queueflow` command: start workers; start, inspect, list, retry, fork and cancel runs; follow
 * a run's stream; send messages; list workers; manage schedules; print a flow's graph; serve the studio; write a starter project. `REDIS_URL`,
 * `QUEUEFLOW_CLUSTER` and `QUEUEFLOW_PREFIX` are the defaults of `--redis`, `--cluster` and
 * `--prefix` everywhere.
 */
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

// `run` and `wait` say themselves when no worker takes a run (with how to start one).
setWarningHandler((code, message) => {
  if (code !== 'QF_NO_WORKER') process.emitWarning(message, { type: 'QueueflowWarning', code });
});

program.parseAsync().catch((error: unknown) => {
  // A cluster node given as --redis whose INFO this user may not read: its first redirection says it.
  const hint = isMovedError(error)
    ? ': this is a Redis Cluster node: use --cluster (QUEUEFLOW_CLUSTER) instead of --redis'
    : '';
  console.error(`queueflow: ${error instanceof Error ? error.message : String(error)}${hint}`);
  process.exit(1);
});
