import { Command } from 'commander';
import type { StreamEntry } from '@queueflow/runtime';
import { clusterOption, prefixOption, redisOption, type ConnectionFlags } from './options.js';

/**
 * `queueflow tail <run> [--from ID] [--json]`: prints a run's stream (what its nodes emit) from
 * the beginning, or after entry `--from`, and follows it as it grows until the run ends; then
 * says on stderr how the run ended. With `--json`, one StreamEntry per line (JSON Lines), e.g.
 * for `jq`; else one line per entry: `step.attempt node  data` (a string as it is, other data as
 * JSON), or, where a try was cut short and another worker took the step over, `step.attempt node
 * -- restart: ...`. Ctrl-C stops following; the run goes on.
 */
export function tailCommand(): Command {
  return new Command('tail')
    .description("print a run's stream (what its nodes emit) and follow it until the run ends")
    .argument('<runId>', 'the run')
    .option('--from <id>', 'start after this entry id (the last one seen) instead of the first entry')
    .option('--json', 'one JSON object per entry and line')
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(async (runId: string, options: ConnectionFlags & { from?: string; json?: boolean }) => {
      const { withEngine } = await import('./with-engine.js');
      await withEngine(options, async (engine) => {
        for await (const entry of engine.stream(runId, options.from === undefined ? {} : { from: options.from })) {
          console.log(options.json ? JSON.stringify(entry) : formatEntry(entry));
        }
        const info = await engine.get(runId);
        console.error(`run ${runId} ${info?.status ?? 'ended'}${info?.error ? `: ${info.error.message}` : ''}`);
      });
    });
}

/**
 * One entry as a line: `step.attempt node  data` (the item's index too, for an item's entry); a
 * restart entry says which try stopped on which worker, and which worker took over.
 */
function formatEntry(entry: StreamEntry): string {
  const where = `${entry.step}.${entry.attempt} ${entry.node}${entry.item === undefined ? '' : `[${entry.item}]`}`;
  const { restart } = entry;
  if (restart) {
    return `${where}  -- restart: try ${entry.step}.${restart.attempt} stopped with worker ${restart.stoppedWorker || '(unknown)'}; worker ${restart.worker || '(unknown)'} took over`;
  }
  return `${where}  ${typeof entry.data === 'string' ? entry.data : JSON.stringify(entry.data)}`;
}
