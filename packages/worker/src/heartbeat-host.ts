import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { HeartbeatThreadData, JoinHeartbeat } from './heartbeat-thread.js';

/**
 * The heartbeat thread of this process, shared by its workers (heartbeat-thread.ts): started by
 * the first worker that joins, and kept (unref'd: it holds no process open) for those after. A
 * thread costs a V8 isolate and a second load of ioredis and the store's scripts, hundreds of
 * milliseconds of CPU: a process that starts and stops many workers (tests, an embedding app)
 * pays it once. `undefined` while none runs; a thread that exits is replaced at the next join.
 */
let shared: { thread: Worker; onError: Set<(error: Error) => void> } | undefined;

const THREAD_FILE = new URL('./heartbeat-thread.js', import.meta.url);

/**
 * Joins a worker to the process's heartbeat thread, starting it if none runs. Returns the port
 * the worker and its beats talk over (closed when the worker stops, or when the thread exits),
 * or `undefined` when run from sources (tsx): there is no compiled thread to start, and the main
 * thread beats. `onError` hears an error that ends the thread (each beat's own errors come as
 * `error` messages on the port).
 */
export function joinHeartbeatThread(
  data: HeartbeatThreadData,
  onError: (error: Error) => void,
): MessagePort | undefined {
  if (!shared && !existsSync(fileURLToPath(THREAD_FILE))) return undefined;
  const host = (shared ??= startThread());
  const { port1, port2 } = new MessageChannel();
  host.thread.postMessage({ type: 'join', data, port: port2 } satisfies JoinHeartbeat, [port2]);
  // A closure per join: workers that share one `onError` each keep theirs until they stop.
  const hear = (error: Error): void => onError(error);
  host.onError.add(hear);
  port1.once('close', () => host.onError.delete(hear));
  return port1;
}

function startThread(): NonNullable<typeof shared> {
  const thread = new Worker(THREAD_FILE);
  thread.unref();
  const host = { thread, onError: new Set<(error: Error) => void>() };
  thread.on('error', (error) => {
    for (const onError of host.onError) onError(error);
  });
  thread.once('exit', () => {
    if (shared === host) shared = undefined;
  });
  return host;
}
