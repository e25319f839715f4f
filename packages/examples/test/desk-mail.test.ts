/**
 * How the mail desk keys its agents (src/desk/desk-mail.ts, mail-threads.ts): a mail's thread is
 * the thread of the first id it names that an earlier mail named, else the first id of its
 * References, else its In-Reply-To, else its own Message-ID, else its normalised subject; a list
 * is the id of its List-Id. Keys hold no whitespace or `/` (agent keys).
 */
import { describe, expect, it } from 'vitest';
import { listKeyOf, MailThreads, normalSubject, threadKeyOf } from '../src/index.js';

describe('desk keys', () => {
  it('puts a reply in the thread of the first mail its References name', () => {
    const root = threadKeyOf({ messageId: '<a1@example.org>', subject: 'Apt problems' });
    const reply = threadKeyOf({
      messageId: '<b2@example.org>',
      inReplyTo: '<x9@example.org>',
      references: '<a1@example.org> <x9@example.org>',
      subject: 'Re: Apt problems',
    });
    expect(reply).toBe(root);
    expect(root).toBe('a1@example.org');
    expect(threadKeyOf({ inReplyTo: '<a1@example.org>', subject: 'Re: whatever' })).toBe(root);
  });

  it("puts a reply that names only its parent in its parent's thread, in replay order", () => {
    const threads = new MailThreads();
    const root = threads.keyOf({ messageId: '<a1@example.org>', subject: 'Apt problems' });
    // The parent keys by the first id of its References; its reply names only the parent.
    const parent = threads.keyOf({
      messageId: '<b2@example.org>',
      inReplyTo: '<a1@example.org>',
      references: '<a1@example.org>',
      subject: 'Re: Apt problems',
    });
    const reply = threads.keyOf({ messageId: '<c3@example.org>', inReplyTo: '<b2@example.org>', subject: 'Re: Apt' });
    expect([parent, reply]).toEqual([root, root]);
    // Alone, the reply would key by its parent's id: the split the threads stop.
    expect(threadKeyOf({ inReplyTo: '<b2@example.org>', subject: 'Re: Apt' })).toBe('b2@example.org');
    // A reply replayed before its parent (a wrong clock): the parent joins the reply's thread.
    const early = new MailThreads();
    const first = early.keyOf({ messageId: '<y2@example.org>', inReplyTo: '<x1@example.org>', subject: 'Re: x' });
    expect(early.keyOf({ messageId: '<x1@example.org>', references: '<w0@example.org>', subject: 'x' })).toBe(first);
    // Unrelated mails keep threads of their own; a mail without ids keys by its subject.
    expect(threads.keyOf({ messageId: '<z9@example.org>', subject: 'Apt problems' })).toBe('z9@example.org');
    expect(threads.keyOf({ subject: 'Re: Apt problems' })).toBe('subject:apt_problems');
  });

  it('falls back on the normalised subject, without whitespace', () => {
    expect(normalSubject('Re: [ILUG] Fwd: RE:  Dell GX260   V Redhat')).toBe('dell gx260 v redhat');
    expect(threadKeyOf({ subject: 'Re: [ILUG] Dell GX260 V Redhat' })).toBe('subject:dell_gx260_v_redhat');
    expect(threadKeyOf({ subject: '' })).toBe('subject:(none)');
  });

  it('keys a list by the id of its List-Id (RFC 2919), lower case', () => {
    expect(listKeyOf('Irish Linux Users Group <ILUG.linux.ie>')).toBe('ilug.linux.ie');
    expect(listKeyOf('razor-users.example.sourceforge.net')).toBe('razor-users.example.sourceforge.net');
    expect(listKeyOf('  ')).toBeUndefined();
  });
});
