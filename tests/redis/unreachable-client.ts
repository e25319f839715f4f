/**
 * Run as a process of its own by unreachable-redis.int.test.ts: a client and a worker (told not to
 * wait for Redis: `exitOnUnreachable`) that cannot reach Redis. It prints what each call threw,
 * then returns: the process exits only if nothing (a retrying connection) is left open.
 */
import { defineFlow, Node } from '@queueflow/runtime';
import { RedisEngine, startWorker } from '@queueflow/worker';

const flow = defineFlow('unreachable', () => new Node());
const url = process.argv[2]!;
const engine = new RedisEngine({ connection: url, flows: [flow] });
for (const call of ['get', 'get again'] as const) {
  await engine.get('some-run').then(
    () => console.log(`${call}: resolved`),
    (error: { code?: string; message: string }) => console.log(`${call}: ${error.code} ${error.message}`),
  );
}
await engine.close();
await startWorker({ connection: url, flows: [flow], onError: () => {}, exitOnUnreachable: true }).then(
  () => console.log('worker: started'),
  (error: { code?: string; message: string }) => console.log(`worker: ${error.code} ${error.message}`),
);
