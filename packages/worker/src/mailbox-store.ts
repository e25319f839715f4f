import type { Message } from '@queueflow/runtime';
import type { OutgoingMessage, ParkRequest, StepReplay } from '@queueflow/runtime/interpreter';
import type { RedisKeys } from './redis-keys.js';
import type { ScriptedRedis } from './scripts.js';
import { commitResult, outboxArgs, wakeParked, type CommitResult, type StoreOptions } from './script-replies.js';
import { position, type StepPosition, type StoredRun } from './stored-run.js';

/**
 * Mailboxes in Redis: reserving a message for a receiving step, parking a run on an empty
 * mailbox, and sends from outside any run. Lists per address; see the Lua scripts for the rules.
 */
export class MailboxStore {
  constructor(
    private readonly redis: ScriptedRedis,
    private readonly keys: RedisKeys,
    private readonly options: StoreOptions,
  ) {}

  /**
   * Reserves a message for receive call `ordinal` of the run's step `step` (reserve-message.lua).
   * @throws Error when the run has moved past that step (a stale delivery must not take messages).
   */
  async reserve(runId: string, at: StepPosition, ordinal: number, address: string): Promise<Message | undefined> {
    const [code, message] = (await this.redis.reserveMessage(
      this.keys.run(runId),
      this.keys.reserved(runId),
      this.keys.mailbox(address),
      position(at),
      ordinal,
      address,
    )) as [number, string?];
    if (code === -1) throw new Error(`run '${runId}' is no longer at step ${at.step}: this run of the step is stale`);
    return code === 1 ? (JSON.parse(message!) as Message) : undefined;
  }

  /**
   * Parks the run on `park.address` (park-run.lua) and delivers the step's sends.
   * @returns the park count (the wake job id is `<id>-<step>-p<count>`) and whether a message is
   *   already there; `undefined` when the commit was refused (stale or cancelled).
   */
  async park(
    run: StoredRun,
    park: ParkRequest,
    replay: StepReplay,
    outbox: OutgoingMessage[],
  ): Promise<{ result: CommitResult; parkCount: number; ready: boolean }> {
    const [code, parkCount, ready, wakes] = (await this.redis.parkRun(
      ...this.keys.runKeys(run.id),
      position(run),
      JSON.stringify(replay),
      park.address,
      '',
      Date.now(),
      run.id,
      this.keys.prefix,
      this.options.retentionSeconds,
      this.keys.events(),
      ...outboxArgs(outbox),
    )) as [number, number, number, string[]];
    await wakeParked(this.options, wakes);
    return { result: commitResult(code), parkCount, ready: ready === 1 };
  }

  /** Messages waiting at `address`. */
  async mailboxSize(address: string): Promise<number> {
    return this.redis.llen(this.keys.mailbox(address));
  }

  /** Appends a message to a mailbox from outside any run (send-message.lua) and wakes its waiters. */
  async send(address: string, message: Message): Promise<void> {
    const wakes = (await this.redis.sendMessage(
      this.keys.mailbox(address),
      this.keys.mailboxWaiters(address),
      JSON.stringify(message),
      this.options.retentionSeconds,
    )) as string[];
    await wakeParked(this.options, wakes);
  }
}
