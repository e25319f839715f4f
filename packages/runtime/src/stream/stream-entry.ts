import { QueueflowError } from '../errors/queueflow-error.js';
import { assertJson } from '../json/json.js';

/** Largest entry `this.emit` takes, its data serialized as JSON, in bytes (64 KiB). */
export const MAX_STREAM_ENTRY_BYTES = 64 * 1024;

/**
 * The data of one stream entry as it is stored: checked to survive JSON and to be at most
 * {@link MAX_STREAM_ENTRY_BYTES} serialized.
 *
 * @throws QueueflowError `NOT_JSON` naming the path, `PAYLOAD_TOO_LARGE` naming the limit.
 */
export function encodeStreamData(data: unknown): string {
  assertJson(data, 'emitted data');
  const encoded = JSON.stringify(data);
  const bytes = Buffer.byteLength(encoded);
  if (bytes > MAX_STREAM_ENTRY_BYTES) {
    throw new QueueflowError(
      'PAYLOAD_TOO_LARGE',
      `emitted data is ${bytes} bytes as JSON, over the limit of ${MAX_STREAM_ENTRY_BYTES} bytes (MAX_STREAM_ENTRY_BYTES) per stream entry`,
      { retryable: false },
    );
  }
  return encoded;
}

const STREAM_ID = /^(\d+)(?:-(\d+))?$/;

/**
 * Checks a stream entry id given as `from` (`<ms>-<seq>`, as Redis stream ids; `0` is before the
 * first entry). @throws QueueflowError `INVALID_OPTION`.
 */
export function checkStreamId(option: string, value: unknown): string {
  if (typeof value !== 'string' || !STREAM_ID.test(value)) {
    throw new QueueflowError(
      'INVALID_OPTION',
      `expected \`${option}\` to be a stream entry id like '1718000000000-0', got ${typeof value === 'string' ? `'${value}'` : typeof value}`,
      { retryable: false },
    );
  }
  return value.includes('-') ? value : `${value}-0`;
}

/** Orders two stream ids (`<ms>-<seq>`): negative when `a` comes first. */
export function compareStreamIds(a: string, b: string): number {
  const [ams = 0, aseq = 0] = a.split('-').map(Number);
  const [bms = 0, bseq = 0] = b.split('-').map(Number);
  return ams - bms || aseq - bseq;
}
