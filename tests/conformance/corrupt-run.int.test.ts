/**
 * Contract: a run that cannot go on says so (issue 16, item 6; issue 30, item 8). A run whose
 * record no step can resume from (a frame naming a node or flow the graph does not have, or a node
 * of another flow than the one it walks; a checkpoint that is not JSON or has no frames; a `flow`
 * that is no flow name, such as a module path: a corrupted or hand-edited record, or a bug) fails
 * at its next step with QueueflowError CORRUPT_RUN naming the run, the flow and what is wrong, at
 * once (no retries: trying again cannot mend a record), instead of staying `running` (or going
 * round the queue for ever, refused by every worker), and `result()` settles.
 *
 * How a record is corrupted: on RedisEngine with HSET of the run hash's `checkpoint` (or `flow`),
 * as a person with redis-cli would; LocalEngine keeps runs in its memory, out of reach, so the test
 * reaches into its store to do what a bug could. Each run is parked on a mailbox first (so nothing
 * touches its record meanwhile); a message then wakes it.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, QueueflowError, type Engine, type Message } from '@queueflow/runtime';
import { engines, useEngine, type EngineHarness } from './engine-harness.js';

type S = { got?: unknown; after?: boolean };

class Receive extends Node<S> {
  override prep(): Promise<Message | undefined> {
    return this.receive(this.params.address as string);
  }
  override post(shared: S, message: Message | undefined): void {
    shared.got = message?.body ?? null;
  }
}
class After extends Node<S> {
  override post(shared: S): void {
    shared.after = true;
  }
}
const receiveThenAfter = defineFlow('corrupt-run', () => {
  const receive = new Receive({ name: 'receive', maxRetries: 3, wait: 0.01 });
  // A nested flow between them: its node is one the root flow does not walk.
  receive.next(new Flow(new After({ name: 'inner' }), { name: 'sub' })).next(new After({ name: 'after' }));
  return new Flow(receive);
});

/** Replaces the stored checkpoint (or another field) of `runId`. */
async function setCheckpoint(h: EngineHarness, runId: string, checkpoint: string, field = 'checkpoint'): Promise<void> {
  if (h.redis) {
    await h.redis.connection.hset(h.redis.partitions.of(runId).run(runId), field, checkpoint);
    return;
  }
  const store = (h.engine as unknown as { store: { runs: Map<string, { run: Record<string, string> }> } }).store;
  store.runs.get(runId)!.run[field] = checkpoint;
}

async function storedCheckpoint(h: EngineHarness, runId: string): Promise<string> {
  if (h.redis) return (await h.redis.connection.hget(h.redis.partitions.of(runId).run(runId), 'checkpoint'))!;
  const store = (h.engine as unknown as { store: { runs: Map<string, { run: { checkpoint: string } }> } }).store;
  return store.runs.get(runId)!.run.checkpoint;
}

const corruptions: { what: string; corrupt: (checkpoint: string) => string; problem: RegExp }[] = [
  {
    what: 'its top frame names a node the flow does not have',
    corrupt: (checkpoint) => checkpoint.replace('"node":"receive"', '"node":"nope"'),
    problem: /frame 1 \(flow\) stands at node 'nope', which the flow does not have/,
  },
  {
    what: 'a frame names a flow the graph does not have',
    corrupt: (checkpoint) => checkpoint.replace('"kind":"flow","flow":"Flow#0"', '"kind":"flow","flow":"Gone#9"'),
    problem: /frame 1 \(flow\) walks flow 'Gone#9', which the flow does not have/,
  },
  {
    what: 'a frame stands at a node of a nested flow, not of the flow it walks',
    corrupt: (checkpoint) => checkpoint.replace('"node":"receive"', '"node":"inner"'),
    problem: /frame 1 \(flow\) stands at node 'inner', which flow 'Flow#0' does not walk \(a node of another flow\)/,
  },
  {
    what: 'a frame walks another flow than the one the frame below stands at',
    corrupt: (checkpoint) => checkpoint.replace('"kind":"flow","flow":"Flow#0"', '"kind":"flow","flow":"sub"'),
    problem: /frame 1 \(flow\) walks flow 'sub', but the frame below stands at 'Flow#0'/,
  },
  {
    what: 'its checkpoint is not JSON',
    corrupt: () => '{"shared": {}, "frames": [',
    problem: /its checkpoint is not JSON \(.+\)/,
  },
  {
    what: 'its checkpoint has no frames',
    corrupt: () => '{"shared": {}}',
    problem: /its checkpoint has no list of frames/,
  },
];

describe.each(engines)('%s: a run that cannot go on', (name) => {
  const setup = useEngine(name);

  for (const { what, corrupt, problem } of corruptions) {
    it(`fails with CORRUPT_RUN naming the run, the flow and the problem when ${what}`, async () => {
      const h = await setup('corrupt-run', { flows: [receiveThenAfter], autoAdvance: true });
      const engine: Engine = h.engine;
      const address = `corrupt-${name}-${Math.random().toString(36).slice(2)}`;
      const handle = await engine.start(receiveThenAfter, {}, { params: { address } });
      await h.until(handle.id, 'parked', (info) => info.status === 'waiting');
      const checkpoint = await storedCheckpoint(h, handle.id);
      expect(corrupt(checkpoint)).not.toBe(checkpoint);
      await setCheckpoint(h, handle.id, corrupt(checkpoint));

      await engine.send(address, 'wake up');
      const info = await h.until(handle.id, 'failed', (run) => run.status === 'failed');
      const message = new RegExp(`^run '${handle.id}' of flow 'corrupt-run' cannot go on: ${problem.source}`);
      expect(info.error).toMatchObject({ code: 'CORRUPT_RUN', message: expect.stringMatching(message) });
      // Failed at once: one error record, no retry of a step that cannot be mended.
      expect(info.errors).toHaveLength(1);
      expect(info.errors[0]).toMatchObject({ code: 'CORRUPT_RUN', retryable: false });

      // result() settles: with the failed run, or, when not even `shared` can be read, CORRUPT_RUN.
      const settled = await handle.result({ timeoutMs: 5000 }).then(
        (result) => result,
        (error: unknown) => error,
      );
      if (settled instanceof QueueflowError) {
        expect(settled).toMatchObject({ code: 'CORRUPT_RUN', message: expect.stringMatching(message) });
      } else {
        expect(settled).toMatchObject({ status: 'failed', error: { code: 'CORRUPT_RUN' } });
      }
    });
  }

  it('fails with CORRUPT_RUN when its record names a module path as its flow', async () => {
    const h = await setup('corrupt-run', { flows: [receiveThenAfter], autoAdvance: true });
    const address = `corrupt-flow-${name}-${Math.random().toString(36).slice(2)}`;
    const handle = await h.engine.start(receiveThenAfter, {}, { params: { address } });
    await h.until(handle.id, 'parked', (info) => info.status === 'waiting');
    await setCheckpoint(h, handle.id, './evil-flows.mjs', 'flow');

    await h.engine.send(address, 'wake up');
    const info = await h.until(handle.id, 'failed', (run) => run.status === 'failed');
    expect(info).toMatchObject({
      flow: './evil-flows.mjs',
      error: {
        code: 'CORRUPT_RUN',
        message: `run '${handle.id}' of flow './evil-flows.mjs' cannot go on: its record names flow './evil-flows.mjs', which is no flow name (letters, digits, _ . or -)`,
      },
    });
    expect(info.errors).toEqual([expect.objectContaining({ code: 'CORRUPT_RUN', retryable: false })]);
    await expect(handle.result({ timeoutMs: 5000 })).resolves.toMatchObject({ status: 'failed' });
  });
});
