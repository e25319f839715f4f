/**
 * The desk's moderator (src/desk/desk-agents.ts): a sender with a ham dated before its first spam
 * alerts the moderator once, whichever of the two its agent hears first, and the scripted
 * reviewer answers. Classified mails are published straight to `mail.classified` (no triage).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { LocalEngine } from '@queueflow/runtime';
import { deskAgents, scriptedReviewer, type ModeratorState, type SenderState } from '../src/index.js';
import { MAIL_CLASSIFIED, type ClassifiedMail } from '../src/desk/classified-mail.js';
import { waitFor } from '../../../tests/support/wait-for.js';

const day = (n: number): number => Date.UTC(2002, 7, n);

function mail(docId: string, at: number, label: 'ham' | 'spam', from = 'gkm@example.org'): ClassifiedMail {
  return { docId, path: docId, at, subject: `mail ${docId}`, from, thread: docId, label, summary: null };
}

describe('the desk moderator', () => {
  let engine: LocalEngine | undefined;
  afterEach(async () => {
    await engine?.close();
    engine = undefined;
  });

  /** Publishes `mails` one after another, then waits for every sender and the moderator to be idle. */
  async function replay(mails: ClassifiedMail[]): Promise<{ moderator: ModeratorState; senders: SenderState[] }> {
    engine = new LocalEngine({ flows: [scriptedReviewer], agents: deskAgents });
    const reviewer = await engine.start(scriptedReviewer, { answered: 0 });
    for (const each of mails) await engine.publish(MAIL_CLASSIFIED, each as never);
    const senders = [...new Set(mails.map((each) => each.from))];
    const states = await waitFor('every sender to count its mails', async () => {
      const infos = await Promise.all(senders.map((key) => engine!.agent(`agent:desk-sender/${key}`)));
      const states = infos.map((info) => info?.state as unknown as SenderState | undefined);
      const counted = states.reduce((sum, state) => sum + (state ? state.ham + state.spam : 0), 0);
      return counted === mails.length ? (states as SenderState[]) : undefined;
    });
    const moderator = await waitFor('the moderator to be idle', async () => {
      const info = await engine!.agent('agent:desk-moderator/desk');
      if (info === undefined) return { asked: 0, verdicts: [] };
      return info.inbox === 0 && info.running === undefined ? (info.state as unknown as ModeratorState) : undefined;
    });
    await engine.send('desk.reviewer', { stop: true });
    await reviewer.result();
    return { moderator, senders: states };
  }

  it("hears of a trusted sender's first spam once, in date order or not", async () => {
    const mails = [
      mail('a', day(1), 'ham'),
      mail('b', day(2), 'spam'),
      mail('c', day(3), 'spam'),
      mail('d', day(4), 'ham'),
    ];
    const inOrder = await replay(mails);
    await engine!.close();
    const reversed = await replay([...mails].reverse());
    for (const { moderator, senders } of [inOrder, reversed]) {
      expect(moderator).toEqual({
        asked: 1,
        verdicts: [{ sender: 'gkm@example.org', docId: 'b', verdict: 'spam confirmed' }],
      });
      expect(senders[0]).toMatchObject({ ham: 2, spam: 2, earliestHams: [day(1), day(4)], firstSpam: { docId: 'b' } });
    }
  });

  it('does not hear of a sender whose spam came before any ham', async () => {
    const { moderator } = await replay([
      mail('a', day(1), 'spam'),
      mail('b', day(2), 'ham'),
      mail('c', day(3), 'spam'),
    ]);
    expect(moderator.asked).toBe(0);
  });
});
