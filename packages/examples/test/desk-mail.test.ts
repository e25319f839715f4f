/**
 * How the mail desk keys its agents (src/desk/desk-mail.ts): a mail's thread is the first id of its
 * References, else its In-Reply-To, else its own Message-ID, else its normalised subject; a list
 * is the id of its List-Id. Keys hold no whitespace or `/` (agent keys).
 */
import { describe, expect, it } from 'vitest';
import { listKeyOf, normalSubject, threadKeyOf } from '../src/index.js';

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
