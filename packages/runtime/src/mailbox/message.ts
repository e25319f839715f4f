import { assertJson, type Json } from '../json/json.js';
import { InvalidArgumentError, QueueflowError } from '../errors/queueflow-error.js';
import { checkWellFormed } from '../core/well-formed.js';

/**
 * A message as a receiver gets it. `id` is stable: a message delivered again after a crash
 * (at-least-once delivery) has the same id, so a receiver can recognise it.
 */
export interface Message<B extends Json = Json> {
  id: string;
  body: B;
  /** The address to answer to (set by `ask`); answer with `node.reply(message, body)`. */
  replyTo?: string;
  /** Epoch milliseconds when it was sent (committed, on the engines). */
  sentAt: number;
  /**
   * The trace context of the step (or client call) that sent it, as a W3C traceparent, when a
   * tracer provider was registered there: the receiving step's span links to it.
   */
  trace?: string;
  /**
   * Who sent it: an agent's address for a message sent from its turn, a run's id for one sent
   * from another run's step; absent for `engine.send` and `engine.publish`. A handed-off message
   * (`handoff` with `transfer`) keeps the sender of the message the turn handled.
   */
  from?: string;
  /** The agents that handed it on (`handoff` with `transfer`), first first. */
  via?: string[];
  /**
   * An ask from an agent's turn: the agents whose turns wait for its answer, the first asker
   * first (the turn that asked last). An ask to one of them would close a wait cycle (`ASK_CYCLE`).
   */
  waiting?: string[];
  /**
   * The conversation it belongs to (README "Conversations"): set by the `conversation` option of
   * `engine.send`, and carried by every message a turn handling it sends.
   */
  conversation?: string;
  /**
   * A forked conversation (`engine.forkConversation`): each participant's address → its fork's.
   * Carried by every message a turn handling it sends, and those sends go to the forks.
   */
  forks?: Record<string, string>;
  /** The topic it was published on (`publish`); every subscriber gets the same `id`. */
  topic?: string;
  /** The name of the reminder that sent it (`this.remind`); `body` is the reminder's. */
  reminder?: string;
  /**
   * The store's answer to an ask that closed a wait cycle with turns already waiting (each asking
   * the next): the chain, each waiting for the next one's answer, the agent asked first and last. The ask rejects with `ASK_CYCLE` naming it.
   */
  cycle?: string[];
}

export interface SendOptions {
  /** Where the receiver should answer. */
  replyTo?: string;
}

export interface ReceiveOptions {
  /**
   * How long to wait for a message, in milliseconds; `receive` then resolves `undefined`.
   * @defaultValue wait as long as it takes
   */
  timeoutMs?: number;
}

/** What `receiveAny` took: the first message of one of several mailboxes, and which. */
export interface Received<B extends Json = Json> {
  /** The mailbox it came from: one of the addresses asked. */
  address: string;
  message: Message<B>;
}

/**
 * Durable FIFO queues of messages by address: how agents talk. Node code reaches it through
 * `this.send` / `this.receive` / `this.ask`; outside any run through `engine.send`.
 *
 * On the engines a message counts as consumed only when the step that received it commits
 * (a crash delivers it again, same id), and the messages a step sends leave when it commits
 * (or when it parks waiting for a message, so that `ask` works).
 */
export interface Mailbox {
  /**
   * Appends `body` to the queue of `address`.
   * @throws QueueflowError `NOT_JSON` for a body that would not survive JSON, `PAYLOAD_TOO_LARGE`
   *   for one over {@link MAX_MESSAGE_BYTES}; TypeError (code `INVALID_ARGUMENT`) for a bad address.
   */
  send(address: string, body: Json, options?: SendOptions): Promise<void>;
  /**
   * The next message for `address`, waiting for one if none is there; `undefined` after
   * `timeoutMs`. On the engines a run that waits is parked: it holds no worker and no connection.
   */
  receive(address: string, options?: ReceiveOptions): Promise<Message | undefined>;
  /**
   * The first message of several mailboxes (select): the head of the first of `addresses` that
   * holds one, in the order given, else the first to arrive at any of them; `undefined` after
   * `timeoutMs`. Only that message is taken: the others stay in their mailboxes. On the engines a
   * run that waits is parked on every address at once, as `receive` parks on one.
   * @throws TypeError (code `INVALID_ARGUMENT`) for an empty list, a bad or repeated address, or
   *   (on an engine) an agent's inbox.
   */
  receiveAny(addresses: readonly string[], options?: ReceiveOptions): Promise<Received | undefined>;
  /** A fresh address for answers to one `ask`. */
  replyAddress(): string;
  /**
   * Publishes `body` on `topic`: each agent type of the engine that subscribes to it (its
   * `subscribe` option) gets it at the keys its mapping names, all with the same message id.
   * On an engine it leaves when the step commits, as a send does. Without an engine (`flow.run`)
   * no agent subscribes and it goes nowhere.
   * @throws as {@link Mailbox.send}, and QueueflowError `INVALID_OPTION` for a bad topic name.
   */
  publish(topic: string, body: Json): Promise<void>;
}

