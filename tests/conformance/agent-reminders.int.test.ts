/**
 * Contract: reminders of keyed agents (README "Agents"). A turn sets a reminder with
 * `this.remind(name, …)`; the agent later gets a message with `reminder: name` and the reminder's
 * body. The same name replaces the earlier reminder, `every` repeats until `cancelReminder`, and
 * reminders are set with the step's commit (none from a turn that fails). Missed ticks are in the
 * store conformance (tests/store-conformance/agents.int.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { defineAgent, Node, type JsonObject, type ReminderOptions } from '@queueflow/runtime';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

interface Alarm extends JsonObject {
  rang: { name: string; body: JsonObject | null }[];
}

type Order =
  { set: string; options: ReminderOptions; fail?: boolean } | { cancel: string } | { stopAfter: number; name: string };

/** Sets and cancels reminders as its messages say, and records the reminders that ring. */
class Clockwork extends Node<Alarm> {
  override prep(shared: Alarm): undefined {
    const message = this.message!;
    if (message.reminder !== undefined) {
      shared.rang.push({ name: message.reminder, body: message.body as JsonObject | null });
      const stop = shared.rang.filter((ring) => ring.name === message.reminder).length;
      const limit = (message.body as { stopAfter?: number } | null)?.stopAfter;
      if (limit !== undefined && stop >= limit) this.cancelReminder(message.reminder);
      return undefined;
    }
    const order = message.body as Order;
    if ('set' in order) {
      this.remind(order.set, order.options);
      if (order.fail) throw new Error('the turn fails after setting its reminder');
    }
    if ('cancel' in order) this.cancelReminder(order.cancel);
    return undefined;
  }
}
const alarm = defineAgent<Alarm>('alarm', {
  state: () => ({ rang: [] }),
  turn: () => new Clockwork({ name: 'clockwork', maxRetries: 1 }),
});
const agents = [alarm];

describe.each(engines)('%s: agent reminders', (name) => {
  const setup = useEngine(name);

  it('rings once with its body after afterMs, and is gone', async () => {
    const { engine } = await setup('reminders-once', { flows: [], agents, autoAdvance: true });
    const ref = alarm.ref('once');
    await engine.send(ref, { set: 'wake', options: { afterMs: 150, body: { say: 'hi' } } });
    await waitFor(
      'the reminder to ring',
      async () => ((await engine.agent(ref))?.state as Alarm | undefined)?.rang.length === 1,
    );
    expect((await engine.agent(ref))!.state).toEqual({ rang: [{ name: 'wake', body: { say: 'hi' } }] });
    await waitFor('its turn to end', async () => (await engine.agent(ref))?.turns === 2);
    expect((await engine.agent(ref))!.reminders).toEqual([]);
  });

  it('replaces a reminder of the same name and lists the pending ones', async () => {
    const { engine } = await setup('reminders-replace', { flows: [], agents, autoAdvance: false });
    const ref = alarm.ref('replace');
    await engine.send(ref, { set: 'a', options: { afterMs: 3_600_000 } });
    await engine.send(ref, { set: 'b', options: { afterMs: 7_200_000, every: 60_000 } });
    await engine.send(ref, { set: 'a', options: { afterMs: 600_000 } });
    await waitFor('three turns', async () => (await engine.agent(ref))?.turns === 3);
    const reminders = (await engine.agent(ref))!.reminders;
    expect(reminders.map((reminder) => reminder.name)).toEqual(['a', 'b']);
    expect(reminders[1]!.every).toBe(60_000);
    expect(reminders[1]!.due - reminders[0]!.due).toBeGreaterThan(6_000_000);
    await engine.send(ref, { cancel: 'b' });
    await waitFor('the cancel', async () => (await engine.agent(ref))?.reminders.length === 1);
  });

  it('repeats every period until the turn cancels it', async () => {
    const { engine } = await setup('reminders-every', { flows: [], agents, autoAdvance: true });
    const ref = alarm.ref('every');
    await engine.send(ref, { set: 'tick', options: { every: 40, body: { stopAfter: 3 } } });
    // The third tick's turn cancels it. A tick that fired while that turn ran was in the inbox
    // already and is handled after it (a busy machine's turn can outlast a 40 ms period); none
    // fires after the cancel commits: the reminder is gone and the inbox drains.
    const info = await waitFor('three ticks and the cancel', async () => {
      const agent = await engine.agent(ref);
      const rang = (agent?.state as Alarm | undefined)?.rang.length ?? 0;
      return rang >= 3 && agent!.reminders.length === 0 && !agent!.running && agent!.inbox === 0 ? agent : undefined;
    });
    const names = (info.state as Alarm).rang.map((ring) => ring.name);
    expect(names.slice(0, 3)).toEqual(['tick', 'tick', 'tick']);
    expect(new Set(names)).toEqual(new Set(['tick']));
  });

  it('sets nothing from a turn that fails, and refuses a bad reminder', async () => {
    const { engine } = await setup('reminders-failed', { flows: [], agents, autoAdvance: true });
    const ref = alarm.ref('failed');
    await engine.send(ref, { set: 'never', options: { afterMs: 60_000 }, fail: true });
    await engine.send(ref, { set: 'bad name', options: { afterMs: 10 } });
    await engine.send(ref, { set: 'bad', options: { every: 0 } });
    await waitFor('three dead letters', async () => (await engine.agent(ref))?.failed.length === 3);
    const info = (await engine.agent(ref))!;
    expect(info.reminders).toEqual([]);
    expect(info.failed[1]!.error).toMatchObject({ code: 'INVALID_OPTION' });
    expect(info.failed[2]!.error.message).toMatch(/every/);
  });
});
