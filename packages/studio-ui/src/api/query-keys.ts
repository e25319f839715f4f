/**
 * The keys of the page's queries (TanStack Query): the live event stream refreshes them by key,
 * actions after they changed something.
 */
export const keys = {
  runs: ['runs'] as const,
  counts: ['counts'] as const,
  run: (id: string) => ['run', id] as const,
  history: (id: string) => ['history', id] as const,
  runEvents: (id: string) => ['run-events', id] as const,
  children: (id: string) => ['children', id] as const,
  diff: (id: string, step: number) => ['diff', id, step] as const,
  sharedAt: (id: string, step: number) => ['sharedAt', id, step] as const,
  graph: (flow: string) => ['graph', flow] as const,
  workers: ['workers'] as const,
  mailboxes: ['mailboxes'] as const,
  queues: ['queues'] as const,
  agents: ['agents'] as const,
  agent: (ref: string) => ['agents', ref] as const,
  conversations: ['conversations'] as const,
  conversationsPage: (cursor: string) => ['conversations', 'page', cursor] as const,
  conversation: (id: string) => ['conversations', 'one', id] as const,
  conversationTurn: (runId: string) => ['conversation-turn', runId] as const,
};
