import { Command } from 'commander';
import type { AgentInfo } from '@queueflow/runtime';
import {
  clusterOption,
  jsonOption,
  positiveInteger,
  prefixOption,
  redisOption,
  type ConnectionFlags,
} from './options.js';

/** The commands that look at keyed agents: `agents [type]`, `agent <ref>`, `agent redeliver`. */
export function agentCommands(): Command[] {
  return [agentsCommand(), agentCommand()];
}

function agentsCommand(): Command {
  return new Command('agents')
    .argument('[type]', 'only keys of this agent type')
    .description('list agent keys in address order (a page at a time: --cursor with the last address printed)')
    .option('--limit <n>', 'most keys listed', positiveInteger, 100)
    .option('--cursor <ref>', 'list the keys after this address')
    .addOption(jsonOption())
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(
      async (
        type: string | undefined,
        options: ConnectionFlags & { json?: boolean; limit: number; cursor?: string },
      ) => {
        const { withEngine } = await import('./with-engine.js');
        await withEngine(options, async (engine) => {
          const page = await engine.agents({
            limit: options.limit,
            ...(type === undefined ? {} : { type }),
            ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
          });
          if (options.json) return console.log(JSON.stringify(page, null, 2));
          if (page.agents.length === 0)
            return console.log(`no agent${type ? ` of type '${type}'` : ''} under prefix '${options.prefix}'`);
          for (const agent of page.agents) console.log(agent.ref);
          if (page.cursor) console.log(`more: --cursor '${page.cursor}'`);
        });
      },
    );
}

function agentCommand(): Command {
  const show = new Command('agent')
    .argument('<ref>', "the agent's address, agent:<type>/<key>")
    .description('print an agent: its state, inbox depth, turns and dead letters (`agent redeliver` puts one back)')
    .addOption(jsonOption())
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(async (ref: string, options: ConnectionFlags & { json?: boolean }) => {
      const { withEngine } = await import('./with-engine.js');
      await withEngine(options, async (engine) => {
        const info = await engine.agent(ref);
        if (options.json) return console.log(JSON.stringify(info ?? null, null, 2));
        if (!info) {
          process.exitCode = 1;
          return console.error(`no agent '${ref}' under prefix '${options.prefix}' (never sent a message, or deleted)`);
        }
        console.log(describeAgent(ref, info));
      });
    });
  show.addCommand(
    new Command('redeliver')
      .argument('<ref>', "the agent's address")
      .argument('<messageId>', 'the id of a dead letter (see `queueflow agent <ref>`)')
      .description("put a dead letter back at the end of the agent's inbox: its turn runs again")
      .addOption(redisOption())
      .addOption(clusterOption())
      .addOption(prefixOption())
      // The options may also come before `redeliver`, where `agent` takes them: read both.
      .action(async (ref: string, messageId: string, _options: ConnectionFlags, command: Command) => {
        const options = command.optsWithGlobals<ConnectionFlags>();
        const { withEngine } = await import('./with-engine.js');
        await withEngine(options, async (engine) => {
          await engine.redeliver(ref, messageId);
          console.log(`redelivered ${messageId} to ${ref}`);
        });
      }),
  );
  return show;
}

/** An agent as the `agent` command prints it. */
function describeAgent(ref: string, info: AgentInfo): string {
  const lines = [
    ref,
    `  turns      ${info.turns}${info.lastTurnAt === undefined ? '' : ` (last ended ${new Date(info.lastTurnAt).toISOString()})`}`,
    `  running    ${info.running ?? 'no turn'}`,
    `  inbox      ${info.inbox} message${info.inbox === 1 ? '' : 's'}${info.capacity === undefined ? '' : ` of ${info.capacity}${info.inbox >= info.capacity ? ' (full)' : ''}`}`,
    `  state      ${JSON.stringify(info.state)}`,
    `  failed     ${info.failed.length} dead letter${info.failed.length === 1 ? '' : 's'}`,
  ];
  for (const letter of info.failed)
    lines.push(
      `    ${letter.message.id}  ${JSON.stringify(letter.message.body)}  ${letter.error.code ?? ''} ${letter.error.message}  (run ${letter.runId})`,
    );
  return lines.join('\n');
}
