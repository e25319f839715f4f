/**
 * Contract: graph identity (DESIGN "Graph identity"). An engine cannot start a flow it does not
 * know. On RedisEngine, where the code of a flow lives in each worker: a worker whose build of a
 * flow gives another graph shape (new code deployed mid-run) refuses the step, naming the flow and
 * both fingerprints; the run stays where it was and a worker with the matching code then completes
 * it.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node } from '@queueflow/runtime';
import { compileGraph } from '@queueflow/runtime/kernel';
import { gate, Tally, type Gate } from '../support/node-probes.js';
import { useRedisHarness } from '../support/redis-harness.js';
import { waitFor, within } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

const visits = new Tally<string>();
const gates = new Map<string, Gate>();

/** Waits for the token's gate in exec, so the test decides when the first step ends. */
class A extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override async exec(token: string): Promise<void> {
    visits.add(token, 'a');
    await gates.get(token)?.promise;
  }
  override post(shared: S): void {
    shared.a = true;
  }
}

class B extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override post(shared: S, token: string): void {
    visits.add(token, 'b');
    shared.b = true;
  }
}

/** The deployed code: a → b. */
const v1 = defineFlow('deployed', () => {
  const a = new A({ name: 'a' });
  a.next(new B({ name: 'b' }));
  return new Flow(a, { name: 'root' });
});
/** New code under the same name: same nodes, one more edge (b --loop--> a). */
const v2 = defineFlow('deployed', () => {
  const a = new A({ name: 'a' });
  const b = new B({ name: 'b' });
  a.next(b);
  b.on('loop', a);
  return new Flow(a, { name: 'root' });
});
const other = defineFlow('other', () => new Flow(new B({ name: 'b' })));

describe.each(engines)('%s: graph identity', (name) => {
  const setup = useEngine(name);

  it('rejects starting a flow the engine does not know with UNKNOWN_FLOW', async () => {
    const { engine } = await setup('identity-unknown', { flows: [v1], workers: 0 });
    await expect(engine.start(other.name, {})).rejects.toMatchObject({ code: 'UNKNOWN_FLOW' });
    await expect(engine.run('nope', {})).rejects.toMatchObject({ code: 'UNKNOWN_FLOW' });
  });
});

describe('RedisEngine: graph identity across workers', () => {
  const setup = useRedisHarness();

  it('a worker with another graph shape refuses the step; a worker with the matching code completes the run', async () => {
    const { engine, worker, until, connection, keys } = await setup('identity', {
      flows: [v1],
      workers: 0,
      concurrency: 1,
    });
    const fingerprints = {
      v1: compileGraph('deployed', v1.build()).fingerprint,
      v2: compileGraph('deployed', v2.build()).fingerprint,
    };
    expect(fingerprints.v1).not.toBe(fingerprints.v2);

    const token = 'mid-run';
    gates.set(token, gate());
    const first = await worker();
    const handle = await engine.start(v1, { token });
    await waitFor("step 'a' to run on the v1 worker", () => visits.count(token) === 1);

    // New code is deployed: the v1 worker leaves after its step, a v2 worker takes over.
    const newCode = await worker({ flows: [v2] });
    const leaving = first.close();
    gates.get(token)!.open();
    await leaving;

    const refusal = await waitFor('the v2 worker to refuse the step', () =>
      connection.hget(keys.run(handle.id), 'refusal'),
    );
    expect(refusal).toContain("flow 'deployed'");
    expect(refusal).toContain(fingerprints.v1);
    expect(refusal).toContain(fingerprints.v2);
    const held = await engine.get(handle.id);
    expect(held).toMatchObject({ status: 'running', steps: 1, currentNode: 'b', refusal, shared: { token, a: true } });
    expect(held?.shared.b).toBeUndefined();
    expect(visits.of(token)).toEqual(['a']);

    // A worker with the matching code resumes it (after the refused step's delay).
    await newCode.close();
    await worker({ flows: [v1] });
    const result = await within(handle.result(), 30_000, 'the matching worker did not resume the run');
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared).toEqual({ token, a: true, b: true });
    expect(visits.of(token)).toEqual(['a', 'b']);
    await until(handle.id, 'the record to say completed', (info) => info.status === 'completed' && info.steps === 2);
    expect((await engine.get(handle.id))?.refusal).toBeUndefined(); // cleared by the commit
    expect(await connection.hget(keys.run(handle.id), 'refusal')).toBeNull();
  }, 120_000);

  it('a worker that does not know the flow refuses its step and leaves the run queued', async () => {
    const { engine, worker, connection, keys } = await setup('identity-missing', { flows: [v1], workers: 0 });
    const stranger = await worker({ flows: [other] });
    const handle = await engine.start(v1, { token: 'unknown-here' });
    const refusal = await waitFor('the worker to refuse the step', () =>
      connection.hget(keys.run(handle.id), 'refusal'),
    );
    expect(refusal).toContain("'deployed'");
    expect(await engine.get(handle.id)).toMatchObject({ status: 'queued', steps: 0, refusal });
    expect(visits.count('unknown-here')).toBe(0);

    await stranger.close();
    await worker({ flows: [v1] });
    const result = await within(handle.result(), 30_000, 'the matching worker did not take the run');
    expect(result.status).toBe('completed');
  }, 120_000);
});
