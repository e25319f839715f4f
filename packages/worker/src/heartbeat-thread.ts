/**
 * The heartbeat thread (a `worker_threads` Worker, one per process, shared by the process's
 * workers: heartbeat-host.ts): it records each worker in the registry every interval from its
 * own thread and the worker's own Redis connection, so a worker whose main event loop is starved
 * of CPU (busy loops, a GC pause, a long synchronous parse) is still seen alive, as Temporal keeps
 * an activity's heartbeat apart from its work. The main thread joins the registry (at the start,
 * and under a new id after a fence); this thread only beats. It reads what it reports from memory
 * shared with the main thread ({@link HeartbeatState}), and stops beating once the main loop has
 * not ticked for `maxLoopLagMs`: a loop stuck that long is treated as dead, and others take its
 * steps over.
 *
 * Each worker joins with a MessagePort of its own ({@link JoinHeartbeat}), over which it and its
 * beats talk ({@link ToHeartbeat}, {@link FromHeartbeat}) as if the thread were its alone.
 */
import { parentPort, type MessagePort } from 'node:worker_threads';
import type { WorkerBeat } from '@queueflow/runtime/kernel';
import { connectAll, createRedis, type ConnectionOption } from './connection.js';
import { withScripts } from './scripts.js';
import { beatWorker, jobsMeta, type RegistryKeys } from './worker-registry.js';
import { HeartbeatState, monotonicMs, type FromHeartbeat, type ToHeartbeat } from './heartbeat-state.js';

/** What a worker gives the heartbeat thread when it joins. */
export interface HeartbeatThreadData {
  connection: ConnectionOption | undefined;
  readyCheck: boolean;
  keys: RegistryKeys;
  /** What the worker says of itself, but for `active` (read from `state` at each beat). */
  worker: Omit<WorkerBeat, 'active'>;
  intervalMs: number;
  maxLoopLagMs: number;
  state: SharedArrayBuffer;
}

/** The message a worker joins the heartbeat thread with: its data, and the port it talks over. */
export interface JoinHeartbeat {
  type: 'join';
  data: HeartbeatThreadData;
  port: MessagePort;
}

/** Beats for one worker until it says `stop`, over its own port and Redis connection. */
async function beatFor(data: HeartbeatThreadData, port: MessagePort): Promise<void> {
  const post = (message: FromHeartbeat): void => port.postMessage(message);
  const state = new HeartbeatState(data.state);
  const redis = withScripts(
    createRedis(data.connection, 'worker', (error) => post({ type: 'error', message: error.message }), {
      readyCheck: data.readyCheck,
    }),
  );
  let worker = data.worker;
  /** The jobs the worker runs now (named in each beat's `meta.jobs`), as the main thread said. */
  const jobs = new Set<string>();
  /** The id a beat found fenced: no beat under it again (the main thread rejoins under another). */
  let fencedId: string | undefined;
  /** Whether the main loop is past `maxLoopLagMs` (said once each time it gets there). */
  let stuck = false;
  let beating: Promise<void> | undefined;
  /** Whether its connection is up: no beat before (the main thread beats until the first). */
  let ready = false;
  let stopped = false;

  async function beat(): Promise<void> {
    const lagMs = monotonicMs() - state.loopTickAt;
    if (lagMs > data.maxLoopLagMs) {
      if (!stuck) post({ type: 'stuck', lagMs });
      stuck = true;
      return;
    }
    stuck = false;
    const beating = worker;
    if (fencedId === beating.id) return;
    const meta = { ...beating.meta, ...jobsMeta(jobs), loopLagMs: String(Math.round(lagMs)) };
    const reply = await beatWorker(redis, data.keys, { ...beating, meta, active: state.active }, false);
    if (reply === 'fenced') {
      fencedId = beating.id;
      post({ type: 'fenced', id: beating.id });
    } else state.beatAt = monotonicMs();
  }

  /** A beat, unless one is under way or the connection is not up yet. */
  function beatOnce(): void {
    if (!ready) return;
    beating ??= beat()
      .catch((error: Error) => post({ type: 'error', message: error.message }))
      .finally(() => (beating = undefined));
  }

  const timer = setInterval(beatOnce, data.intervalMs);
  port.on('message', (message: ToHeartbeat) => {
    if (message.type === 'rejoin') {
      worker = message.worker; // joined by the main thread already, with its leases in `meta`
      return;
    }
    if (message.type === 'leases') {
      worker = { ...worker, meta: { ...worker.meta, leases: message.leases } };
      return;
    }
    if (message.type === 'job') {
      if (message.running) jobs.add(message.id);
      else jobs.delete(message.id);
      return;
    }
    stopped = true;
    clearInterval(timer);
    void (beating ?? Promise.resolve())
      .then(() => redis.quit())
      .catch(() => {})
      .finally(() => {
        post({ type: 'stopped' });
        port.close();
      });
  });

  // The worker gave up waiting for `stopped` (a beat hung while Redis is down): its connection goes
  // now, or it would reconnect inside this thread, which outlives the worker.
  port.once('close', () => {
    clearInterval(timer);
    redis.disconnect();
  });

  await connectAll([redis]).catch((error: Error) => post({ type: 'error', message: error.message }));
  if (stopped) return; // stopped while connecting
  ready = true;
  post({ type: 'ready' });
}

// One worker's failure to set up (bad connection options) is told to it alone, whose port closes:
// it beats from its main thread; the thread goes on for the others.
parentPort!.on('message', ({ data, port }: JoinHeartbeat) => {
  beatFor(data, port).catch((error: Error) => {
    port.postMessage({ type: 'error', message: error.message } satisfies FromHeartbeat);
    port.close();
  });
});
