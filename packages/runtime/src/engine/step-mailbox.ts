import { QueueflowError } from '../errors/queueflow-error.js';
import { jsonCopy, type Json } from './json.js';
import {
  checkAddress,
  checkMessageBody,
  checkTimeout,
  type Mailbox,
  type Message,
  type ReceiveOptions,
  type SendOptions,
} from '../mailbox/message.js';

/** A message a step sends, delivered when the step commits or parks. */
export interface OutgoingMessage {
  address: string;
  message: Message;
}

/** Where a parked step waits: receive call number `ordinal` of the step, on `address`. */
export interface ParkRequest {
  ordinal: number;
  address: string;
  /** Epoch ms after which that receive resolves `undefined`; `null` waits as long as it takes. */
  deadline: number | null;
}

/** What earlier runs of the same step left behind (the step parked, then woke). */
export interface StepReplay {
  /** Sends of this step already delivered (when it parked): the first `sent` sends are skipped. */
  sent: number;
  /** Where the step parked last. */
  parked?: ParkRequest | undefined;
  /** Receive calls (ordinals) that timed out in an earlier run of the step: they stay `undefined`. */
  timedOut?: number[] | undefined;
}

/**
 * How an engine reserves messages for a step: receive call `ordinal` gets the message reserved
 * for it by an earlier run of this step (a replay), else the head of `address`, now reserved for
 * this step until it commits, else `undefined`.
 */
export interface MessageReservations {
  reserve(ordinal: number, address: string): Promise<Message | undefined>;
}

/** Thrown inside node code by `receive` on an empty mailbox: the step parks. */
export class ParkSignal extends QueueflowError {
  constructor(readonly request: ParkRequest) {
    super('INTERNAL', `the step waits for a message at '${request.address}' (a parked run; not an error)`, {
      retryable: false,
    });
  }
}

/**
 * The mailbox of one step on an engine. Sends are buffered and leave with the step's commit
 * (exactly once); receives reserve messages that the commit consumes; a receive on an empty
 * mailbox parks the step, which then runs again from its start when woken. Calls are numbered
 * in call order, so a step that runs again meets the same messages (a deterministic step).
 */
export class StepMailbox implements Mailbox {
  readonly outbox: OutgoingMessage[] = [];
  parkRequest: ParkRequest | undefined;
  private readonly timedOut = new Set<number>();
  private sends = 0;
  private receives = 0;
  private replies = 0;

  constructor(
    private readonly reservations: MessageReservations,
    private readonly ids: { runId: string; step: number },
    private readonly replay: StepReplay,
    private readonly now: () => number,
  ) {}

  /** What the step, parked now, must find when it runs again. */
  replayAfterPark(): StepReplay {
    return {
      sent: this.sends,
      ...(this.parkRequest ? { parked: this.parkRequest } : {}),
      ...(this.timedOut.size > 0 ? { timedOut: [...this.timedOut].sort((a, b) => a - b) } : {}),
    };
  }

  async send(address: string, body: Json, options: SendOptions = {}): Promise<void> {
    checkAddress('send', address);
    checkMessageBody(body, `message body sent to '${address}'`);
    // After a receive parked the step, nothing it does counts: the step will run again (code
    // that caught the park signal must not get its fallback's sends delivered).
    if (this.parkRequest) return;
    const ordinal = this.sends++;
    if (ordinal < this.replay.sent) return; // delivered when this step parked before
    this.outbox.push({
      address,
      message: {
        id: `${this.ids.runId}.${this.ids.step}.s${ordinal}`,
        body: jsonCopy(body),
        ...(options.replyTo ? { replyTo: checkAddress('send', options.replyTo) } : {}),
        sentAt: this.now(),
      },
    });
  }

  async receive(address: string, options: ReceiveOptions = {}): Promise<Message | undefined> {
    checkAddress('receive', address);
    const timeoutMs = checkTimeout('receive', options.timeoutMs);
    if (this.parkRequest) throw new ParkSignal(this.parkRequest); // parking already: go no further
    const ordinal = this.receives++;
    if (this.replay.timedOut?.includes(ordinal)) return this.timeOut(ordinal);
    const message = await this.reservations.reserve(ordinal, address);
    if (message) return message;
    const parked = this.replay.parked;
    const sameWait = parked?.ordinal === ordinal && parked.address === address;
    const deadline = sameWait ? parked.deadline : timeoutMs === undefined ? null : this.now() + timeoutMs;
    if (deadline !== null && this.now() >= deadline) return this.timeOut(ordinal);
    this.parkRequest = { ordinal, address, deadline };
    throw new ParkSignal(this.parkRequest);
  }

  replyAddress(): string {
    return `${this.ids.runId}.${this.ids.step}.reply${this.replies++}`;
  }

  private timeOut(ordinal: number): undefined {
    this.timedOut.add(ordinal);
    return undefined;
  }
}

/** For code that may not wait on a mailbox (the items of a ParallelBatchNode fan-out). */
export const noMailbox: Mailbox = {
  send: () => Promise.reject(notHere()),
  receive: () => Promise.reject(notHere()),
  replyAddress: () => {
    throw notHere();
  },
};

function notHere(): QueueflowError {
  return new QueueflowError(
    'INVALID_OPTION',
    'mailboxes are not available inside the items of a ParallelBatchNode on an engine: use a ParallelBatchFlow, whose children are runs',
    { retryable: false },
  );
}
