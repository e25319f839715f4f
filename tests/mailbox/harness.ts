/**
 * One way of running the mailbox scenarios on each of `flow.run`, LocalEngine and RedisEngine,
 * so the same test body checks that in-memory and Redis mailboxes behave the same.
 */
import {
  LocalEngine,
  processMailboxes,
  type Engine,
  type FlowDefinition,
  type Json,
  type JsonObject,
} from '@queueflow/runtime';
import { waitFor } from '../support/wait-for.js';

interface Outcome<S> {
  status: string;
  shared: S;
  error?: { message: string } | undefined;
}

interface StartedRun<S> {
  /** The engine's run id; `undefined` on `flow.run`. */
  id: string | undefined;
  result(): Promise<Outcome<S>>;
}

export interface Harness {
  name: string;
  /**
   * Whether a received message counts as consumed only when its step commits (the engines). With
   * `flow.run` there is no commit: `receive` takes the message out of the process's mailboxes.
   */
  transactional: boolean;
  start<S extends object>(flow: FlowDefinition, shared: S, params: JsonObject): Promise<StartedRun<S>>;
  /** A message from outside any run (`engine.send`; `processMailboxes.send` for `flow.run`). */
  send(address: string, body: Json): Promise<void>;
  /**
   * Resolves once the run is parked on its mailbox (status `waiting`). `flow.run` has no such
   * state to observe: a receive there is a pending promise, which any later send resolves.
   */
  parked(run: StartedRun<object>): Promise<void>;
  cancel(run: StartedRun<object>): Promise<void>;
  close(): Promise<void>;
}

/** `flow.run`: the flow's graph walked in this process with the process-wide mailboxes. */
export function flowRunHarness(): Harness {
  return {
    name: 'flow.run',
    transactional: false,
    async start<S extends object>(flow: FlowDefinition, shared: S, params: JsonObject): Promise<StartedRun<S>> {
      const root = flow.build();
      root.setParams(structuredClone(params));
      const state = structuredClone(shared);
      const done = root.run(state).then(
        (): Outcome<S> => ({ status: 'completed', shared: JSON.parse(JSON.stringify(state)) as S }),
        (error: Error): Outcome<S> => ({ status: 'failed', shared: state, error }),
      );
      return { id: undefined, result: () => done };
    },
    send: (address, body) => processMailboxes.send(address, body),
    parked: async () => {},
    cancel: async () => {
      throw new Error('flow.run has no cancel');
    },
    close: async () => {},
  };
}

/** An engine: LocalEngine in this process, or a RedisEngine whose workers run elsewhere. */
export function engineHarness(name: string, engine: Engine): Harness {
  return {
    name,
    transactional: true,
    async start<S extends object>(flow: FlowDefinition, shared: S, params: JsonObject): Promise<StartedRun<S>> {
      const handle = await engine.start(flow, structuredClone(shared), { params: structuredClone(params) });
      return { id: handle.id, result: () => handle.result() as Promise<Outcome<S>> };
    },
    send: async (address, body) => void (await engine.send(address, body)),
    parked: async (run) => {
      await waitFor(`run ${run.id} to park`, async () => {
        const info = await engine.get(run.id!);
        if (info && ['completed', 'failed', 'cancelled'].includes(info.status)) {
          throw new Error(`run ${run.id} ended ${info.status} instead of parking: ${info.error?.message ?? ''}`);
        }
        return info?.status === 'waiting';
      });
    },
    cancel: (run) => engine.cancel(run.id!),
    close: () => engine.close(),
  };
}

export function localHarness(flows: FlowDefinition[]): Harness {
  return engineHarness('LocalEngine', new LocalEngine({ flows }));
}
