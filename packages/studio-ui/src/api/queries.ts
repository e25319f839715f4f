/**
 * The page's reads, as TanStack Query queries. Nothing polls: the live event stream
 * (live/live-events.ts) invalidates or replaces them when runs change.
 */
import { keepPreviousData, useQuery } from '@tanstack/preact-query';
import { api } from './client';
import { keys } from './query-keys';
import type {
  AgentBody,
  AgentPage,
  ChildrenPage,
  ConversationInfo,
  ConversationsPage,
  ConversationTurn,
  CountsBody,
  FlowGraph,
  JsonObject,
  MailboxInfo,
  QueuesBody,
  RunEvent,
  RunInfo,
  RunStatus,
  RunsPage,
  StepDiff,
  StepRecord,
  WorkerInfo,
} from './types';

export interface RunsFilter {
  status?: RunStatus | undefined;
  flow?: string | undefined;
  q?: string | undefined;
  offset: number;
  limit: number;
}

export function useRuns(filter: RunsFilter) {
  return useQuery({
    queryKey: [...keys.runs, filter],
    queryFn: () => api.get<RunsPage>('/api/runs', { ...filter }),
    placeholderData: keepPreviousData,
  });
}

export function useCounts() {
  return useQuery({ queryKey: keys.counts, queryFn: () => api.get<CountsBody>('/api/runs/counts') });
}

export function useRun(id: string) {
  return useQuery({ queryKey: keys.run(id), queryFn: () => api.get<RunInfo>(`/api/runs/${encodeURIComponent(id)}`) });
}

export function useHistory(id: string) {
  return useQuery({
    queryKey: keys.history(id),
    queryFn: () => api.get<StepRecord[]>(`/api/runs/${encodeURIComponent(id)}/history`),
  });
}

/** The run's event log (parks, wakes, throttles, takeovers, cancels: what its record forgets). */
export function useRunEvents(id: string) {
  return useQuery({
    queryKey: keys.runEvents(id),
    queryFn: () => api.get<RunEvent[]>(`/api/runs/${encodeURIComponent(id)}/events`),
  });
}

export function useChildren(id: string, offset: number, limit: number, enabled: boolean, status?: RunStatus) {
  return useQuery({
    queryKey: [...keys.children(id), offset, limit, status ?? 'all'],
    queryFn: () => api.get<ChildrenPage>(`/api/runs/${encodeURIComponent(id)}/children`, { offset, limit, status }),
    placeholderData: keepPreviousData,
    enabled,
  });
}

export function useStepDiff(id: string, step: number | undefined) {
  return useQuery({
    queryKey: keys.diff(id, step ?? -1),
    queryFn: () => api.get<StepDiff>(`/api/runs/${encodeURIComponent(id)}/steps/${step}/diff`),
    enabled: step !== undefined,
    // A committed step never changes.
    staleTime: Infinity,
  });
}

export function useSharedAt(id: string, step: number, enabled: boolean) {
  return useQuery({
    queryKey: keys.sharedAt(id, step),
    queryFn: () =>
      api.get<{ step: number; shared: JsonObject }>(`/api/runs/${encodeURIComponent(id)}/shared`, { step }),
    enabled,
    staleTime: Infinity,
  });
}

export function useGraph(flow: string | undefined) {
  return useQuery({
    queryKey: keys.graph(flow ?? ''),
    queryFn: () => api.get<FlowGraph>(`/api/flows/${encodeURIComponent(flow!)}/graph`),
    enabled: flow !== undefined,
    staleTime: Infinity,
    retry: false,
  });
}

export function useWorkers() {
  return useQuery({ queryKey: keys.workers, queryFn: () => api.get<WorkerInfo[]>('/api/workers') });
}

export function useQueues() {
  return useQuery({ queryKey: keys.queues, queryFn: () => api.get<QueuesBody>('/api/queues') });
}

export function useMailboxes() {
  return useQuery({ queryKey: keys.mailboxes, queryFn: () => api.get<MailboxInfo[]>('/api/mailboxes') });
}

export function useAgents(type: string | undefined, cursor: string | undefined) {
  return useQuery({
    queryKey: [...keys.agents, 'list', type ?? '', cursor ?? ''],
    queryFn: () => api.get<AgentPage>('/api/agents', { type, cursor }),
    placeholderData: keepPreviousData,
  });
}

export function useAgent(ref: string) {
  return useQuery({
    queryKey: keys.agent(ref),
    queryFn: () => api.get<AgentBody>('/api/agent', { ref }),
    retry: false,
  });
}

export function useConversations(cursor: string | undefined) {
  return useQuery({
    queryKey: keys.conversationsPage(cursor ?? ''),
    queryFn: () => api.get<ConversationsPage>('/api/conversations', { cursor }),
    placeholderData: keepPreviousData,
  });
}

export function useConversation(id: string) {
  return useQuery({
    queryKey: keys.conversation(id),
    queryFn: () => api.get<ConversationInfo>('/api/conversation', { id }),
    retry: false,
  });
}

/** A turn of a conversation (`runId` its run), once one is chosen. */
export function useConversationTurn(runId: string | undefined) {
  return useQuery({
    queryKey: keys.conversationTurn(runId ?? ''),
    queryFn: () => api.get<ConversationTurn>('/api/conversation/turn', { run: runId }),
    enabled: runId !== undefined,
    retry: false,
  });
}
