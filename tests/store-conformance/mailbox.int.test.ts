/**
 * Store conformance: mailboxes. `send` appends and wakes every run parked on the address;
 * `reserveMessage` reserves the head for receive call `ordinal` of the step the run stands at
 * (the same message again for the same ordinal); a commit that moves on consumes what the step
 * reserved and delivers what it sent, a failure gives reservations back at the head in their
 * order; `park` makes the run wait on an address (wake id `<id>-<step>-p<parkCount>`), delivering
 * the step's sends so far. A run leaves the waiters of an address once it commits, parks again or
 * ends.
 */
import { describe, expect, it } from 'vitest';
import { wakeId } from '@queueflow/runtime/kernel';
import {
  checkpoint,
  drain,
  errorRecord,
  message,
  parkOn,
  runsFanOut,
  RUNNABLE,
  stores,
  useStore,
  commitFanOut,
} from './store-harness.js';

describe.each(stores)('%s: send and mailboxSize', (name) => {
  const open = useStore(name);

  it('send appends to the address; mailboxSize counts what waits there', async () => {
    const h = await open();
    expect(await h.store.mailboxSize('inbox')).toBe(0);
    expect(await h.store.send('inbox', message('m1'))).toEqual({ wakes: [] });
    await h.store.send('inbox', message('m2'));
    await h.store.send('other', message('o1'));
    expect(await h.store.mailboxSize('inbox')).toBe(2);
    expect(await h.store.mailboxSize('other')).toBe(1);
    expect(await drain(h, 'inbox')).toEqual(['m1', 'm2']);
  });

  it('send wakes one run parked on the address per message, each once', async () => {
    const h = await open();
    const a = await parkOn(h, await h.started(), 'inbox');
    const b = await parkOn(h, await h.started(), 'inbox');
    await parkOn(h, await h.started(), 'elsewhere');

    const first = (await h.store.send('inbox', message('m1'))).wakes;
    const second = (await h.store.send('inbox', message('m2'))).wakes;
    expect(first).toHaveLength(1);
    expect([...first, ...second].sort()).toEqual([a.wake, b.wake].sort());
    expect(await h.store.send('inbox', message('m3'))).toEqual({ wakes: [] });
  });
});

describe.each(stores)('%s: reserveMessage', (name) => {
  const open = useStore(name);

  it('reserves the head of the mailbox for each receive call, in order', async () => {
    const h = await open();
    for (const id of ['m1', 'm2', 'm3']) await h.store.send('inbox', message(id));
    const run = await h.started();

    expect(await h.store.reserveMessage(run, 0, 'inbox')).toEqual(message('m1'));
    expect(await h.store.reserveMessage(run, 1, 'inbox')).toEqual(message('m2'));
    expect(await h.store.mailboxSize('inbox')).toBe(1);
  });

  it('the same receive call gets the message reserved for it before, reserving no other', async () => {
    const h = await open();
    for (const id of ['m1', 'm2']) await h.store.send('inbox', message(id));
    const run = await h.started();
    await h.store.reserveMessage(run, 0, 'inbox');

    expect(await h.store.reserveMessage(run, 0, 'inbox')).toEqual(message('m1'));
    expect(await h.store.mailboxSize('inbox')).toBe(1);
  });

  it('an empty mailbox gives undefined and reserves nothing', async () => {
    const h = await open();
    const run = await h.started();
    expect(await h.store.reserveMessage(run, 0, 'inbox')).toBeUndefined();
    await h.store.send('inbox', message('m1'));
    expect(await h.store.reserveMessage(run, 0, 'inbox')).toEqual(message('m1'));
  });

  it('is stale from a stale step counter, a stale park count, an ended or unknown run; nothing is taken', async () => {
    const h = await open();
    await h.store.send('inbox', message('m1'));

    const moved = await h.started();
    await h.store.commit(moved, 'next', { now: h.now() });
    expect(await h.store.reserveMessage(moved, 0, 'inbox')).toBe('stale');

    const parked = await h.started();
    await parkOn(h, parked, 'elsewhere');
    expect(await h.store.reserveMessage(parked, 0, 'inbox')).toBe('stale');

    const ended = await h.started();
    await h.store.commit(ended, 'completed', { checkpoint: checkpoint({}), now: h.now() });
    expect(await h.store.reserveMessage(await h.load(ended.id), 0, 'inbox')).toBe('stale');

    expect(await h.store.reserveMessage({ ...ended, id: 'ghost' }, 0, 'inbox')).toBe('stale');
    expect(await h.store.mailboxSize('inbox')).toBe(1);
  });

  it('a commit that moves on consumes what the step reserved', async () => {
    const h = await open();
    for (const id of ['m1', 'm2']) await h.store.send('inbox', message(id));
    const run = await h.started();
    await h.store.reserveMessage(run, 0, 'inbox');
    await h.store.commit(run, 'next', { now: h.now() });

    const next = await h.load(run.id);
    expect(await h.store.reserveMessage(next, 0, 'inbox')).toEqual(message('m2'));
    expect(await h.store.mailboxSize('inbox')).toBe(0);
  });

  it('a completed run consumes what its last step reserved', async () => {
    const h = await open();
    await h.store.send('inbox', message('m1'));
    const run = await h.started();
    await h.store.reserveMessage(run, 0, 'inbox');
    await h.store.commit(run, 'completed', { checkpoint: checkpoint({}), now: h.now() });
    expect(await h.store.mailboxSize('inbox')).toBe(0);
  });

  it('a retry keeps what the step reserved: the next try gets the same message', async () => {
    const h = await open();
    for (const id of ['m1', 'm2']) await h.store.send('inbox', message(id));
    const run = await h.started();
    await h.store.reserveMessage(run, 0, 'inbox');
    await h.store.commit(run, 'retry', { errorRecords: [errorRecord('try 0', { attempt: 0 })], now: h.now() });

    const retried = await h.load(run.id);
    expect(await h.store.reserveMessage(retried, 0, 'inbox')).toEqual(message('m1'));
    expect(await h.store.mailboxSize('inbox')).toBe(1);
  });

  it('a failure gives what the step reserved back, at the head of each mailbox, in order', async () => {
    const h = await open();
    for (const id of ['m1', 'm2', 'm3']) await h.store.send('inbox', message(id));
    for (const id of ['o1', 'o2']) await h.store.send('other', message(id));
    const run = await h.started();
    await h.store.reserveMessage(run, 0, 'inbox');
    await h.store.reserveMessage(run, 1, 'other');
    await h.store.reserveMessage(run, 2, 'inbox');

    await h.store.commit(run, 'failed', { errorRecords: [errorRecord('x')], runError: { message: 'x' }, now: h.now() });
    expect(await drain(h, 'inbox')).toEqual(['m1', 'm2', 'm3']);
    expect(await drain(h, 'other')).toEqual(['o1', 'o2']);
  });

  it('a step that parked and woke gets the message it reserved before the park', async () => {
    const h = await open();
    for (const id of ['m1', 'm2']) await h.store.send('inbox', message(id));
    const run = await h.started();
    await h.store.reserveMessage(run, 0, 'inbox');
    const parked = await parkOn(h, run, 'replies');

    expect(await h.store.reserveMessage(parked.run, 0, 'inbox')).toEqual(message('m1'));
    expect(await h.store.mailboxSize('inbox')).toBe(1);
  });
});