/** Largest message body, serialized as JSON, in bytes (1 MiB): mailboxes are for messages, `shared` for data. */
export const MAX_MESSAGE_BYTES = 1024 * 1024;

/**
 * Checks a message body: it survives JSON and is at most {@link MAX_MESSAGE_BYTES} serialized.
 *
 * @param where - how to name the body in errors, e.g. `message body sent to 'inbox'`.
 * @throws QueueflowError `NOT_JSON` naming the path; `PAYLOAD_TOO_LARGE` naming the size and the limit.
 */
export function checkMessageBody(body: unknown, where: string): Json {
  assertJson(body, where);
  const bytes = Buffer.byteLength(JSON.stringify(body));
  if (bytes > MAX_MESSAGE_BYTES) {
    throw new QueueflowError(
      'PAYLOAD_TOO_LARGE',
      `${where} is ${bytes} bytes, over the limit of ${MAX_MESSAGE_BYTES} bytes (MAX_MESSAGE_BYTES)`,
      {
        retryable: false,
      },
    );
  }
  return body as Json;
}

/**
 * Checks an address: a non-empty string without spaces, well-formed Unicode.
 *
 * @param option - the argument or option that holds it, for errors. @defaultValue 'address'
 * @throws TypeError (code `INVALID_ARGUMENT`) naming the bad value; QueueflowError
 *   `INVALID_OPTION` for one holding a lone surrogate (see {@link checkWellFormed}).
 */
export function checkAddress(owner: string, address: unknown, option = 'address'): string {
  if (typeof address !== 'string' || address.length === 0 || /\s/.test(address)) {
    throw new InvalidArgumentError(
      `${owner}: expected \`${option}\` to be a non-empty string without spaces, got \`${String(address)}\``,
    );
  }
  return checkWellFormed(owner, option, address);
}

/**
 * Checks the addresses of a `receiveAny`: a non-empty array of distinct addresses (see {@link checkAddress}).
 * @throws TypeError (code `INVALID_ARGUMENT`) naming the bad value and its index.
 */
export function checkAddresses(owner: string, addresses: unknown): string[] {
  if (!Array.isArray(addresses) || addresses.length === 0)
    throw new InvalidArgumentError(
      `${owner}: expected \`addresses\` to be a non-empty array of addresses, got \`${JSON.stringify(addresses) ?? String(addresses)}\``,
    );
  const seen = new Set<string>();
  return addresses.map((address: unknown, i) => {
    const checked = checkAddress(owner, address, `addresses[${i}]`);
    if (seen.has(checked))
      throw new InvalidArgumentError(`${owner}: \`addresses[${i}]\` repeats '${checked}': each mailbox once`);
    seen.add(checked);
    return checked;
  });
}

/**
 * Checks a `timeoutMs` option: absent, or a finite number of milliseconds from 0 and up.
 *
 * @throws TypeError (code `INVALID_ARGUMENT`) naming the bad value.
 */
export function checkTimeout(owner: string, timeoutMs: unknown): number | undefined {
  if (timeoutMs === undefined) return undefined;
  if (typeof timeoutMs !== 'number' || !(timeoutMs >= 0) || !Number.isFinite(timeoutMs)) {
    throw new InvalidArgumentError(
      // eslint-disable-next-line @typescript-eslint/no-base-to-string -- the value as received, as the other checks show it
      `${owner}: expected \`timeoutMs\` to be a finite number of milliseconds from 0 and up, got \`${String(timeoutMs)}\``,
    );
  }
  return timeoutMs;
}
