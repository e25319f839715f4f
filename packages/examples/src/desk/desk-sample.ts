// Apart from desk-mail.ts (which reads and parses the mails): the command line shows the sample's
// size in its help without loading a mail parser.
import type { DeskMail } from './desk-mail.js';

/** Mails the desk replays by default (`npm start -- --desk`). */
export const DESK_SAMPLE_SIZE = 1000;

/**
 * Where a sample starts (epoch ms): August 2002, when the corpus's mailing lists are busiest (its
 * earlier mails are mostly spam of 2001 and spring 2002).
 */
const DESK_SAMPLE_FROM = Date.UTC(2002, 7, 1);

/** The first `size` of `mails` (in date order) from August 2002 on. */
export function deskSample(mails: readonly DeskMail[], size: number): DeskMail[] {
  return mails.filter((mail) => mail.at >= DESK_SAMPLE_FROM).slice(0, size);
}