describe.each(stores)('%s: loadForStep of a wake', (name) => {
  const open = useStore(name);

  it("reserves the parked receive's message and returns it with those reserved before", async () => {
    const h = await open();
    for (const id of ['m1', 'm2']) await h.store.send('inbox', message(id));
    const run = await h.started();
    await h.store.reserveMessage(run, 0, 'inbox');
    const park = { ordinal: 1, address: 'replies', deadline: null };
    const reply = await h.store.park(run, park, { sent: 0, parked: park }, []);
    await h.store.send('replies', message('r1'));
    await h.store.send('replies', message('r2'));

    const woken = await h.store.loadForStep(run.id, RUNNABLE, reply.parkCount);
    expect(woken?.reserved).toEqual(
      new Map([
        [0, message('m1')],
        [1, message('r1')],
      ]),
    );
    const { reserved: _reserved, ...record } = woken!;
    // The step, run again, meets the same messages (reserved once: r2 still waits).
    expect(await h.store.reserveMessage(record, 1, 'replies')).toEqual(message('r1'));
    expect(await h.store.loadForStep(run.id, RUNNABLE, reply.parkCount)).toMatchObject({ reserved: woken!.reserved });
    expect(await drain(h, 'replies')).toEqual(['r2']);
  });

  it('reserves nothing for a stale wake, a run not parked, or without a wake', async () => {
    const h = await open();
    await h.store.send('replies', message('r1'));
    const run = await h.started();
    const park = { ordinal: 0, address: 'replies', deadline: null };
    const reply = await h.store.park(run, park, { sent: 0, parked: park }, []);

    expect((await h.store.loadForStep(run.id, RUNNABLE, reply.parkCount + 1))?.reserved).toBeUndefined();
    expect((await h.store.loadForStep(run.id, RUNNABLE))?.reserved).toBeUndefined();
    expect(await h.store.mailboxSize('replies')).toBe(1);
    const other = await h.started();
    expect((await h.store.loadForStep(other.id, RUNNABLE, 1))?.reserved).toBeUndefined();
    expect(await h.store.mailboxSize('replies')).toBe(1);
  });
});

