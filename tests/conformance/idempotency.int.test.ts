/**
 * Contract: `RunOptions.idempotencyKey` (DESIGN "Operating runs"; Stripe and Trigger.dev
 * semantics). A second start with a key a retained run holds returns that run's handle and starts
 * nothing, however the starts race; another key starts another run; once the run holding a key
 * is gone (LocalEngine: `retainFinishedRuns`; RedisEngine: `retentionMs`), the key is free again.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node } from '@queueflow/runtime';
import { Tally } from '../support/node-probes.js';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

const execs = new Tally<string>();

class Once extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): string {
    execs.add(token, 'once');
    return token;
  }
  override post(shared: S): void {
    shared.ran = true;
  }
}
class Fails extends Node<S> {
  override exec(): never {
    throw new Error('fails');
  }
}
const once = defineFlow('idem-once', () => new Flow(new Once({ name: 'once' })));
const fails = defineFlow('idem-fails', () => new Flow(new Fails({ name: 'fails' })));
const flows = [once, fails];

describe.each(engines)('%s: idempotency keys', (name) => {
  const setup = useEngine(name);

  it("returns the first run's handle for a second start with the key, and starts nothing", async () => {
    const { engine } = await setup('idem-second', { flows });
    const token = `second-${name}`;
    const first = await engine.start<S>(once, { token }, { idempotencyKey: 'order-1' });
    expect((await first.result()).status).toBe('completed');

    const second = await engine.start<S>(once, { token, other: true }, { idempotencyKey: 'order-1' });
    expect(second.id).toBe(first.id);
    const result = await second.result();
    expect(result).toEqual(await first.result());
    expect(result.shared).not.toHaveProperty('other'); // the second start's shared was not used
    // run() with the key awaits the same run.
    expect((await engine.run<S>(once, { token }, { idempotencyKey: 'order-1' })).id).toBe(first.id);
    expect(execs.count(token)).toBe(1);
    expect((await engine.list()).map((run) => run.id)).toEqual([first.id]);
  });

  it('gives ten racing starts with one key one run', async () => {
    const { engine } = await setup('idem-race', { flows });
    const token = `race-${name}`;
    const handles = await Promise.all(
      Array.from({ length: 10 }, (_, i) => engine.start<S>(once, { token, i }, { idempotencyKey: 'race' })),
    );
    const ids = new Set(handles.map((handle) => handle.id));
    expect(ids.size).toBe(1);
    const results = await Promise.all(handles.map((handle) => handle.result()));
    expect(results.every((result) => result.status === 'completed')).toBe(true);
    expect((await engine.list()).map((run) => run.id)).toEqual([...ids]);
    expect(execs.count(token)).toBe(1);
  });

  it('starts a new run for another key, and for a start without one', async () => {
    const { engine } = await setup('idem-other', { flows });
    const token = `other-${name}`;
    const a = await engine.start<S>(once, { token }, { idempotencyKey: 'a' });
    const b = await engine.start<S>(once, { token }, { idempotencyKey: 'b' });
    const none = await engine.start<S>(once, { token });
    expect(new Set([a.id, b.id, none.id]).size).toBe(3);
    await Promise.all([a.result(), b.result(), none.result()]);
    expect(execs.count(token)).toBe(3);
  });

  it('holds the key while the run that took it is retained, failed or not', async () => {
    const { engine } = await setup('idem-failed', { flows });
    const failed = await engine.run<S>(fails, {}, { idempotencyKey: 'job-9' });
    expect(failed.status).toBe('failed');
    const again = await engine.start<S>(fails, {}, { idempotencyKey: 'job-9' });
    expect(again.id).toBe(failed.id);
    expect((await engine.list()).map((run) => run.id)).toEqual([failed.id]);
  });

  it('frees the key once the run that held it is gone by retention', async () => {
    // LocalEngine keeps one finished run; RedisEngine keeps a finished run's keys for a second.
    const { engine } = await setup('idem-retention', { flows, retainFinishedRuns: 1, retentionMs: 1000 });
    const token = `retention-${name}`;
    const first = await engine.run<S>(once, { token }, { idempotencyKey: 'nightly' });
    expect(first.status).toBe('completed');
    if (name === 'LocalEngine') await engine.run<S>(once, { token: `${token}-pusher` }); // pushes the first out
    await waitFor('the first run to be gone', async () => (await engine.get(first.id)) === undefined);

    const second = await engine.start<S>(once, { token }, { idempotencyKey: 'nightly' });
    expect(second.id).not.toBe(first.id);
    expect((await second.result()).status).toBe('completed');
    expect(execs.count(token)).toBe(2);
    // And the new run holds the key now.
    expect((await engine.start<S>(once, { token }, { idempotencyKey: 'nightly' })).id).toBe(second.id);
  });

  it('refuses an empty key and one over 256 characters with INVALID_OPTION, writing nothing', async () => {
    const { engine } = await setup('idem-invalid', { flows });
    await expect(engine.start(once, {}, { idempotencyKey: '' })).rejects.toMatchObject({ code: 'INVALID_OPTION' });
    await expect(engine.start(once, {}, { idempotencyKey: 'k'.repeat(257) })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
    });
    expect(await engine.list()).toEqual([]);
    const longest = await engine.start<S>(once, { token: `longest-${name}` }, { idempotencyKey: 'k'.repeat(256) });
    expect((await longest.result()).status).toBe('completed');
  });
});
