import {
  MAX_MEMORY_HISTORY,
  type MemoryWrite,
  type MemoryWriteReply,
  type SharedMemoryStore,
  type StoredMemory,
} from '@queueflow/runtime/kernel';
import type { Json, MemoryChange } from '@queueflow/runtime';
import type { Partitions } from './partitions.js';
import type { ScriptedRedis } from './scripts.js';

/**
 * Shared memories on Redis (`this.memory`): a hash, a capped history and the ids of its changes,
 * in the partition of the memory's name; each write one script (shared-memory.lua).
 */
export class RedisSharedMemoryStore implements SharedMemoryStore {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly partitions: Partitions,
  ) {}

  async read(name: string): Promise<StoredMemory> {
    const [value, version] = await this.redis.hmget(this.keys(name)[0], 'value', 'version');
    return typeof value === 'string'
      ? { value: JSON.parse(value) as Json, version: Number(version) }
      : { value: {}, version: 0 };
  }

  async write(name: string, write: MemoryWrite): Promise<MemoryWriteReply> {
    const [result, version] = (await this.redis.sharedMemory(
      ...this.keys(name),
      write.change.id,
      write.base,
      write.ifVersion ?? '',
      JSON.stringify(write.value),
      JSON.stringify(write.change),
      MAX_MEMORY_HISTORY,
    )) as [MemoryWriteReply['result'], number];
    return { result, version };
  }

  async history(name: string, after: number): Promise<MemoryChange[]> {
    const kept = await this.redis.lrange(this.keys(name)[1], 0, -1);
    return kept.map((change) => JSON.parse(change) as MemoryChange).filter((change) => change.version > after);
  }

  private keys(name: string): [string, string, string] {
    return this.partitions.ofAddress(name).memoryKeys(name);
  }
}
