import { readFileSync } from 'node:fs';
import type { RedisConnection } from './connection.js';

/** The Lua scripts of the run store; each file starts with its KEYS/ARGV/returns contract. */
const SCRIPTS: Record<ScriptName, { file: string; keys?: number; budget?: true; agent?: true; bare?: true }> = {
  // Variable number of keys: the caller passes the count first.
  createRun: { file: 'create-run.lua' },
  // After agent-lifecycle.lua too: a turn's end commits with its run's last step.
  commitStep: { file: 'commit-step.lua', agent: true },
  fanOut: { file: 'fan-out.lua', keys: 9 },
  createChildren: { file: 'create-children.lua', keys: 2 },
  placeChildren: { file: 'place-children.lua', keys: 1 },
  childEnded: { file: 'child-ended.lua', keys: 8 },
  cancelRun: { file: 'cancel-run.lua', keys: 8 },
  reopenRun: { file: 'reopen-run.lua', keys: 8 },
  loadRun: { file: 'load-run.lua', keys: 2 },
  reserveMessage: { file: 'reserve-message.lua', keys: 3 },
  parkRun: { file: 'park-run.lua', keys: 8, agent: true }, // starts the turns its sends reach
  sendMessage: { file: 'send-message.lua', keys: 3 },
  takeMessage: { file: 'take-message.lua', keys: 1 },
  // Partitions: what crosses them (run-lifecycle.lua, handOff).
  applyHandoffs: { file: 'apply-handoffs.lua', keys: 1 },
  holdMessage: { file: 'hold-message.lua', keys: 2, bare: true },
  dropHandoffs: { file: 'drop-handoffs.lua', keys: 2, bare: true },
  claimDue: { file: 'claim-due.lua', keys: 1, bare: true },
  workerRegistry: { file: 'worker-registry.lua', keys: 2 },
  trimRuns: { file: 'trim-runs.lua', keys: 2 },
  appendStream: { file: 'append-stream.lua', keys: 2 },
  followRun: { file: 'follow-run.lua', keys: 1 },
  discardRun: { file: 'discard-run.lua', keys: 2 },
  noteTakeover: { file: 'note-takeover.lua', keys: 1 },
  // Flow control: after run-lifecycle.lua, budget-lifecycle.lua.
  acquireBudget: { file: 'acquire-budget.lua', budget: true },
  budgetOps: { file: 'budget-ops.lua', budget: true },
  // Keyed agents: after run-lifecycle.lua, agent-lifecycle.lua.
  activateAgent: { file: 'activate-agent.lua', keys: 6, agent: true },
  endTurn: { file: 'end-turn.lua', keys: 6, agent: true },
  agentOps: { file: 'agent-ops.lua', keys: 6, agent: true },
  // Variable number of keys: 1 + 7 per agent.
  sendToAgent: { file: 'send-to-agent.lua', agent: true },
  // Variable number of keys: 2 to change, 1 to fire.
  reminders: { file: 'reminders.lua', agent: true },
  conversations: { file: 'conversations.lua', keys: 5, bare: true },
  sharedMemory: { file: 'shared-memory.lua', keys: 3, bare: true },
  // On BullMQ's own keys: no prelude.
  hurryJob: { file: 'hurry-job.lua', keys: 1, bare: true },
  countStall: { file: 'count-stall.lua', keys: 2, bare: true },
};

type ScriptName =
  | 'createRun'
  | 'commitStep'
  | 'fanOut'
  | 'createChildren'
  | 'placeChildren'
  | 'childEnded'
  | 'cancelRun'
  | 'reopenRun'
  | 'loadRun'
  | 'reserveMessage'
  | 'parkRun'
  | 'sendMessage'
  | 'takeMessage'
  | 'applyHandoffs'
  | 'holdMessage'
  | 'dropHandoffs'
  | 'claimDue'
  | 'workerRegistry'
  | 'trimRuns'
  | 'appendStream'
  | 'followRun'
  | 'discardRun'
  | 'noteTakeover'
  | 'acquireBudget'
  | 'budgetOps'
  | 'hurryJob'
  | 'countStall'
  | 'activateAgent'
  | 'endTurn'
  | 'sendToAgent'
  | 'agentOps'
  | 'reminders'
  | 'conversations'
  | 'sharedMemory';

let sources: Record<ScriptName, string> | undefined;

function loadSources(): Record<ScriptName, string> {
  if (sources) return sources;
  const read = (file: string): string => readFileSync(new URL(`./lua/${file}`, import.meta.url), 'utf8');
  const prelude = read('run-lifecycle.lua');
  const budgetPrelude = read('budget-lifecycle.lua');
  const agentPrelude = read('agent-lifecycle.lua');
  const sourceOf = ({ file, budget, agent, bare }: (typeof SCRIPTS)[ScriptName]): string => {
    if (bare) return read(file);
    if (budget) return `${prelude}\n${budgetPrelude}\n${read(file)}`;
    if (agent) return `${prelude}\n${agentPrelude}\n${read(file)}`;
    return `${prelude}\n${read(file)}`;
  };
  sources = Object.fromEntries(Object.entries(SCRIPTS).map(([name, script]) => [name, sourceOf(script)])) as Record<
    ScriptName,
    string
  >;
  return sources;
}

/** Redis with the run store's scripts defined as commands (EVALSHA, falling back to EVAL). */
export type ScriptedRedis = RedisConnection & {
  [K in ScriptName]: (...args: (string | number)[]) => Promise<unknown>;
};

/** Defines the scripts on `redis` once. */
export function withScripts(redis: RedisConnection): ScriptedRedis {
  const scripted = redis as ScriptedRedis;
  if (typeof (scripted as Partial<ScriptedRedis>).commitStep === 'function') return scripted;
  const lua = loadSources();
  for (const [name, { keys }] of Object.entries(SCRIPTS)) {
    redis.defineCommand(name, { ...(keys === undefined ? {} : { numberOfKeys: keys }), lua: lua[name as ScriptName] });
  }
  return scripted;
}
