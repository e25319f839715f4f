import { InMemoryMailboxes } from '../mailbox/in-memory-mailboxes.js';
import { checkAddress, type Message } from '../mailbox/message.js';
import type { Clock } from './clock.js';
import type { Json } from './json.js';
import { StepMailbox, type OutgoingMessage, type ParkRequest, type StepReplay } from './step-mailbox.js';

interface RunMailboxState {
  /** Messages reserved by the current step, by receive call number. */
  reserved: Map<number, { address: string; message: Message }>;
  replay: StepReplay;
  parkedOn?: string;
  timer?: unknown;
}

/**
 * The LocalEngine's mailboxes: messages in memory, reserved by a receiving step until it
 * commits, parked runs woken by a send or their deadline. The same rules as the Redis engine's
 * Lua scripts, kept in memory.
 */
export class LocalMailboxes {
  private readonly messages = new InMemoryMailboxes();
  private readonly runs = new Map<string, RunMailboxState>();
  /** Parked runs by the address they wait on. */
  private readonly parked = new Map<string, Set<string>>();

  constructor(
    private readonly clock: Clock,
    /** Runs the parked step of `runId` again. */
    private readonly wake: (runId: string) => void,
  ) {}

  /** The mailbox of the step `step` of `runId` about to run. */
  stepMailbox(runId: string, step: number): StepMailbox {
    const state = this.state(runId);
    const reservations = {
      reserve: async (ordinal: number, address: string): Promise<Message | undefined> => {
        const held = state.reserved.get(ordinal);
        if (held) return held.message;
        const message = this.messages.take(address);
        if (message) state.reserved.set(ordinal, { address, message });
        return message;
      },
    };
    return new StepMailbox(reservations, { runId, step }, { ...state.replay }, () => this.clock.now());
  }

  /** The step committed: its reservations are consumed, its sends delivered. */
  committed(runId: string, outbox: OutgoingMessage[]): void {
    const state = this.state(runId);
    state.reserved.clear();
    state.replay = { sent: 0 };
    this.deliver(outbox);
  }

  /** The step will not commit (the run failed or was cancelled): reserved messages go back. */
  release(runId: string): void {
    const state = this.runs.get(runId);
    if (!state) return;
    this.unpark(runId, state);
    const reserved = [...state.reserved.values()].reverse();
    state.reserved.clear();
    for (const { address, message } of reserved) {
      this.messages.putBack(address, message);
      this.wakeOne(address);
    }
    this.runs.delete(runId);
  }

  /** Parks `runId` on `park.address` until a message comes or `park.deadline` passes. */
  park(runId: string, park: ParkRequest, replay: StepReplay, outbox: OutgoingMessage[]): void {
    const state = this.state(runId);
    state.replay = replay;
    this.deliver(outbox);
    if (this.messages.size(park.address) > 0) return this.wake(runId);
    state.parkedOn = park.address;
    const waiting = this.parked.get(park.address) ?? new Set<string>();
    waiting.add(runId);
    this.parked.set(park.address, waiting);
    if (park.deadline !== null) {
      state.timer = this.clock.setTimeout(
        () => {
          this.unpark(runId, state);
          this.wake(runId);
        },
        Math.max(0, park.deadline - this.clock.now()),
      );
    }
  }

  /** `engine.send`: a message from outside any run. */
  send(address: string, body: Json): void {
    checkAddress('send', address);
    this.deliver([{ address, message: this.messages.message(address, body) }]);
  }

  forget(runId: string): void {
    const state = this.runs.get(runId);
    if (state) this.unpark(runId, state);
    this.runs.delete(runId);
  }

  private deliver(outbox: OutgoingMessage[]): void {
    for (const { address, message } of outbox) {
      this.messages.post(address, message);
      this.wakeOne(address);
    }
  }

  /** Wakes one run parked on `address` (one message wakes one receiver). */
  private wakeOne(address: string): void {
    const waiting = this.parked.get(address);
    const runId = waiting?.values().next().value;
    if (runId === undefined) return;
    this.unpark(runId, this.state(runId));
    this.wake(runId);
  }

  private unpark(runId: string, state: RunMailboxState): void {
    if (state.parkedOn !== undefined) {
      const waiting = this.parked.get(state.parkedOn);
      waiting?.delete(runId);
      if (waiting?.size === 0) this.parked.delete(state.parkedOn);
      delete state.parkedOn;
    }
    if (state.timer !== undefined) {
      this.clock.clearTimeout(state.timer);
      delete state.timer;
    }
  }

  private state(runId: string): RunMailboxState {
    let state = this.runs.get(runId);
    if (!state) {
      state = { reserved: new Map(), replay: { sent: 0 } };
      this.runs.set(runId, state);
    }
    return state;
  }
}
