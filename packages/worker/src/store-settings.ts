import {
  DEFAULT_MAX_STREAM_ENTRIES,
  MAX_ERRORS_KEPT,
  checkLargeValueBytes,
  invalidOption,
} from '@queueflow/runtime/kernel';

/** Settings of the run store shared by engine clients and workers. */
export interface StoreSettings {
  /** How long a finished run's record stays readable by `get`, in ms. @defaultValue 7 days */
  retentionMs?: number;
  /** Largest serialized checkpoint (shared + step state), in bytes. @defaultValue 16 MiB */
  maxCheckpointBytes?: number;
  /** Step records kept per run for `history`, `fork` and `sharedAt`, oldest dropped first. @defaultValue 10000 */
  maxStepRecords?: number;
  /**
   * Entries kept in each run's stream (`this.emit`), oldest dropped first; about, as Redis
   * trims whole nodes (XADD MAXLEN ~). @defaultValue 10000
   */
  maxStreamEntries?: number;
  /**
   * Values in `shared` whose JSON is over this many bytes (UTF-8) are stored once in Redis, apart,
   * under the sha256 of their JSON (`<prefix>:value:<hash>`), and checkpoints, step records,
   * fan-out snapshots and children's deltas refer to them (a claim check): runs, steps and
   * fan-out children that hold the same large value keep one copy. A value is kept while a run
   * that refers to it is kept, and expires a minute after the last of them. `Infinity` turns this
   * off. Clients and workers may differ: any of them reads what another stored.
   * @defaultValue 262144 (256 KiB)
   */
  largeValueBytes?: number;
}

/** The checked settings, as the store uses them. */
export interface CheckedStoreSettings {
  retentionSeconds: number;
  maxErrors: number;
  maxCheckpointBytes: number;
  maxStepRecords: number;
  maxStreamEntries: number;
  largeValueBytes: number;
}

/** @throws TypeError naming the bad setting and `owner`. */
export function storeOptions(settings: StoreSettings, owner: string): CheckedStoreSettings {
  const retentionMs = settings.retentionMs ?? 7 * 24 * 3600 * 1000;
  if (typeof retentionMs !== 'number' || !Number.isFinite(retentionMs) || retentionMs < 1000) {
    throw invalidOption(owner, 'retentionMs', 'a number of milliseconds from 1000 and up', retentionMs);
  }
  const maxCheckpointBytes = settings.maxCheckpointBytes ?? 16 * 1024 * 1024;
  if (!Number.isInteger(maxCheckpointBytes) || maxCheckpointBytes < 1024) {
    throw invalidOption(owner, 'maxCheckpointBytes', 'an integer number of bytes from 1024 and up', maxCheckpointBytes);
  }
  const maxStepRecords = settings.maxStepRecords ?? 10_000;
  if (!Number.isInteger(maxStepRecords) || maxStepRecords < 1) {
    throw invalidOption(owner, 'maxStepRecords', 'an integer from 1 and up', maxStepRecords);
  }
  const maxStreamEntries = settings.maxStreamEntries ?? DEFAULT_MAX_STREAM_ENTRIES;
  if (!Number.isInteger(maxStreamEntries) || maxStreamEntries < 1) {
    throw invalidOption(owner, 'maxStreamEntries', 'an integer from 1 and up', maxStreamEntries);
  }
  return {
    maxStreamEntries,
    largeValueBytes: checkLargeValueBytes(owner, settings.largeValueBytes),
    retentionSeconds: Math.ceil(retentionMs / 1000),
    maxErrors: MAX_ERRORS_KEPT,
    maxCheckpointBytes,
    maxStepRecords,
  };
}
