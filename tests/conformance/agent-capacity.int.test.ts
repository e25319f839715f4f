/**
 * Contract: bounded inboxes (README "Agents", `capacity` and `onFull`). A send from a step to an
 * agent whose inbox holds its type's `capacity` messages (counting the step's own sends to it not
 * yet delivered) throws `MAILBOX_FULL` with `onFull: 'reject'`; with `'park'` the sending run
 * parks, holding no worker, and sends once the inbox has room. Sends made before the park leave
 * once, and the message handled by a turn counts until the turn ends.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  defineAgent,
  defineFlow,
  Flow,
  Node,
  QueueflowError,
  type AgentDefinition,
  type JsonObject,
} from '@queueflow/runtime';
import { gate, type Gate } from '../support/node-probes.js';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine, type EngineHarness } from './engine-harness.js';

/** Turns of `held:<key>` agents wait on the gate of their key (a token per test). */
const gates = new Map<string, Gate>();

interface Got extends JsonObject {
  got: number[];
}

/** Waits on its key's gate, then records the message's `n`. */
class HoldThenRecord extends Node<Got> {
  override async exec(): Promise<void> {
    await gates.get(this.agentKey!)?.promise;
  }
  override post(shared: Got): undefined {
    shared.got.push((this.message!.body as { n: number }).n);
    return undefined;
  }
}

const parking = defineAgent<Got>('cap-park', {
  state: () => ({ got: [] }),
  turn: () => new HoldThenRecord({ name: 'hold' }),
  capacity: 1,
  onFull: 'park',
});
const strict = defineAgent<Got>('cap-reject', {
  state: () => ({ got: [] }),
  turn: () => new HoldThenRecord({ name: 'hold' }),
  capacity: 1,
  onFull: 'reject',
});

interface Sends extends JsonObject {
  sends: { to: string; n: number }[];
  refused: number[];
}

/** Sends each of `shared.sends` in turn, noting those refused with `MAILBOX_FULL`. */
class SendAll extends Node<Sends> {
  override async prep(shared: Sends): Promise<void> {
    for (const { to, n } of shared.sends) {
      try {
        await this.send(to, { n });
      } catch (error) {
        if (!(error instanceof QueueflowError) || error.code !== 'MAILBOX_FULL') throw error;
        shared.refused.push(n);
      }
    }
  }
}
const feeder = defineFlow('cap-feeder', () => new Flow(new SendAll({ name: 'send-all' })));

/** An agent whose turn does what `SendAll` does, with the sends its message names. */
const caller = defineAgent<Sends>('cap-caller', {
  state: () => ({ sends: [], refused: [] }),
  turn: () => {
    class Take extends Node<Sends> {
      override prep(shared: Sends): undefined {
        shared.sends = (this.message!.body as { sends: Sends['sends'] }).sends;
        return undefined;
      }
    }
    const take = new Take({ name: 'take' });
    take.next(new SendAll({ name: 'send-all' }));
    return new Flow(take);
  },
});

const agents: AgentDefinition<any>[] = [parking, strict, caller];

/** Opens a closed gate for agent key `key` (its turns hold until `open`). */
function hold(key: string): Gate {
  const held = gate();
  gates.set(key, held);
  return held;
}

/** Lets time pass until `ref` has taken `turns` turns (LocalEngine's clock moves on by hand). */
async function untilTurns(harness: EngineHarness, ref: string, turns: number): Promise<void> {
  await waitFor(`${turns} turn(s) of '${ref}'`, async () => {
    await harness.advance(300);
    return (await harness.engine.agent(ref))?.turns === turns;
  });
}

describe.each(engines)('%s: bounded inboxes', (name) => {
  const setup = useEngine(name);
  afterEach(() => {
    for (const held of gates.values()) held.open(); // no turn left holding when the engine closes
    gates.clear();
  });

  it("refuses a step's send past the capacity, counting the step's own sends to it", async () => {
    const harness = await setup('cap-reject-run', { flows: [feeder], agents });
    const key = `r-${name}`;
    const ref = strict.ref(key);
    const held = hold(key);
    const sends = [1, 2, 3].map((n) => ({ to: ref, n }));
    const info = await harness.engine.run(feeder, { sends, refused: [] });
    expect(info.status).toBe('completed');
    expect((info.shared as Sends).refused).toEqual([2, 3]); // 1 was still in the step's outbox
    // On a cluster the message reaches the agent's partition as a hand-off, a moment later.
    await waitFor('the message in the inbox', async () => (await harness.engine.agent(ref))?.inbox === 1);
    held.open();
    await untilTurns(harness, ref, 1);
    expect((await harness.engine.agent(ref))!.state).toEqual({ got: [1] });
  });

  it("refuses a turn's send to a full inbox: the turn sees MAILBOX_FULL", async () => {
    const harness = await setup('cap-reject-turn', { flows: [], agents });
    const key = `t-${name}`;
    const ref = strict.ref(key);
    const held = hold(key);
    await harness.engine.send(ref, { n: 1 });
    await waitFor('its turn to hold the message', async () => (await harness.engine.agent(ref))?.running !== undefined);
    const from = caller.ref(`c-${name}`);
    await harness.engine.send(from, { sends: [{ to: ref, n: 2 }] });
    await untilTurns(harness, from, 1);
    expect((await harness.engine.agent(from))!.state).toMatchObject({ refused: [2] });
    expect((await harness.engine.agent(ref))!.inbox).toBe(1);
    held.open();
    await untilTurns(harness, ref, 1);
    expect((await harness.engine.agent(ref))!.state).toEqual({ got: [1] });
  });

  it("parks a step sending to a full 'park' inbox until there is room; earlier sends leave once", async () => {
    const harness = await setup('cap-park', { flows: [feeder], agents });
    const { engine } = harness;
    const key = `p-${name}`;
    const ref = parking.ref(key);
    const other = parking.ref(`${key}-other`);
    const held = hold(key);
    await engine.send(ref, { n: 1 });
    await waitFor('its turn to hold the message', async () => (await engine.agent(ref))?.running !== undefined);
    expect(await engine.agent(ref)).toMatchObject({ inbox: 1, capacity: 1 }); // full
    // Full: a plain send from outside is refused, as with 'reject'.
    await expect(engine.send(ref, { n: 0 })).rejects.toMatchObject({ code: 'MAILBOX_FULL' });
    const { id: runId } = await engine.start(feeder, {
      sends: [
        { to: other, n: 10 },
        { to: ref, n: 2 },
      ],
      refused: [],
    });
    await harness.until(runId, 'the run to park for room', (info) => info.status === 'waiting');
    await harness.advance(600); // looks again twice: still full, still parked
    expect((await engine.get(runId))!.status).toBe('waiting');
    expect((await engine.agent(ref))!.inbox).toBe(1);
    held.open();
    await untilTurns(harness, ref, 2);
    const done = await harness.until(runId, 'the run to end', (info) => info.status === 'completed');
    expect((done.shared as Sends).refused).toEqual([]);
    expect((await engine.agent(ref))!.state).toEqual({ got: [1, 2] });
    // The send made before the park left with the park, and not again when the step ran again.
    await untilTurns(harness, other, 1);
    expect((await engine.agent(other))!.state).toEqual({ got: [10] });
    expect((await engine.agent(other))!.inbox).toBe(0);
  });
});
