/**
 * LocalEngine's schedules on a fake clock: ticks are timers the test fires by moving time on,
 * so every count below is exact.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineFlow, Flow, LocalEngine, Node } from '@queueflow/runtime';
import { FakeClock } from '../conformance/fake-clock.js';
import { gate, type Gate } from '../support/node-probes.js';
import { waitFor } from '../support/wait-for.js';

type S = { token: string };
const gates = new Map<string, Gate>();

class Held extends Node<S> {
  override prep(shared: S): string {
    return shared.token;
  }
  override async exec(token: string): Promise<void> {
    await gates.get(token)?.promise;
  }
}
const held = defineFlow('held', () => new Flow(new Held({ name: 'held' })));

describe('schedules on LocalEngine', () => {
  const engines: LocalEngine[] = [];
  afterEach(async () => {
    for (const engine of engines.splice(0)) await engine.close();
  });
  const open = (): { engine: LocalEngine; clock: FakeClock } => {
    const clock = new FakeClock();
    const engine = new LocalEngine({ flows: [held], clock });
    engines.push(engine);
    return { engine, clock };
  };
  const runsOf = async (engine: LocalEngine) => (await engine.list({ flow: 'held' })).reverse();
  const settled = (engine: LocalEngine, count: number) =>
    waitFor(`${count} runs to end`, async () => {
      const runs = await runsOf(engine);
      return runs.length === count && runs.every((run) => run.status === 'completed');
    });

  it('every: 1000 starts one run at once, then one per 1000 ms of the clock', async () => {
    const { engine, clock } = open();
    await engine.schedule('each-second', held, { every: 1000 }, { token: 'free' });
    clock.advance(0);
    await settled(engine, 1);
    for (let tick = 2; tick <= 5; tick++) {
      clock.advance(1000);
      await settled(engine, tick);
    }
    const [info] = await engine.schedules();
    expect(info).toMatchObject({ name: 'each-second', flow: 'held', every: 1000, overlap: 'skip', skipped: 0 });
    expect(info?.next).toBe(clock.now() + 1000);
    expect(info?.lastRunId).toBe((await runsOf(engine)).at(-1)?.id);
    expect(await engine.unschedule('each-second')).toBe(true);
    clock.advance(5000);
    expect(await runsOf(engine)).toHaveLength(5);
    expect(await engine.schedules()).toEqual([]);
    expect(await engine.unschedule('each-second')).toBe(false);
  });

  it("skips a tick while the schedule's last run has not ended (overlap 'skip')", async () => {
    const { engine, clock } = open();
    gates.set('slow', gate());
    await engine.schedule('slow', held, { every: 1000 }, { token: 'slow' });
    clock.advance(0);
    const [first] = await waitFor('the first run', () =>
      runsOf(engine).then((runs) => (runs.length === 1 ? runs : undefined)),
    );
    clock.advance(1000);
    clock.advance(1000);
    await waitFor('two skipped ticks', async () => (await engine.schedules())[0]?.skipped === 2);
    expect(await runsOf(engine)).toHaveLength(1);
    gates.get('slow')!.open();
    expect((await engine.result(first!.id)).status).toBe('completed');
    clock.advance(1000);
    await settled(engine, 2);
    expect((await engine.schedules())[0]).toMatchObject({ skipped: 2, lastRunId: (await runsOf(engine))[1]!.id });
  });

  it("starts a run at every tick with overlap 'allow'", async () => {
    const { engine, clock } = open();
    gates.set('overlapping', gate());
    await engine.schedule('overlapping', held, { every: 1000, overlap: 'allow' }, { token: 'overlapping' });
    clock.advance(0);
    clock.advance(1000);
    clock.advance(1000);
    await waitFor('three runs', async () => (await runsOf(engine)).length === 3);
    expect((await runsOf(engine)).every((run) => run.status === 'running')).toBe(true);
    gates.get('overlapping')!.open();
    await settled(engine, 3);
  });

  it('ticks at the times a cron pattern names, in its time zone, with the params and priority given', async () => {
    const { engine, clock } = open(); // the fake clock starts at 2025-01-01T00:00:00Z
    await engine.schedule(
      'hourly',
      held,
      { cron: '30 * * * *', tz: 'Asia/Kolkata' },
      { token: 'free' },
      {
        params: { lang: 'en' },
        priority: 4,
      },
    );
    const [info] = await engine.schedules();
    // 05:30 in Kolkata (UTC+5:30) is on the hour in UTC: the first tick is at 01:00Z.
    expect(info).toMatchObject({ cron: '30 * * * *', tz: 'Asia/Kolkata', params: { lang: 'en' }, priority: 4 });
    expect(info?.next).toBe(Date.UTC(2025, 0, 1, 1));
    clock.advance(3_600_000);
    await settled(engine, 1);
    const [run] = await runsOf(engine);
    expect((await engine.get(run!.id))?.priority).toBe(4);
    expect((await engine.schedules())[0]?.next).toBe(Date.UTC(2025, 0, 1, 2));
  });

  it('replaces a schedule of the same name', async () => {
    const { engine } = open();
    await engine.schedule('same', held, { every: 1000 }, { token: 'a' });
    await engine.schedule('same', held, { every: 5000 }, { token: 'b' });
    expect(await engine.schedules()).toMatchObject([{ name: 'same', every: 5000, shared: { token: 'b' } }]);
  });

  it('refuses bad schedules with INVALID_OPTION naming the option, and unknown flows', async () => {
    const { engine } = open();
    const cases: [string, Parameters<LocalEngine['schedule']>[2], string][] = [
      ['ok', {}, '`every` or `cron` to be given, one of them and not both'],
      ['ok', { every: 1000, cron: '* * * * *' }, '`every` or `cron` to be given, one of them and not both'],
      ['ok', { every: 0 }, '`every` to be an integer number of milliseconds from 1, got 0'],
      ['ok', { cron: 'every day' }, '`cron` to be a cron pattern'],
      ['ok', { cron: '* * * * *', tz: 'Mars/Base' }, "`tz` to be an IANA time zone, got 'Mars/Base'"],
      ['ok', { every: 1000, tz: 'UTC' }, '`tz` to be given only with `cron`'],
      ['ok', { every: 1000, overlap: 'queue' as 'skip' }, "`overlap` to be 'skip' or 'allow', got 'queue'"],
      ['a:b', { every: 1000 }, '`name` to be a schedule name'],
    ];
    for (const [name, options, message] of cases) {
      await expect(engine.schedule(name, held, options, { token: 'x' })).rejects.toMatchObject({
        code: 'INVALID_OPTION',
        message: expect.stringContaining(message),
      });
    }
    await expect(engine.schedule('ok', 'nope', { every: 1000 }, {})).rejects.toMatchObject({ code: 'UNKNOWN_FLOW' });
    await expect(engine.schedule('ok', held, { every: 1000 }, { f: () => 1 } as object)).rejects.toMatchObject({
      code: 'NOT_JSON',
    });
    expect(await engine.schedules()).toEqual([]);
  });
});
