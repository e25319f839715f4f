/**
 * Store conformance: the agent store's transitions (agent-store.ts), the same specs on every
 * store. A key's inbox is the mailbox at its address, written with `store.send`.
 */
import { describe, expect, it } from 'vitest';
import { message, stores, useStore } from './store-harness.js';

const REF = 'agent:tally/k1';
const first = (incarnation = 'inc1') => ({ state: '{"n":0}', version: 1, incarnation });

describe.each(stores)('%s: agents', (name) => {
  const open = useStore(name);

  it('activates nothing for an empty inbox, and writes nothing', async () => {
    const { agents, now } = await open();
    expect(await agents.activateAgent(REF, first(), now())).toBeUndefined();
    expect(await agents.loadAgent(REF)).toBeUndefined();
  });

  it("activates a key by its first message: its first state, turn 1, the head as the turn's message; once", async () => {
    const { agents, store, now } = await open();
    await store.send(REF, message('m1'));
    await store.send(REF, message('m2'));
    const activation = await agents.activateAgent(REF, first(), now());
    expect(activation).toEqual({ runId: 'inc1t1', turn: 1, state: '{"n":0}', version: 1, message: message('m1') });
    expect(await agents.activateAgent(REF, first('other'), now())).toBeUndefined(); // a turn runs
    expect(await agents.loadAgent(REF)).toMatchObject({
      type: 'tally',
      key: 'k1',
      state: '{"n":0}',
      turns: 0,
      started: 1,
      incarnation: 'inc1',
      running: 'inc1t1',
      inbox: 2,
      next: message('m1'),
      failed: [],
    });
  });

  it('send appends to the inbox and starts the turn of an idle key in the same transition; not of a running one', async () => {
    const { agents, now } = await open();
    expect(await agents.send([{ ref: REF, first: first() }], message('m1'), now())).toEqual([
      { wakes: [], activation: { runId: 'inc1t1', turn: 1, state: '{"n":0}', version: 1, message: message('m1') } },
    ]);
    expect(await agents.send([{ ref: REF, first: first('other') }], message('m2'), now())).toEqual([{ wakes: [] }]);
    expect(await agents.loadAgent(REF)).toMatchObject({ incarnation: 'inc1', running: 'inc1t1', inbox: 2 });
  });

  it('send to many agents: one transition each, replies in their order', async () => {
    const { agents, now } = await open();
    const [busy, idle, unknown] = ['agent:tally/busy', 'agent:tally/idle', 'agent:tally/unknown'];
    await agents.send([{ ref: busy, first: first('busy') }], message('m0'), now());
    const replies = await agents.send(
      [
        { ref: busy, first: first('other') },
        { ref: idle, first: first('idle') },
        { ref: unknown, first: undefined },
      ],
      message('m1'),
      now(),
    );
    expect(replies).toEqual([
      { wakes: [] },
      { wakes: [], activation: { runId: 'idlet1', turn: 1, state: '{"n":0}', version: 1, message: message('m1') } },
      { wakes: [] },
    ]);
    expect(await agents.loadAgent(busy)).toMatchObject({ running: 'busyt1', inbox: 2, next: message('m0') });
    expect(await agents.loadAgent(idle)).toMatchObject({ running: 'idlet1', inbox: 1 });
    expect(await agents.loadAgent(unknown)).toBeUndefined();
  });

  it('send without a first state (a process without the type) starts nothing', async () => {
    const { agents, now } = await open();
    expect(await agents.send([{ ref: REF, first: undefined }], message('m1'), now())).toEqual([{ wakes: [] }]);
    expect(await agents.loadAgent(REF)).toBeUndefined();
    // A process with the type starts it (on Redis, from the inboxes due: AgentRuntime.recover).
    expect((await agents.activateAgent(REF, first(), now()))?.message).toEqual(message('m1'));
  });

  it('ends a completed turn: commits the state, takes its message, starts the next turn in the same transition', async () => {
    const { agents, store, now } = await open();
    await store.send(REF, message('m1'));
    await store.send(REF, message('m2'));
    await agents.activateAgent(REF, first(), now());
    const at = now();
    const ended = await agents.endTurn(REF, {
      runId: 'inc1t1',
      status: 'completed',
      messageId: 'm1',
      state: '{"n":1}',
      version: 1,
      now: at,
    });
    expect(ended).toEqual({
      result: 'ended',
      next: { runId: 'inc1t2', turn: 2, state: '{"n":1}', version: 1, message: message('m2') },
    });
    expect(
      await agents.endTurn(REF, {
        runId: 'inc1t1',
        status: 'completed',
        messageId: 'm1',
        state: '{"n":9}',
        now: now(),
      }),
    ).toEqual({
      result: 'stale',
    });
    expect(
      await agents.endTurn(REF, {
        runId: 'inc1t2',
        status: 'completed',
        messageId: 'm2',
        state: '{"n":2}',
        version: 1,
        now: at,
      }),
    ).toEqual({
      result: 'ended',
    });
    expect(await agents.loadAgent(REF)).toMatchObject({
      state: '{"n":2}',
      turns: 2,
      started: 2,
      inbox: 0,
      lastTurnAt: at,
    });
    expect((await agents.loadAgent(REF))!.running).toBeUndefined();
    expect(await store.mailboxSize(REF)).toBe(0);
  });

  it('moves the message of a failed turn to the dead letters, keeps the state; redeliver puts it back at the end of the inbox', async () => {
    const { agents, store, now } = await open();
    await store.send(REF, message('m1'));
    await store.send(REF, message('m2'));
    await agents.activateAgent(REF, first(), now());
    const at = now();
    const error = { message: 'boom', code: 'NODE_FAILED' };
    const ended = await agents.endTurn(REF, { runId: 'inc1t1', status: 'failed', messageId: 'm1', error, now: at });
    expect(ended.next?.message).toEqual(message('m2'));
    const agent = (await agents.loadAgent(REF))!;
    expect(agent).toMatchObject({ state: '{"n":0}', turns: 0, inbox: 1 });
    expect(agent.failed).toEqual([{ message: message('m1'), error, runId: 'inc1t1', at }]);
    expect(await agents.redeliver(REF, 'nope')).toBe(false);
    expect(await agents.redeliver(REF, 'm1')).toBe(true);
    expect(await agents.redeliver(REF, 'm1')).toBe(false);
    expect((await store.mailboxes(10)).find((box) => box.address === REF)?.messages.map((m) => m.id)).toEqual([
      'm2',
      'm1',
    ]);
    expect((await agents.loadAgent(REF))!.failed).toEqual([]);
  });

  it('lists keys by address, of one type, a page at a time', async () => {
    const { agents, store, now } = await open();
    for (const ref of ['agent:tally/b', 'agent:tally/a', 'agent:other/z', 'agent:tally/c']) {
      await store.send(ref, message(`m-${ref}`));
      await agents.activateAgent(ref, first(), now());
    }
    const page = await agents.listAgents({ type: 'tally', limit: 2 });
    expect(page).toEqual({ refs: ['agent:tally/a', 'agent:tally/b'], cursor: 'agent:tally/b' });
    expect(await agents.listAgents({ type: 'tally', limit: 2, cursor: page.cursor! })).toEqual({
      refs: ['agent:tally/c'],
    });
    expect((await agents.listAgents({ limit: 10 })).refs).toEqual([
      'agent:other/z',
      'agent:tally/a',
      'agent:tally/b',
      'agent:tally/c',
    ]);
  });

  it('deletes a key with its inbox, naming the turn that ran', async () => {
    const { agents, store, now } = await open();
    await store.send(REF, message('m1'));
    await agents.activateAgent(REF, first(), now());
    expect(await agents.deleteAgent(REF)).toEqual({ running: 'inc1t1' });
    expect(await agents.loadAgent(REF)).toBeUndefined();
    expect(await store.mailboxSize(REF)).toBe(0);
    expect(await agents.deleteAgent(REF)).toBe(false);
    expect((await agents.listAgents({ limit: 10 })).refs).toEqual([]);
  });

  it('awaits a message at an address: one sent meanwhile, or undefined after the timeout', async () => {
    const { agents, store } = await open();
    const waiting = agents.awaitMessage('reply:x', 5000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await store.send('reply:x', message('answer'));
    expect(await waiting).toEqual(message('answer'));
    expect(await agents.awaitMessage('reply:x', 100)).toBeUndefined();
  });

  describe('reminders', () => {
    const reminder = (due: number, extra: { every?: number; missed?: 'skip' | 'once' } = {}) => ({
      due,
      body: { n: 1.5, big: 1234567890.123456 },
      missed: extra.missed ?? ('once' as const),
      ...(extra.every === undefined ? {} : { every: extra.every }),
    });

    it('fires a due reminder into its inbox once, with its body as sent, and drops it', async () => {
      const { agents, store, now } = await open();
      const at = now();
      await agents.changeReminders(REF, [{ name: 'wake', reminder: reminder(at + 1000) }]);
      expect(await agents.fireReminders(at, 100)).toEqual({ delivered: [], next: at + 1000 });
      expect(await agents.fireReminders(at + 1000, 100)).toEqual({ delivered: [REF] });
      expect(await agents.fireReminders(at + 2000, 100)).toEqual({ delivered: [] });
      expect(await store.mailboxSize(REF)).toBe(1);
      const activation = await agents.activateAgent(REF, first(), at + 1000);
      expect(activation!.message).toEqual({
        id: `r.wake.${at + 1000}`,
        body: { n: 1.5, big: 1234567890.123456 },
        sentAt: at + 1000,
        reminder: 'wake',
      });
    });

    it('replaces a reminder of the same name, cancels one, and lists them', async () => {
      const { agents, store, now } = await open();
      const at = now();
      await store.send(REF, message('m1'));
      await agents.activateAgent(REF, first(), at);
      await agents.changeReminders(REF, [
        { name: 'a', reminder: reminder(at + 5000) },
        { name: 'b', reminder: reminder(at + 3000, { every: 1000 }) },
        { name: 'a', reminder: reminder(at + 2000) },
      ]);
      expect((await agents.loadAgent(REF))!.reminders).toEqual([
        { name: 'a', due: at + 2000 },
        { name: 'b', due: at + 3000, every: 1000 },
      ]);
      await agents.changeReminders(REF, [{ name: 'b', cancel: true }]);
      expect((await agents.loadAgent(REF))!.reminders).toEqual([{ name: 'a', due: at + 2000 }]);
      expect(await agents.fireReminders(at + 10_000, 100)).toEqual({ delivered: [REF] });
    });

    it('repeats every period; missed ticks are delivered once or skipped, never one by one', async () => {
      const { agents, store, now } = await open();
      const at = now();
      const other = 'agent:tally/k2';
      await agents.changeReminders(REF, [{ name: 'tick', reminder: reminder(at, { every: 1000 }) }]);
      await agents.changeReminders(other, [{ name: 'tick', reminder: reminder(at, { every: 1000, missed: 'skip' }) }]);
      expect((await agents.fireReminders(at + 10, 100)).delivered.sort()).toEqual([REF, other]);
      // Ten periods later: 'once' delivers one message, 'skip' none; both are due on the next tick.
      expect(await agents.fireReminders(at + 10_500, 100)).toEqual({ delivered: [REF], next: at + 11_000 });
      expect(await store.mailboxSize(REF)).toBe(2);
      expect(await store.mailboxSize(other)).toBe(1);
      expect((await agents.fireReminders(at + 11_000, 100)).delivered.sort()).toEqual([REF, other].sort());
    });

    it('fires at most `limit` at a time (earliest first within a partition)', async () => {
      const { agents, now } = await open();
      const at = now();
      for (let i = 0; i < 5; i++)
        await agents.changeReminders(`agent:tally/k${i}`, [{ name: 'r', reminder: reminder(at + 10 * (5 - i)) }]);
      const first = await agents.fireReminders(at + 100, 2);
      expect(first.delivered).toHaveLength(2);
      expect(first.next).toBeLessThanOrEqual(at + 100); // more are due now
      const rest = await agents.fireReminders(at + 100, 100);
      expect([...first.delivered, ...rest.delivered].sort()).toEqual([0, 1, 2, 3, 4].map((i) => `agent:tally/k${i}`));
    });

    it('deletes the reminders of a deleted key', async () => {
      const { agents, store, now } = await open();
      const at = now();
      await store.send(REF, message('m1'));
      await agents.activateAgent(REF, first(), at);
      await agents.changeReminders(REF, [{ name: 'a', reminder: reminder(at + 10) }]);
      await agents.deleteAgent(REF);
      expect(await agents.fireReminders(at + 100, 100)).toEqual({ delivered: [] });
      expect(await store.mailboxSize(REF)).toBe(0);
    });
  });
});
