/**
 * How the Conversations page reads a conversation's record: asks paired with the answers their
 * turns received, the lanes, the questions left for people, and whom each parked turn waits for.
 */
import { describe, expect, it } from 'vitest';
import type { ConversationInfo, ConversationMessage, MailboxInfo } from '../src/api/types';
import { arrowsOf, lanesOf, OUTSIDE, pendingAsks, waitEdges } from '../src/components/conversation-model';

const A = 'agent:lead/a';
const B = 'agent:scout/b';
const C = 'agent:scribe/c';

function info(messages: ConversationMessage[], waits: ConversationInfo['waits'] = []): ConversationInfo {
  return {
    id: 'talk',
    status: 'running',
    turns: 3,
    participants: [A, B, C],
    messages,
    waits,
    spend: {},
    startedAt: 0,
    updatedAt: 0,
  };
}

const msg = (id: string, from: string | undefined, to: string, runId: string): ConversationMessage => ({
  id,
  ...(from === undefined ? {} : { from }),
  to,
  at: 1,
  runId,
  turn: 1,
});

// A's turn (run ra) asks B; B's turn (rb) answers, which A's turn receives; A then sends to C.
const record = [msg('m1', undefined, A, 'ra'), msg('m2', A, B, 'rb'), msg('m3', B, A, 'ra'), msg('m4', A, C, 'rc')];

describe('the Conversations page model', () => {
  it('pairs an ask with the answer its turn received, and says which messages a turn handled', () => {
    const arrows = arrowsOf(info(record));
    expect(arrows.map((arrow) => [arrow.kind, arrow.pair, arrow.handled])).toEqual([
      ['send', undefined, true],
      ['ask', 2, true],
      ['reply', 1, false],
      ['send', undefined, true],
    ]);
    expect(arrows[0]!.from).toBe(OUTSIDE);
  });

  it('leaves unpaired what the record cannot pair', () => {
    // C received a message from B that answers nothing C sent B; A received one from outside.
    const arrows = arrowsOf(info([msg('m1', A, C, 'rc'), msg('m2', B, C, 'rc'), msg('m3', undefined, A, 'ra')]));
    expect(arrows.map((arrow) => arrow.kind)).toEqual(['send', 'received', 'send']);
    const received = arrowsOf(info([msg('m1', A, B, 'rb'), msg('m2', A, C, 'rc'), msg('m3', undefined, C, 'rc')]));
    expect(received.map((arrow) => arrow.kind)).toEqual(['send', 'send', 'answer']);
  });

  it('finds the questions for people, and whom each parked turn waits for', () => {
    const question = { id: 'q1', body: { q: 'ok?' }, sentAt: 2, replyTo: 'rc.reply0', conversation: 'talk', from: C };
    const boxes: MailboxInfo[] = [
      {
        address: 'human:desk',
        size: 1,
        messages: [question, { ...question, id: 'q2', conversation: 'other' }],
        parked: [],
      },
      { address: B, size: 1, messages: [{ ...question, id: 'q3', replyTo: 'ra.reply1' }], parked: [] },
    ];
    const waits = [
      { agent: C, runId: 'rc', on: 'rc.reply0', since: 3 },
      { agent: A, runId: 'ra', on: 'ra.reply1', since: 3 },
    ];
    const conversation = info(record, waits);
    const arrows = arrowsOf(conversation);
    const asks = pendingAsks('talk', conversation, boxes);
    expect(asks).toEqual([{ address: 'human:desk', message: question, asker: C }]);
    expect(waitEdges(conversation, arrows, boxes).map((edge) => [edge.agent, edge.target, edge.kind])).toEqual([
      [C, 'human:desk', 'person'],
      [A, B, 'agent'],
    ]);
    expect(lanesOf(conversation, arrows, asks).map((lane) => lane.id)).toEqual([OUTSIDE, A, B, C, 'human:desk']);
  });

  it('takes the asked agent from the record once its turn took the ask', () => {
    // A's turn asked C (m4, handled by C's turn), which has not answered yet.
    const conversation = info(record, [{ agent: A, runId: 'ra', on: 'ra.reply1', since: 3 }]);
    const edges = waitEdges(conversation, arrowsOf(conversation), []);
    expect(edges.map((edge) => [edge.target, edge.kind])).toEqual([[C, 'agent']]);
  });
});
