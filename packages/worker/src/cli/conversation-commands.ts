import { Command } from 'commander';
import type { ConversationInfo, Json } from '@queueflow/runtime';
import type { PatchOperation } from '@queueflow/runtime/kernel';
import {
  clusterOption,
  jsonOption,
  parseJson,
  parsePatch,
  positiveInteger,
  prefixOption,
  redisOption,
  type ConnectionFlags,
} from './options.js';

/**
 * The commands that look at conversations (README "Conversations"): `conversations`,
 * `conversation <id>`, `conversation fork <id> --at <message>`.
 */
export function conversationCommands(): Command[] {
  return [conversationsCommand(), conversationCommand()];
}

function conversationsCommand(): Command {
  return new Command('conversations')
    .description('list conversation ids, newest first (a page at a time: --cursor with the last id printed)')
    .option('--limit <n>', 'most conversations listed', positiveInteger, 100)
    .option('--cursor <id>', 'list the conversations after this one')
    .addOption(jsonOption())
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(async (options: ConnectionFlags & { json?: boolean; limit: number; cursor?: string }) => {
      const { withEngine } = await import('./with-engine.js');
      await withEngine(options, async (engine) => {
        const page = await engine.conversations({
          limit: options.limit,
          ...(options.cursor === undefined ? {} : { cursor: options.cursor }),
        });
        if (options.json) return console.log(JSON.stringify(page, null, 2));
        if (page.ids.length === 0) return console.log(`no conversation under prefix '${options.prefix}'`);
        for (const id of page.ids) console.log(id);
        if (page.cursor) console.log(`more: --cursor '${page.cursor}'`);
      });
    });
}

function conversationCommand(): Command {
  return new Command('conversation')
    .addCommand(forkConversationCommand())
    .argument('<id>', "the conversation's id (the id of the message that started it)")
    .description('print a conversation as a sequence of messages between its agents, with its turns, waits and budget')
    .addOption(jsonOption())
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(async (id: string, options: ConnectionFlags & { json?: boolean }) => {
      const { withEngine } = await import('./with-engine.js');
      await withEngine(options, async (engine) => {
        const info = await engine.conversation(id);
        if (options.json) return console.log(JSON.stringify(info ?? null, null, 2));
        if (!info) {
          process.exitCode = 1;
          return console.error(`no conversation '${id}' under prefix '${options.prefix}' (never started, or expired)`);
        }
        console.log(describeConversation(info));
      });
    });
}

/**
 * A conversation as text: a header, then one line per message its turns handled, in order, as a
 * sequence diagram reads (`sender -> agent`), then what each agent spent, then its waits.
 */
function describeConversation(info: ConversationInfo): string {
  const budget = info.budget
    ? Object.entries(info.budget)
        .map(([limit, value]: [string, number | { key: string; max: number }]) =>
          typeof value === 'object' ? `${limit} ${value.max} ${value.key}` : `${limit} ${value}`,
        )
        .join(', ')
    : 'none';
  const lines = [
    `conversation ${info.id}: ${info.status}, ${info.turns} turn${info.turns === 1 ? '' : 's'}, budget: ${budget}`,
  ];
  if (info.error) lines.push(`  ended: ${info.error.message}`);
  lines.push(`  participants: ${info.participants.join(', ') || 'none'}`);
  for (const message of info.messages) {
    const at = new Date(message.at).toISOString();
    lines.push(
      `  ${at}  ${message.from ?? '(client)'} -> ${message.to}  ${message.id}  turn ${message.turn} (run ${message.runId})`,
    );
  }
  for (const agent of info.participants) {
    const byKey = Object.entries(info.spend[agent] ?? {});
    if (byKey.length > 0)
      lines.push(`  spent: ${agent} ${byKey.map(([key, amount]) => `${amount} ${key}`).join(', ')}`);
  }
  for (const wait of info.waits)
    lines.push(`  waiting: ${wait.agent} on ${wait.on} since ${new Date(wait.since).toISOString()}`);
  return lines.join('\n');
}

function forkConversationCommand(): Command {
  return new Command('fork')
    .argument('<id>', "the conversation's id")
    .description(
      "fork a conversation at one of its messages: copies of its agents with their states at that message, which gets delivered again to its agent's copy; prints the new conversation's id and the copies",
    )
    .requiredOption(
      '--at <messageId>',
      'the message to fork at (an id of `queueflow conversation <id> --json` messages)',
    )
    .option('--body <json>', 'the body to deliver the message with instead of its own', parseJson)
    .option(
      '--patch <json>',
      'RFC 6902 JSON Patch applied to the state of the agent that gets the message, e.g. \'[{"op":"replace","path":"/n","value":1}]\'',
      parsePatch,
    )
    .addOption(jsonOption())
    .addOption(redisOption())
    .addOption(clusterOption())
    .addOption(prefixOption())
    .action(
      async (
        id: string,
        options: ConnectionFlags & { at: string; body?: Json; patch?: PatchOperation[]; json?: boolean },
      ) => {
        const { withEngine } = await import('./with-engine.js');
        await withEngine(options, async (engine) => {
          const fork = await engine.forkConversation(id, {
            atMessage: options.at,
            ...(options.body === undefined ? {} : { body: options.body }),
            ...(options.patch ? { patch: options.patch } : {}),
          });
          if (options.json) return console.log(JSON.stringify(fork, null, 2));
          console.log(fork.id);
          for (const [ref, copy] of Object.entries(fork.agents)) console.log(`  ${ref} -> ${copy}`);
        });
      },
    );
}