describe.each(stores)('%s: a worker takes a run it wakes (takenBy)', (name) => {
  const open = useStore(name);

  it('a commit takes the first run it wakes: in `taken`, not in `wakes`, kept until released', async () => {
    const h = await open();
    const a = await parkOn(h, await h.started(), 'inbox');
    const b = await parkOn(h, await h.started(), 'inbox');
    const sender = await h.started();
    const reply = await h.store.commit(sender, 'next', {
      outbox: [
        { address: 'inbox', message: message('m1') },
        { address: 'inbox', message: message('m2') },
      ],
      takenBy: 'worker-1',
      now: h.now(),
    });
    expect(reply.taken).toEqual(expect.any(String));
    expect([reply.taken, ...reply.wakes].sort()).toEqual([a.wake, b.wake].sort());
    expect(reply.wakes).toHaveLength(1);
    expect(await h.store.claimTaken('worker-2')).toEqual([]);
    await h.store.releaseTaken('worker-1', ['not-taken']);
    expect(await h.store.claimTaken('worker-1')).toEqual([reply.taken]);
    expect(await h.store.claimTaken('worker-1')).toEqual([]);
  });

  it('a park takes the first run its sends wake; a released wake is not claimed', async () => {
    const h = await open();
    const waiting = await parkOn(h, await h.started(), 'questions');
    const asker = await h.started();
    const park = { ordinal: 0, address: 'answers', deadline: null };
    const reply = await h.store.park(
      asker,
      park,
      { sent: 1, parked: park },
      [{ address: 'questions', message: message('q1') }],
      'worker-1',
    );
    expect(reply).toMatchObject({ result: 'committed', wakes: [], taken: waiting.wake });
    await h.store.releaseTaken('worker-1', [waiting.wake]);
    expect(await h.store.claimTaken('worker-1')).toEqual([]);
  });

  it('takes nothing without takenBy, or when nothing wakes', async () => {
    const h = await open();
    const parked = await parkOn(h, await h.started(), 'inbox');
    const quiet = await h.store.commit(await h.started(), 'next', { takenBy: 'worker-1', now: h.now() });
    expect(quiet.taken).toBeUndefined();
    const reply = await h.store.commit(await h.started(), 'next', {
      outbox: [{ address: 'inbox', message: message('m1') }],
      now: h.now(),
    });
    expect(reply).toMatchObject({ wakes: [parked.wake] });
    expect(reply.taken).toBeUndefined();
    expect(await h.store.claimTaken('worker-1')).toEqual([]);
  });
});

describe.each(stores)('%s: park', (name) => {
  const open = useStore(name);

  it('parks the run: waiting, the park counted, its replay kept', async () => {
    const h = await open();
    const run = await h.started();
    const park = { ordinal: 1, address: 'replies', deadline: Date.UTC(2030, 0, 1) };
    const replay = { sent: 2, parked: park, timedOut: [0] };

    expect(await h.store.park(run, park, replay, [])).toEqual({
      result: 'committed',
      parkCount: 1,
      ready: false,
      wakes: [],
    });
    const parked = await h.load(run.id);
    expect(parked).toMatchObject({ status: 'waiting', step: 0, parkCount: 1, replay, checkpoint: run.checkpoint });
    expect(parked.updatedAt).toEqual(expect.any(Number));
  });

  it('is ready at once when a message already waits at the address', async () => {
    const h = await open();
    await h.store.send('replies', message('early'));
    const run = await h.started();
    const reply = await h.store.park(run, { ordinal: 0, address: 'replies', deadline: null }, { sent: 0 }, []);
    expect(reply).toMatchObject({ result: 'committed', ready: true });
  });

  it('is ready at once when its own sends went to the address it waits on', async () => {
    const h = await open();
    const run = await h.started();
    const park = { ordinal: 0, address: 'loop', deadline: null };
    const reply = await h.store.park(run, park, { sent: 1, parked: park }, [
      { address: 'loop', message: message('to myself') },
    ]);
    expect(reply).toEqual({ result: 'committed', parkCount: 1, ready: true, wakes: [] });
  });

  it("delivers the step's sends so far and wakes the runs parked where they go", async () => {
    const h = await open();
    const waiter = await parkOn(h, await h.started(), 'questions');
    const asker = await h.started();

    const reply = await h.store.park(asker, { ordinal: 0, address: 'answers', deadline: null }, { sent: 1 }, [
      { address: 'questions', message: message('q1') },
    ]);
    expect(reply.wakes).toEqual([waiter.wake]);
    expect(await h.store.mailboxSize('questions')).toBe(1);
  });

  it('a step that parks again counts the park: wake ids differ, the older park is stale', async () => {
    const h = await open();
    const run = await h.started();
    const first = await parkOn(h, run, 'replies');
    const second = await parkOn(h, first.run, 'replies');
    expect(second.run.parkCount).toBe(2);
    expect(second.wake).toBe(wakeId(run.id, 0, 2));
    expect(second.wake).not.toBe(first.wake);

    const stale = await h.store.park(first.run, { ordinal: 0, address: 'replies', deadline: null }, { sent: 0 }, []);
    expect(stale).toEqual({ result: 'stale', parkCount: 0, ready: false, wakes: [] });
  });

  it('is stale from a stale step counter or an ended run; missing for an unknown run', async () => {
    const h = await open();
    const park = { ordinal: 0, address: 'replies', deadline: null };
    const run = await h.started();
    await h.store.commit(run, 'next', { now: h.now() });
    expect((await h.store.park(run, park, { sent: 0 }, [])).result).toBe('stale');

    const next = await h.load(run.id);
    await h.store.commit(next, 'completed', { checkpoint: checkpoint({}), now: h.now() });
    const ended = await h.load(run.id);
    expect((await h.store.park(ended, park, { sent: 0 }, [])).result).toBe('stale');
    expect(ended.parkCount).toBe(0);

    expect(await h.store.park({ ...ended, id: 'ghost' }, park, { sent: 0 }, [])).toEqual({
      result: 'missing',
      parkCount: 0,
      ready: false,
      wakes: [],
    });
  });

  it('the woken step commits from its new position; the commit resets the replay', async () => {
    const h = await open();
    const run = await h.started();
    await h.store.park(run, { ordinal: 0, address: 'replies', deadline: null }, { sent: 1 }, []);
    const woken = await h.load(run.id);

    const reply = await h.store.commit(woken, 'next', { checkpoint: checkpoint({ got: 1 }), now: h.now() });
    expect(reply.result).toBe('committed');
    expect(await h.load(run.id)).toMatchObject({ status: 'running', step: 1, parkCount: 1, replay: { sent: 0 } });
  });
});

