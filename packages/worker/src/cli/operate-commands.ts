import { createInterface } from 'node:readline/promises';
import { Command } from 'commander';
import type { JsonObject, StepRecord } from '@queueflow/runtime';
import type { PatchOperation } from '@queueflow/runtime/kernel';
import {
  clusterOption,
  connectionOf,
  jsonOption,
  nonNegativeInteger,
  parsePatch,
  parseJsonObject,
  prefixOption,
  redisOption,
  type ConnectionFlags,
} from './options.js';

/** The commands that operate runs: history, retry, fork, workers, purge. */
export function operateCommands(): Command[] {
  return [historyCommand(), retryCommand(), forkCommand(), workersCommand(), purgeCommand()];
}

function historyCommand(): Command {
  return new Command('history')
    .argument('<runId>', 'run id')
    .description(
      "print a run's committed steps, oldest first, numbered #0 on as `fork --step` takes them: node, action, tries, duration, worker, and what each changed in shared",
    )
    .addOption(jsonOption())
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(async (runId: string, options: ConnectionFlags & { json?: boolean }) => {
      const { withEngine } = await import('./with-engine.js');
      await withEngine(options, async (engine) => {
        const history = await engine.history(runId);
        if (options.json) return console.log(JSON.stringify(history, null, 2));
        if (history.length === 0) return console.log(`run ${runId} has committed no step yet`);
        for (const record of history) console.log(describeStep(record));
      });
    });
}

/** One line per step, then one per patch operation (at most a few, values cut short). */
function describeStep(record: StepRecord): string {
  const at = new Date(record.startedAt).toISOString();
  const head =
    `#${record.step}  ${record.node}` +
    `${record.action === undefined ? '' : ` → ${record.action}`}` +
    `  ${record.tries} ${record.tries === 1 ? 'try' : 'tries'}  ${record.endedAt - record.startedAt} ms  ${at}` +
    `${record.worker === undefined ? '' : `  ${record.worker}`}` +
    `${record.merged ? `  merged ${record.merged.children} children, ${record.merged.conflicts.length} conflicts` : ''}`;
  const shown = record.patch.slice(0, 5).map((operation) => `    ${describePatch(operation)}`);
  if (record.patch.length > shown.length) shown.push(`    … ${record.patch.length - shown.length} more`);
  return [head, ...shown].join('\n');
}

function describePatch(operation: PatchOperation): string {
  const value = 'value' in operation ? ` ${short(JSON.stringify(operation.value))}` : '';
  return `${operation.op} ${operation.path}${value}`;
}

function short(text: string | undefined): string {
  if (text === undefined) return 'undefined';
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}

function retryCommand(): Command {
  return new Command('retry')
    .argument('<runId>', 'run id')
    .description(
      'let a failed or cancelled run go on from its last committed step (same id; committed steps are not run again), and wait for it',
    )
    .option('--detach', 'do not wait for the run to end')
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(async (runId: string, options: ConnectionFlags & { detach?: boolean }) => {
      const [{ withEngine }, { awaitResult }] = await Promise.all([
        import('./with-engine.js'),
        import('./await-result.js'),
      ]);
      await withEngine(options, async (engine) => {
        await engine.retry(runId);
        if (options.detach) return console.log(`run ${runId} goes on`);
        console.error(`run ${runId} goes on`);
        const result = await awaitResult(engine, runId, options);
        console.log(JSON.stringify(result, null, 2));
        process.exitCode = result.status === 'completed' ? 0 : 1;
      });
    });
}

