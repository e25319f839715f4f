/**
 * What the studio needs of an engine: the `Engine` methods it calls. `RedisEngine` and
 * `LocalEngine` both have them, and so does a fake in the studio's unit tests.
 */
import type { BudgetInfo, Engine, QueueInfo } from '@queueflow/runtime';

export type {
  BudgetInfo,
  ChildSummary,
  ConversationFork,
  ConversationInfo,
  JsonObject,
  Message,
  QueueInfo,
  RunChange,
  RunInfo,
  RunStatus,
  RunSummary,
} from '@queueflow/runtime';
/** One RFC 6902 JSON Patch operation (as `StepRecord.patch` and `ForkOptions.patch` hold them). */
export type { Operation as PatchOperation } from 'fast-json-patch';

/**
 * The engine methods the studio calls (`queues` and `budgets`, for the Queues page, the agent
 * methods, for the Agents page, and the conversation methods, for the Conversations page, may be
 * missing: the page then says this engine cannot show them; without `runEvents`, a run's event
 * timeline is derived from its record alone). The studio never closes the
 * engine: whoever made it does.
 */
export type StudioEngine = Partial<
  Pick<
    Engine,
    | 'queues'
    | 'budgets'
    | 'agents'
    | 'agent'
    | 'agentHistory'
    | 'redeliver'
    | 'conversations'
    | 'conversation'
    | 'forkConversation'
    | 'runEvents'
  >
> &
  Pick<
    Engine,
    | 'get'
    | 'list'
    | 'cancel'
    | 'history'
    | 'retry'
    | 'fork'
    | 'workers'
    | 'mailboxes'
    | 'answer'
    | 'watch'
    | 'sharedAt'
    | 'children'
    | 'graph'
  >;

/** What the Queues page shows: every queue's tasks by state and workers, and every budget key. */
export async function queuesOf(engine: StudioEngine): Promise<{ queues: QueueInfo[]; budgets: BudgetInfo[] }> {
  if (!engine.queues || !engine.budgets) throw new Error('this engine has no queues() or budgets()');
  const [queues, budgets] = await Promise.all([engine.queues(), engine.budgets()]);
  return { queues, budgets };
}