describe.each(stores)('%s: waiters', (name) => {
  const open = useStore(name);

  it.each(['next', 'completed'] as const)(
    'a %s commit delivers its sends and wakes the runs parked there',
    async (mode) => {
      const h = await open();
      const waiter = await parkOn(h, await h.started(), 'inbox');
      const sender = await h.started();

      const reply = await h.store.commit(sender, mode, {
        checkpoint: checkpoint({}),
        outbox: [
          { address: 'inbox', message: message('m1') },
          { address: 'inbox', message: message('m2') },
          { address: 'log', message: message('l1') },
        ],
        now: h.now(),
      });
      expect(reply).toEqual({ result: 'committed', wakes: [waiter.wake] });
      expect(await drain(h, 'inbox')).toEqual(['m1', 'm2']);
      expect(await h.store.mailboxSize('log')).toBe(1);
    },
  );

  it.each(['retry', 'failed'] as const)("a %s commit drops the step's sends and wakes no one", async (mode) => {
    const h = await open();
    await parkOn(h, await h.started(), 'inbox');
    const sender = await h.started();
    const reply = await h.store.commit(sender, mode, {
      outbox: [{ address: 'inbox', message: message('m1') }],
      errorRecords: [errorRecord('x', { attempt: 0 })],
      runError: { message: 'x' },
      now: h.now(),
    });
    expect(reply).toEqual({ result: 'committed', wakes: [] });
    expect(await h.store.mailboxSize('inbox')).toBe(0);
  });

  it('messages given back by a failure wake the runs parked on their address', async () => {
    const h = await open();
    await h.store.send('inbox', message('m1'));
    const holder = await h.started();
    await h.store.reserveMessage(holder, 0, 'inbox');
    const waiter = await parkOn(h, await h.started(), 'inbox');

    const reply = await h.store.commit(holder, 'failed', { runError: { message: 'x' }, now: h.now() });
    expect(reply).toEqual({ result: 'committed', wakes: [waiter.wake] });
  });

  it('a parked run that commits leaves the waiters of its address', async () => {
    const h = await open();
    const parked = await parkOn(h, await h.started(), 'inbox');
    await h.store.commit(parked.run, 'next', { now: h.now() });
    expect(await h.store.send('inbox', message('m1'))).toEqual({ wakes: [] });
  });

  it('a parked run that parks again elsewhere leaves the waiters of the first address', async () => {
    const h = await open();
    const first = await parkOn(h, await h.started(), 'first');
    const second = await parkOn(h, first.run, 'second');
    expect(await h.store.send('first', message('m1'))).toEqual({ wakes: [] });
    expect(await h.store.send('second', message('m2'))).toEqual({ wakes: [second.wake] });
  });

  it('a parked run that fans out leaves the waiters of its address', async () => {
    const h = await open();
    const parked = await parkOn(h, await h.started(), 'inbox');
    await commitFanOut(h, parked.run, runsFanOut(h, { total: 1 }));
    expect(await h.store.send('inbox', message('m1'))).toEqual({ wakes: [] });
  });
});
