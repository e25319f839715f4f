import { DocumentError } from '../documents/document-error.js';

/** How much of the start of a file the binary check looks at, in bytes. */
const SNIFF_BYTES = 64 * 1024;
/** Share of control bytes above which a file counts as binary. */
const MAX_CONTROL_SHARE = 0.05;

/**
 * Fails a document with no content: 0 bytes, or only whitespace.
 * @throws DocumentError `EMPTY`.
 */
export function checkNotEmpty(bytes: Uint8Array): void {
  if (bytes.length === 0) throw new DocumentError('EMPTY', 'the file has 0 bytes');
  for (const byte of bytes) {
    if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d && byte !== 0x0c) return;
  }
  throw new DocumentError('EMPTY', `the file holds only whitespace (${bytes.length} bytes)`);
}

/**
 * Fails a document that is not text: a NUL byte, or more than 5% control bytes (other than tab,
 * newlines, form feed and escape), in its first 64 KiB. Legacy 8-bit encodings pass.
 * @throws DocumentError `BINARY`.
 */
export function checkNotBinary(bytes: Uint8Array): void {
  const end = Math.min(bytes.length, SNIFF_BYTES);
  let control = 0;
  for (let i = 0; i < end; i++) {
    const byte = bytes[i]!;
    if (byte === 0) throw new DocumentError('BINARY', `NUL byte at offset ${i}: not a text file`);
    if (
      (byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d && byte !== 0x0c && byte !== 0x1b) ||
      byte === 0x7f
    ) {
      control++;
    }
  }
  if (control > end * MAX_CONTROL_SHARE) {
    const percent = ((control / end) * 100).toFixed(1);
    throw new DocumentError('BINARY', `${percent}% control bytes in the first ${end} bytes: not a text file`);
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const latin1 = new TextDecoder('latin1');

/**
 * Decodes a text file as UTF-8 (a leading BOM dropped). A file whose only invalid bytes are an
 * incomplete character at its very end was cut off: `TRUNCATED`. Any other invalid UTF-8 is read
 * as Windows-1252 instead, with a warning.
 * @throws DocumentError `TRUNCATED`.
 */
export function decodeText(bytes: Uint8Array): { text: string; warnings: string[] } {
  try {
    return { text: strictUtf8.decode(bytes).replace(/^\uFEFF/, ''), warnings: [] };
  } catch {
    for (let cut = 1; cut <= 3 && cut < bytes.length; cut++) {
      if (isUtf8(bytes.subarray(0, bytes.length - cut)) && (bytes[bytes.length - cut]! & 0xc0) === 0xc0) {
        throw new DocumentError(
          'TRUNCATED',
          `the file ends inside a multi-byte UTF-8 character (last ${cut} byte${cut > 1 ? 's' : ''} incomplete)`,
        );
      }
    }
    return { text: latin1.decode(bytes), warnings: ['not valid UTF-8: read as Windows-1252'] };
  }
}

function isUtf8(bytes: Uint8Array): boolean {
  try {
    strictUtf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}
