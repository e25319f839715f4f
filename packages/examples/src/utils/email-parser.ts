import PostalMime from 'postal-mime';
import { DocumentError } from '../documents/document-error.js';

/** What the parse stage keeps of an email. */
export interface ParsedEmail {
  subject: string | null;
  senderDomain: string | null;
  date: string | null;
  plainText: string | null;
  html: string | null;
  warnings: string[];
}

/** Header fields of which an email must have at least one. */
const CORE_HEADERS = new Set(['from', 'to', 'subject', 'date', 'message-id', 'received']);
/** A header field line (RFC 5322 §2.2: printable ASCII but the colon, then a colon). */
const FIELD_LINE = /^[\x21-\x39\x3b-\x7e]+[ \t]*:/;

/**
 * Parses a raw RFC 5322 message with postal-mime, after structural checks that postal-mime,
 * which accepts anything, does not make:
 *
 * - `TRUNCATED`: no blank line ends the header block (the file stops inside the headers), or
 *   the message stops inside a base64 part whose multipart never closes;
 * - `MALFORMED`: the header block does not start with a header field, has no From, To,
 *   Subject, Date, Message-ID or Received field, or postal-mime rejects the message.
 *
 * @throws DocumentError `TRUNCATED` or `MALFORMED`.
 */
export async function parseEmail(bytes: Uint8Array): Promise<ParsedEmail> {
  // latin1 maps bytes 1:1 to code units: the structural checks look at bytes, not characters.
  const raw = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
  const warnings: string[] = [];
  checkHeaderBlock(raw);
  const truncation = multipartTruncation(raw);
  if (truncation === 'base64') {
    throw new DocumentError(
      'TRUNCATED',
      'the message stops inside a base64 part and its multipart closing boundary is missing',
    );
  }
  if (truncation === 'unclosed') warnings.push('multipart closing boundary missing');

  let email;
  try {
    email = await PostalMime.parse(bytes, { attachmentEncoding: 'base64', maxNestingDepth: 32 });
  } catch (error) {
    throw new DocumentError('MALFORMED', `postal-mime: ${(error as Error).message}`, { cause: error });
  }
  const from = email.from && 'address' in email.from ? email.from.address : undefined;
  return {
    subject: cleanHeader(email.subject),
    senderDomain: domainOf(from),
    date: cleanHeader(email.date),
    plainText: email.text ?? null,
    html: email.html ?? null,
    warnings,
  };
}

function checkHeaderBlock(raw: string): void {
  const lines = raw.split('\n');
  let index = 0;
  if (lines[0]?.startsWith('From ')) index = 1; // mbox separator line
  let fields = 0;
  let core = false;
  for (; index < lines.length; index++) {
    const line = (lines[index] ?? '').replace(/\r$/, '');
    if (line === '') {
      if (fields === 0) throw new DocumentError('MALFORMED', 'the message has no header fields');
      if (!core) {
        throw new DocumentError('MALFORMED', 'no From, To, Subject, Date, Message-ID or Received header');
      }
      return;
    }
    if (FIELD_LINE.test(line)) {
      fields++;
      const name = line.slice(0, line.indexOf(':')).trim().toLowerCase();
      if (CORE_HEADERS.has(name)) core = true;
    } else if (fields === 0 || !/^[ \t]/.test(line)) {
      if (fields === 0) {
        throw new DocumentError(
          'MALFORMED',
          `line ${index + 1} should start the header block but is not a header field: ${preview(line)}`,
        );
      }
      // A stray line inside the headers: mail readers end the header block there; so do we.
      return;
    }
  }
  throw new DocumentError('TRUNCATED', 'no blank line ends the header block: the message stops inside its headers');
}

/**
 * `'base64'` when the message's last part is base64 data cut short (its length is not a
 * multiple of 4) and its multipart never closes; `'unclosed'` when only the closing boundary is
 * missing (common in real mail and harmless); `null` otherwise.
 */
function multipartTruncation(raw: string): 'base64' | 'unclosed' | null {
  const boundaries = [...raw.matchAll(/boundary\s*=\s*(?:"([^"\r\n]+)"|([^\s;"]+))/gi)].map(
    (match) => match[1] ?? match[2] ?? '',
  );
  if (boundaries.length === 0) return null;
  let last = -1;
  let lastBoundary = '';
  for (const boundary of new Set(boundaries)) {
    const at = raw.lastIndexOf(`\n--${boundary}`);
    if (at > last) {
      last = at;
      lastBoundary = boundary;
    }
  }
  if (last < 0) return null;
  const delimiterEnd = raw.indexOf('\n', last + 1);
  const delimiterLine = raw.slice(last + 1, delimiterEnd < 0 ? undefined : delimiterEnd).trimEnd();
  if (delimiterLine === `--${lastBoundary}--`) return null;
  if (delimiterEnd < 0) return 'unclosed';
  const part = raw.slice(delimiterEnd + 1);
  const split = /\r?\n\r?\n/.exec(part);
  if (!split) return 'unclosed';
  const headers = part.slice(0, split.index);
  const body = part.slice(split.index + split[0].length).replace(/\s+/g, '');
  if (/content-transfer-encoding:\s*base64/i.test(headers) && body.length % 4 !== 0) return 'base64';
  return 'unclosed';
}

function cleanHeader(value: string | undefined): string | null {
  if (value === undefined) return null;
  const flat = value.replace(/\s+/g, ' ').trim();
  return flat === '' ? null : flat;
}

/** The lower-cased domain of an address, `null` when there is none. */
function domainOf(address: string | undefined): string | null {
  if (!address) return null;
  const at = address.lastIndexOf('@');
  if (at < 0 || at === address.length - 1) return null;
  return address
    .slice(at + 1)
    .trim()
    .replace(/[>\]]+$/, '')
    .toLowerCase();
}

function preview(line: string): string {
  const shown = line.length > 60 ? `${line.slice(0, 57)}...` : line;
  return JSON.stringify(shown);
}
