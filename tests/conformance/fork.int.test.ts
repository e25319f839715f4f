/**
 * Contract: `engine.fork` (DESIGN "Operating runs"; LangGraph's time travel). A new run starts
 * from the checkpoint after `step` committed steps of another (0: its start), with an optional
 * JSON Patch applied to its `shared` and optional params; the steps before `step` do not run again;
 * `get` shows `forkedFrom`; the source run is left as it was. INVALID_OPTION for a step the run
 * has no checkpoint of, a patch that does not apply, and a step inside a fan-out.
 */
import { describe, expect, it } from 'vitest';
import { defineFlow, Flow, Node, ParallelBatchFlow, type ForkOptions } from '@queueflow/runtime';
import { Tally } from '../support/node-probes.js';
import { engines, useEngine } from './engine-harness.js';

type S = Record<string, any>;

const execs = new Tally<string>();
const calls = (token: string, node: string): number => execs.of(token).filter((name) => name === node).length;

/** Counts its exec; `c` multiplies `shared.value` by the `factor` param and fails on a negative one. */
class Step extends Node<S> {
  override prep(shared: S): string {
    return shared.token as string;
  }
  override exec(token: string): void {
    execs.add(token, this.name!);
  }
  override post(shared: S): void {
    shared.visited = [...((shared.visited as string[] | undefined) ?? []), this.name!];
    if (this.name === 'c') {
      if ((shared.value as number) < 0) throw new Error(`c cannot take ${shared.value as number}`);
      shared.c = (shared.value as number) * ((this.params.factor as number | undefined) ?? 1);
    }
    if (this.name === 'd') shared.d = (shared.c as number) + 1;
  }
}

const abcd = defineFlow('fork-abcd', () => {
  const a = new Step({ name: 'a' });
  a.next(new Step({ name: 'b' }))
    .next(new Step({ name: 'c' }))
    .next(new Step({ name: 'd' }));
  return new Flow(a);
});

class Fan extends ParallelBatchFlow<S> {
  override prep(): object[] {
    return [{ i: 0 }, { i: 1 }];
  }
}
class Child extends Node<S> {
  override post(shared: S): void {
    shared[`c${this.params.i as number}`] = true;
  }
}
const fan = defineFlow('fork-fan', () => {
  const a = new Step({ name: 'a' });
  a.next(new Fan(new Child({ name: 'child' }), { name: 'fan' })).next(new Step({ name: 'd2' }));
  return new Flow(a);
});

const flows = [abcd, fan];