function forkCommand(): Command {
  return new Command('fork')
    .argument('<runId>', 'run id')
    .description(
      "start a new run of a run's flow from step #N as `history` numbers it (the state just before #N, which the fork runs again; #0: the start), with an optional JSON Patch on shared; prints the new run id",
    )
    .requiredOption(
      '--step <n>',
      "the step to start from, #N of `queueflow history` (the fork runs it again); also the number of the source's committed steps it keeps",
      nonNegativeInteger,
    )
    .option(
      '--patch <json>',
      'RFC 6902 JSON Patch applied to the fork\'s shared, e.g. \'[{"op":"replace","path":"/n","value":1}]\'',
      parsePatch,
    )
    .option('--params <json>', "the fork's params (default: the source run's)", parseJsonObject)
    .requiredOption('--flows <module>', 'module exporting FlowDefinitions (defineFlow): the fork needs the flow')
    .option('--wait', 'wait for the fork to end and print its result')
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(
      async (
        runId: string,
        options: ConnectionFlags & {
          step: number;
          patch?: PatchOperation[];
          params?: JsonObject;
          flows: string;
          wait?: boolean;
        },
      ) => {
        const [{ loadFlows }, { withEngine }, { awaitResult }] = await Promise.all([
          import('../load-flows.js'),
          import('./with-engine.js'),
          import('./await-result.js'),
        ]);
        const flows = await loadFlows(options.flows);
        await withEngine(
          options,
          async (engine) => {
            const handle = await engine.fork(runId, {
              step: options.step,
              ...(options.patch ? { patch: options.patch } : {}),
              ...(options.params ? { params: options.params } : {}),
            });
            if (!options.wait) return console.log(handle.id);
            const announce = `run ${handle.id} forked from ${runId} at step #${options.step}`;
            const result = await awaitResult(engine, handle.id, { ...options, announce });
            console.log(JSON.stringify(result, null, 2));
            process.exitCode = result.status === 'completed' ? 0 : 1;
          },
          flows,
        );
      },
    );
}

function workersCommand(): Command {
  return new Command('workers')
    .description(
      'list the live workers (from their heartbeats): host, pid, queues, flows, steps running and concurrency',
    )
    .addOption(jsonOption())
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(async (options: ConnectionFlags & { json?: boolean }) => {
      const { withEngine } = await import('./with-engine.js');
      await withEngine(options, async (engine) => {
        const workers = await engine.workers();
        if (options.json) return console.log(JSON.stringify(workers, null, 2));
        if (workers.length === 0) {
          return console.log(`no live worker under prefix '${options.prefix}'`);
        }
        for (const worker of workers) {
          const seen = Math.max(0, Math.round((Date.now() - worker.lastSeenAt) / 100) / 10);
          // A main loop that has not turned for a second or more: busy (a long synchronous step) or starved.
          const lag =
            worker.loopLagMs !== undefined && worker.loopLagMs >= 1000
              ? `  main loop blocked ${Math.round(worker.loopLagMs / 100) / 10} s`
              : '';
          console.log(
            `${worker.id}  ${worker.host}  pid ${worker.pid}  running ${worker.active}/${worker.concurrency}${lag}  queues ${worker.queues.join(', ')}  flows ${worker.flows.join(', ')}  seen ${seen} s ago`,
          );
        }
      });
    });
}

function purgeCommand(): Command {
  return new Command('purge')
    .description('delete every key under the prefix: all runs, jobs, mailboxes and workers of this deployment')
    .option('--yes', 'do not ask for confirmation')
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(async (options: ConnectionFlags & { yes?: boolean }) => {
      const { normalizePrefix } = await import('../redis-keys.js');
      const prefix = normalizePrefix(options.prefix, '--prefix');
      if (!options.yes) {
        if (!process.stdin.isTTY) {
          throw new Error(`purge deletes every key under '${prefix}': confirm with --yes (no terminal to ask on)`);
        }
        const answer = await ask(`Delete every key under '${prefix}'? Type the prefix to confirm: `);
        if (answer.trim() !== prefix) {
          console.error('queueflow: not confirmed; nothing deleted');
          process.exitCode = 1;
          return;
        }
      }
      const [{ connectAll, createRedis }, { checkDatabase }, { purgePrefix }] = await Promise.all([
        import('../connection.js'),
        import('../probe-server.js'),
        import('../purge-prefix.js'),
      ]);
      const redis = createRedis(connectionOf(options), 'client');
      try {
        await connectAll([redis]);
        await checkDatabase(redis); // else a database the server does not have would purge database 0
        const deleted = await purgePrefix(redis, prefix);
        console.log(`deleted ${deleted} keys under '${prefix}'`);
      } finally {
        redis.disconnect();
      }
    });
}

async function ask(question: string): Promise<string> {
  const reader = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return await reader.question(question);
  } finally {
    reader.close();
  }
}
