/** Hash slots of a Redis Cluster. */
const SLOTS = 16384;

const TABLE = (() => {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
})();

/**
 * The Redis Cluster hash slot of `key` (0 to 16383): CRC16 (XMODEM) of its hash tag, the text
 * between the first `{` and the first `}` after it when that text is not empty, else of the
 * whole key, modulo 16384.
 *
 * @see https://redis.io/docs/latest/operate/oss_and_stack/reference/cluster-spec/#hash-tags
 */
export function keySlot(key: string): number {
  let bytes = Buffer.from(key, 'utf8');
  const open = bytes.indexOf(0x7b);
  if (open !== -1) {
    const close = bytes.indexOf(0x7d, open + 1);
    if (close > open + 1) bytes = bytes.subarray(open + 1, close);
  }
  return crc16(bytes) % SLOTS;
}

/** CRC16 (XMODEM, as Redis Cluster uses) of `bytes`, mod 16384: a slot, with no hash tag read. */
export function bytesSlot(text: string): number {
  return crc16(Buffer.from(text, 'utf8')) % SLOTS;
}

function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ TABLE[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}