describe.each(engines)('%s: fork', (name) => {
  const setup = useEngine(name);

  it('forked at 2, a run of A→B→C→D runs C and D only, as a new run that names its source', async () => {
    const { engine } = await setup('fork-at-2', { flows });
    const token = `at-2-${name}`;
    const source = await engine.run<S>(abcd, { token, value: 2 });
    expect(source.status, JSON.stringify(source.error)).toBe('completed');
    const sourceInfo = await engine.get(source.id);
    const sourceHistory = await engine.history(source.id);

    const handle = await engine.fork(source.id, { step: 2 });
    expect(handle.id).not.toBe(source.id);
    const result = await handle.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared).toEqual(source.shared);
    expect(['a', 'b', 'c', 'd'].map((node) => calls(token, node))).toEqual([1, 1, 2, 2]);

    const info = await engine.get(handle.id);
    expect(info?.forkedFrom).toEqual({ runId: source.id, step: 2 });
    expect(info?.flow).toBe('fork-abcd');
    expect((await engine.history(handle.id)).map((r) => r.node)).toEqual(['c', 'd']);
    // The source run is left as it was.
    expect(await engine.get(source.id)).toEqual(sourceInfo);
    expect(await engine.history(source.id)).toEqual(sourceHistory);
    expect(sourceInfo?.forkedFrom).toBeUndefined();
  });

  it("applies the fork's JSON Patch to its shared: the final shared reflects it", async () => {
    const { engine } = await setup('fork-patch', { flows });
    const token = `patch-${name}`;
    const source = await engine.run<S>(abcd, { token, value: 2 });
    const forked = await engine.fork(source.id, {
      step: 2,
      patch: [
        { op: 'replace', path: '/value', value: 10 },
        { op: 'add', path: '/note', value: 'patched' },
      ],
    });
    const result = await forked.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared).toMatchObject({ value: 10, note: 'patched', c: 10, d: 11 });
    expect(source.shared).toMatchObject({ value: 2, c: 2, d: 3 });
    expect(await engine.sharedAt(forked.id, 0)).toMatchObject({ value: 10, note: 'patched', visited: ['a', 'b'] });
  });

  it('gives the fork the params asked for, else the source run’s', async () => {
    const { engine } = await setup('fork-params', { flows });
    const source = await engine.run<S>(abcd, { token: `params-${name}`, value: 2 }, { params: { factor: 5 } });
    expect(source.shared.c).toBe(10);
    expect((await (await engine.fork(source.id, { step: 2 })).result()).shared.c).toBe(10);
    expect((await (await engine.fork(source.id, { step: 2, params: { factor: 7 } })).result()).shared.c).toBe(14);
  });

  it('forked at 0, runs every step again from the initial shared (with the patch)', async () => {
    const { engine } = await setup('fork-at-0', { flows });
    const token = `at-0-${name}`;
    const source = await engine.run<S>(abcd, { token, value: 2 });
    const forked = await engine.fork(source.id, { step: 0, patch: [{ op: 'replace', path: '/value', value: 3 }] });
    const result = await forked.result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared).toEqual({ token, value: 3, visited: ['a', 'b', 'c', 'd'], c: 3, d: 4 });
    expect(['a', 'b', 'c', 'd'].map((node) => calls(token, node))).toEqual([2, 2, 2, 2]);
    expect((await engine.get(forked.id))?.forkedFrom).toEqual({ runId: source.id, step: 0 });
  });

  it('forks a failed run from its last committed step with a patch that fixes its input', async () => {
    const { engine } = await setup('fork-failed', { flows });
    const token = `failed-${name}`;
    const source = await engine.run<S>(abcd, { token, value: -1 });
    expect(source.status).toBe('failed');
    expect(source.error).toMatchObject({ node: 'c' });
    const result = await (
      await engine.fork(source.id, { step: 2, patch: [{ op: 'replace', path: '/value', value: 4 }] })
    ).result();
    expect(result.status, JSON.stringify(result.error)).toBe('completed');
    expect(result.shared).toMatchObject({ c: 4, d: 5, visited: ['a', 'b', 'c', 'd'] });
    expect((await engine.get(source.id))?.status).toBe('failed'); // the source stays failed
  });

  it('forks a run after its fan-in and before its fan-out, not in between', async () => {
    const { engine } = await setup('fork-fan', { flows });
    const token = `fan-${name}`;
    const source = await engine.run<S>(fan, { token, value: 1 });
    expect(source.status, JSON.stringify(source.error)).toBe('completed');
    const records = await engine.history(source.id);
    const fanIn = records.findIndex((record) => record.merged);
    expect(fanIn).toBeGreaterThan(0);

    // After the step that fanned out, the run waited on children: no checkpoint to start from. The
    // refusal names, in history's numbering, the step that fans out: a fork from it works.
    const fanOut = records[fanIn - 1]!.step;
    expect(fanOut).toBe(fanIn - 1);
    await expect(engine.fork(source.id, { step: fanIn })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
      message: expect.stringContaining(
        `step #${fanOut} of run '${source.id}' fanned out, and from step #${fanIn} on the run waited on its children`,
      ) as unknown,
    });
    await expect(engine.fork(source.id, { step: fanIn })).rejects.toThrow(`fork from step #${fanOut} (the state just`);
    const afterFanIn = await (await engine.fork(source.id, { step: fanIn + 1 })).result();
    expect(afterFanIn.status, JSON.stringify(afterFanIn.error)).toBe('completed');
    expect(afterFanIn.shared).toEqual(source.shared);
    const beforeFanOut = await (await engine.fork(source.id, { step: fanIn - 1 })).result();
    expect(beforeFanOut.status, JSON.stringify(beforeFanOut.error)).toBe('completed');
    expect(beforeFanOut.shared).toEqual(source.shared);
  });

  it('refuses a step past the end, a patch that does not apply, and an unknown run', async () => {
    const { engine } = await setup('fork-refused', { flows });
    const source = await engine.run<S>(abcd, { token: `refused-${name}`, value: 2 });
    const refused = { code: 'INVALID_OPTION' };
    await expect(engine.fork(source.id, { step: 5 })).rejects.toMatchObject(refused);
    await expect(engine.fork(source.id, { step: 4 })).rejects.toMatchObject({
      ...refused,
      message: expect.stringContaining('fork from a step from #0 to #3') as unknown,
    }); // it had ended there
    await expect(engine.fork(source.id, { step: -1 })).rejects.toMatchObject(refused);
    await expect(
      engine.fork(source.id, { step: 2, patch: [{ op: 'remove', path: '/missing' }] }),
    ).rejects.toMatchObject(refused);
    await expect(
      engine.fork(source.id, { step: 2, patch: [{ op: 'test', path: '/value', value: 3 }] }),
    ).rejects.toMatchObject(refused);
    await expect(
      engine.fork(source.id, { step: 2, patch: [{ op: 'add', path: '/__proto__/polluted', value: 1 }] }),
    ).rejects.toMatchObject({ ...refused, message: expect.stringContaining("'__proto__'") as unknown });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // A patch that replaces the root: shared would be no object (or not the run's shared at all).
    for (const patch of [
      [{ op: 'replace', path: '', value: [1, 2] }],
      [{ op: 'add', path: '', value: { other: true } }],
      [
        { op: 'replace', path: '/value', value: 3 },
        { op: 'remove', path: '' },
      ],
      [{ op: 'copy', from: '/value', path: '' }],
    ] as NonNullable<ForkOptions['patch']>[]) {
      await expect(engine.fork(source.id, { step: 2, patch }), JSON.stringify(patch)).rejects.toMatchObject({
        ...refused,
        message: expect.stringMatching(/replaces the root of shared at operation \d/) as unknown,
      });
    }
    await expect(engine.fork('no-such-run', { step: 0 })).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' });
    expect((await engine.list()).map((run) => run.id)).toEqual([source.id]); // nothing was started
  });
});
