import { invalidOption } from '@queueflow/runtime/kernel';

/** Settings of the run store shared by engine clients and workers. */
export interface StoreSettings {
  /** How long a finished run's record stays readable by `get`, in ms. @defaultValue 7 days */
  retentionMs?: number;
  /** Largest serialized checkpoint (shared + step state), in bytes. @defaultValue 16 MiB */
  maxCheckpointBytes?: number;
}

export function storeOptions(
  settings: StoreSettings,
  owner: string,
): { retentionSeconds: number; maxErrors: number; maxCheckpointBytes: number } {
  const retentionMs = settings.retentionMs ?? 7 * 24 * 3600 * 1000;
  if (typeof retentionMs !== 'number' || !Number.isFinite(retentionMs) || retentionMs < 1000) {
    throw invalidOption(owner, 'retentionMs', 'a number of milliseconds from 1000 and up', retentionMs);
  }
  const maxCheckpointBytes = settings.maxCheckpointBytes ?? 16 * 1024 * 1024;
  if (!Number.isInteger(maxCheckpointBytes) || maxCheckpointBytes < 1024) {
    throw invalidOption(owner, 'maxCheckpointBytes', 'an integer number of bytes from 1024 and up', maxCheckpointBytes);
  }
  return { retentionSeconds: Math.ceil(retentionMs / 1000), maxErrors: 50, maxCheckpointBytes };
}
