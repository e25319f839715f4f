import { describe, expect, it } from 'vitest';
import { MemoryRunStore } from '../src/local/memory-run-store.js';
import { StepStream } from '../src/kernel/step-stream.js';
import { systemClock } from '../src/kernel/clock.js';

/** A try given up (its lock lost, its worker fenced) writes nothing more to its run's stream. */
describe('StepStream.drop', () => {
  it('drops the entries not yet stored and every later emit', async () => {
    const store = new MemoryRunStore(systemClock, 100, 100);
    await store.create({
      id: 'r1',
      flow: 'f',
      fingerprint: 'fp',
      checkpoint: '{"shared":{},"frames":[]}',
      target: { node: 'n', maxAttempts: 1 },
      now: 1_000,
    });
    const kept = new StepStream(store, 'r1', { step: 0, attempt: 0, worker: 'w1', node: 'n' }, () => 1_000);
    kept.emit('n', '"kept"');
    await kept.flush();
    const dropped = new StepStream(store, 'r1', { step: 0, attempt: 0, worker: 'w1', node: 'n' }, () => 1_000);
    dropped.drop();
    dropped.emit('n', '"after the fence"');
    await dropped.flush();
    const entries = await store.readStream('r1', '0-0', { count: 10 });
    expect(entries.map((entry) => ('data' in entry ? entry.data : undefined))).toEqual(['kept']);
  });
});
