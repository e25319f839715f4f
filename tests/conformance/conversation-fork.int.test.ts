/**
 * Contract: forking a conversation (README "Conversations", `engine.forkConversation`). Every
 * agent that took a turn in it gets a copy under a fork key, with its state at the chosen message;
 * the message is delivered again to its agent's copy, and the turns of the fork talk to the
 * copies. With nothing patched the fork replays to the same states; with a body or a patch it
 * goes its own way; the original conversation and agents are untouched.
 */
import { describe, expect, it } from 'vitest';
import { defineAgent, Node, type Engine, type JsonObject } from '@queueflow/runtime';
import { waitFor } from '../support/wait-for.js';
import { engines, useEngine } from './engine-harness.js';

interface Planner extends JsonObject {
  plans: string[];
}
interface Writer extends JsonObject {
  drafts: number;
}
interface Reviewer extends JsonObject {
  reviews: string[];
}

/** A topic from outside goes to the writer; a verdict from the reviewer is noted. */
class Plan extends Node<Planner> {
  override async prep(state: Planner): Promise<void> {
    const body = this.message!.body as { topic?: string; verdict?: string };
    if (body.verdict !== undefined) {
      state.plans.push(`verdict:${body.verdict}`);
      return;
    }
    state.plans.push(body.topic!);
    await this.send(writer.ref('w'), { topic: body.topic! });
  }
}
class Write extends Node<Writer> {
  override async prep(state: Writer): Promise<void> {
    state.drafts += 1;
    await this.send(reviewer.ref('r'), { topic: (this.message!.body as { topic: string }).topic, draft: state.drafts });
  }
}
class Review extends Node<Reviewer> {
  override async prep(state: Reviewer): Promise<void> {
    const { topic, draft } = this.message!.body as { topic: string; draft: number };
    state.reviews.push(`${topic}#${draft}@${this.agentKey}`);
    await this.send(planner.ref('p'), { verdict: `${topic} ok` });
  }
}
const planner = defineAgent<Planner>('fork-planner', { state: () => ({ plans: [] }), turn: () => new Plan() });
const writer = defineAgent<Writer>('fork-writer', { state: () => ({ drafts: 0 }), turn: () => new Write() });
const reviewer = defineAgent<Reviewer>('fork-reviewer', { state: () => ({ reviews: [] }), turn: () => new Review() });
const agents = [planner, writer, reviewer];

async function states(engine: Engine, refs: string[]): Promise<JsonObject[]> {
  return Promise.all(refs.map(async (ref) => (await engine.agent(ref))!.state));
}

async function untilTurns(engine: Engine, id: string, turns: number): Promise<void> {
  await waitFor(`${turns} turns of conversation '${id}'`, async () => (await engine.conversation(id))?.turns === turns);
  // The last turn's state commits as its run ends, a moment after it is counted.
  await waitFor('every turn to end', async () => {
    const refs = (await engine.conversation(id))!.participants;
    return (await Promise.all(refs.map((ref) => engine.agent(ref)))).every((info) => info && !info.running);
  });
}

describe.each(engines)('%s: forking a conversation', (name) => {
  const setup = useEngine(name);

  it('replays a 3-agent conversation from a message to the same states, leaving the original alone', async () => {
    const { engine } = await setup('fork-replay', { flows: [], agents, autoAdvance: true });
    const id = `c-${name}`;
    await engine.send(planner.ref('p'), { topic: 'x' }, { conversation: { id } });
    await untilTurns(engine, id, 4);
    await engine.send(planner.ref('p'), { topic: 'y' }, { conversation: { id } });
    await untilTurns(engine, id, 8);
    const original = await engine.conversation(id);
    const refs = agents.map((agent, i) => agent.ref(['p', 'w', 'r'][i]!));
    const finals = await states(engine, refs);
    expect(finals).toEqual([
      { plans: ['x', 'verdict:x ok', 'y', 'verdict:y ok'] },
      { drafts: 2 },
      { reviews: ['x#1@r', 'y#2@r'] },
    ]);
    const second = original!.messages[4]!; // the topic 'y', from outside
    expect(second.to).toBe(refs[0]);

    const fork = await engine.forkConversation(id, { atMessage: second.id });
    expect(Object.keys(fork.agents).sort()).toEqual([...refs].sort());
    const copies = refs.map((ref) => fork.agents[ref]!);
    for (const copy of copies) expect(copy).toMatch(/^agent:fork-[a-z]+\/[pwr]~/);
    await untilTurns(engine, fork.id, 4);
    expect(await states(engine, copies)).toEqual(finals); // the key it was forked from: `@r`
    const forked = (await engine.conversation(fork.id))!;
    expect(forked.participants.sort()).toEqual([...copies].sort());
    expect(forked.messages.map((message) => message.to)).toEqual([...copies, copies[0]]);
    expect(forked.messages[0]!.id).toBe(fork.messageId);
    // The original: no turn more, states as they were.
    expect((await engine.conversation(id))!.turns).toBe(8);
    expect(await states(engine, refs)).toEqual(finals);
    // A fork of the fork talks to its own copies, never to the first team or the first copies.
    const again = await engine.forkConversation(fork.id, { atMessage: forked.messages[0]!.id });
    const copiesAgain = copies.map((copy) => again.agents[copy]!);
    for (const [i, copy] of copiesAgain.entries()) expect(copy).toBe(`${refs[i]!}~${copy.split('~')[1]!}`);
    await untilTurns(engine, again.id, 4);
    expect(await states(engine, copiesAgain)).toEqual(finals);
    expect((await engine.conversation(again.id))!.participants.sort()).toEqual([...copiesAgain].sort());
    expect(await states(engine, refs)).toEqual(finals);
    expect(await states(engine, copies)).toEqual(finals);
  });

  it('forks with another body and a patched state, and refuses what it cannot fork', async () => {
    const { engine } = await setup('fork-body', { flows: [], agents, autoAdvance: true });
    const id = `b-${name}`;
    await engine.send(planner.ref('p'), { topic: 'x' }, { conversation: { id } });
    await untilTurns(engine, id, 4);
    const writes = (await engine.conversation(id))!.messages[1]!; // planner → writer
    const fork = await engine.forkConversation(id, {
      atMessage: writes.id,
      body: { topic: 'z' },
      patch: [{ op: 'replace', path: '/drafts', value: 10 }],
    });
    await untilTurns(engine, fork.id, 3);
    const copies = [planner.ref('p'), writer.ref('w'), reviewer.ref('r')].map((ref) => fork.agents[ref]!);
    expect(await states(engine, copies)).toEqual([
      { plans: ['x', 'verdict:z ok'] }, // its state at that message: after its first turn
      { drafts: 11 },
      { reviews: ['z#11@r'] },
    ]);
    await expect(engine.forkConversation(id, { atMessage: 'nope' })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
      message: expect.stringContaining("no message 'nope'") as unknown,
    });
    await expect(engine.forkConversation(`none-${name}`, { atMessage: writes.id })).rejects.toMatchObject({
      code: 'INVALID_OPTION',
    });
    await expect(
      engine.forkConversation(id, { atMessage: writes.id, patch: [{ op: 'remove', path: '/missing' }] }),
    ).rejects.toMatchObject({ code: 'INVALID_OPTION' });
  });
});
