/**
 * A team of three agents for the studio's Conversations page: the lead asks the scout for facts,
 * then hands the topic to the scribe, who asks a person at `body.desk` before it writes. Each turn
 * spends 5 `tokens` once it has its answer (a step parked on an ask runs again from its start when
 * the answer comes: a spend before the ask would count twice).
 */
import { defineAgent, Node, type JsonObject } from '@queueflow/runtime';

interface Topic extends JsonObject {
  topic: string;
  /** The person's mailbox the scribe asks. */
  desk: string;
}

export interface LeadState extends JsonObject {
  topics: string[];
  facts: string[];
}

class Lead extends Node<LeadState> {
  override async prep(state: LeadState): Promise<void> {
    const { topic, desk } = this.message!.body as Topic;
    const answer = await this.ask(scout.ref('scout'), { topic });
    await this.spend('tokens', 5);
    state.topics.push(topic);
    state.facts.push(...((answer?.body as { facts?: string[] } | undefined)?.facts ?? []));
    await this.send(scribe.ref('scribe'), { topic, desk, facts: state.facts });
  }
}

export interface ScoutState extends JsonObject {
  asked: number;
}

class Scout extends Node<ScoutState> {
  override async prep(state: ScoutState): Promise<void> {
    const { topic } = this.message!.body as { topic: string };
    state.asked += 1;
    await this.spend('tokens', 5);
    await this.reply(this.message!, { facts: [`${topic} runs on Redis`] });
  }
}

export interface ScribeState extends JsonObject {
  drafts: number;
  verdict: JsonObject | string | null;
}

class Scribe extends Node<ScribeState> {
  override async prep(state: ScribeState): Promise<void> {
    const { topic, desk } = this.message!.body as Topic;
    const verdict = await this.ask(desk, { q: `Publish the draft on ${topic}?` });
    await this.spend('tokens', 5);
    state.drafts += 1;
    state.verdict = (verdict?.body as string | undefined) ?? null;
  }
}

export const lead = defineAgent<LeadState>('st-lead', {
  state: () => ({ topics: [], facts: [] }),
  turn: () => new Lead({ name: 'lead' }),
});
export const scout = defineAgent<ScoutState>('st-scout', {
  state: () => ({ asked: 0 }),
  turn: () => new Scout({ name: 'scout' }),
});
export const scribe = defineAgent<ScribeState>('st-scribe', {
  state: () => ({ drafts: 0, verdict: null }),
  turn: () => new Scribe({ name: 'scribe' }),
});

export const team = [lead, scout, scribe];
