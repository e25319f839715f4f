import {
  MAX_MEMORY_HISTORY,
  type MemoryChange,
  type MemoryWrite,
  type MemoryWriteReply,
  type SharedMemoryStore,
  type StoredMemory,
} from '../agent/shared-memory.js';
import { jsonCopy, type Json } from '../json/json.js';

interface Entry {
  value: Json;
  version: number;
  history: MemoryChange[];
  /** Ids of the kept changes: an update written twice (a step run again) is written once. */
  ids: Set<string>;
}

/** LocalEngine's shared memories (`this.memory`): each write one synchronous change of a map. */
export class MemorySharedMemoryStore implements SharedMemoryStore {
  private readonly memories = new Map<string, Entry>();

  async read(name: string): Promise<StoredMemory> {
    const entry = this.memories.get(name);
    return entry ? { value: jsonCopy(entry.value), version: entry.version } : { value: {}, version: 0 };
  }

  async write(name: string, write: MemoryWrite): Promise<MemoryWriteReply> {
    const entry: Entry = this.memories.get(name) ?? { value: {}, version: 0, history: [], ids: new Set<string>() };
    if (entry.ids.has(write.change.id)) return { result: 'already', version: entry.version };
    if (write.ifVersion !== undefined && write.ifVersion !== entry.version)
      return { result: 'conflict', version: entry.version };
    if (write.base !== entry.version) return { result: 'moved', version: entry.version };
    entry.version += 1;
    entry.value = jsonCopy(write.value);
    entry.history.push({ ...write.change, version: entry.version });
    entry.ids.add(write.change.id);
    if (entry.history.length > MAX_MEMORY_HISTORY) entry.ids.delete(entry.history.shift()!.id);
    this.memories.set(name, entry);
    return { result: 'applied', version: entry.version };
  }

  async history(name: string, after: number): Promise<MemoryChange[]> {
    const history = this.memories.get(name)?.history ?? [];
    return history.filter((change) => change.version > after).map((change) => structuredClone(change));
  }
}
