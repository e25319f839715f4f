import { nanoid } from 'nanoid';
import { jsonCopy, type Json } from '../json/json.js';
import {
  checkAddress,
  checkAddresses,
  checkMessageBody,
  checkTimeout,
  type Mailbox,
  type Message,
  type ReceiveOptions,
  type Received,
  type SendOptions,
} from './message.js';
import { checkTopic } from './topic.js';

/** A waiting `receive` (one address) or `receiveAny` (several: the first message answers it). */
interface Waiter {
  addresses: readonly string[];
  resolve: (received: Received | undefined) => void;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Mailboxes in this process's memory: FIFO per address, a waiting `receive` resolved by the
 * next `send`. What `flow.run` uses (one instance per process: {@link processMailboxes}); the
 * LocalEngine keeps its messages in one of its own.
 */
export class InMemoryMailboxes implements Mailbox {
  private readonly queues = new Map<string, Message[]>();
  private readonly waiters = new Map<string, Waiter[]>();
  private sequence = 0;

  async send(address: string, body: Json, options: SendOptions = {}): Promise<void> {
    this.post(checkAddress('send', address), this.message(address, body, options));
  }

  /**
   * Builds a message (the receiver gets its own copy of `body`), after checking the body as a
   * send to `address` must (see checkMessageBody).
   */
  message(address: string, body: Json, options: SendOptions = {}, id?: string): Message {
    checkMessageBody(body, `message body sent to '${address}'`);
    return {
      id: id ?? `m${Date.now().toString(36)}-${(this.sequence++).toString(36)}-${nanoid(6)}`,
      body: jsonCopy(body),
      ...(options.replyTo ? { replyTo: checkAddress('send', options.replyTo, 'replyTo') } : {}),
      sentAt: Date.now(),
    };
  }

  /** Appends a built message and wakes the first waiting receiver of `address`. */
  post(address: string, message: Message): void {
    this.deliver(address, message, 'tail');
  }

  /** Puts a message back at the head of `address` (a receiving step that did not commit). */
  putBack(address: string, message: Message): void {
    this.deliver(address, message, 'head');
  }

  /** Hands `message` to the first waiting receiver of `address`, else queues it at `end`. */
  private deliver(address: string, message: Message, end: 'head' | 'tail'): void {
    const waiter = this.waiters.get(address)?.[0];
    if (waiter) {
      this.settle(waiter, { address, message });
      return;
    }
    const queue = this.queues.get(address) ?? [];
    if (end === 'head') queue.unshift(message);
    else queue.push(message);
    this.queues.set(address, queue);
  }

  /** The next message of `address` now, or `undefined`. */
  take(address: string): Message | undefined {
    const queue = this.queues.get(address);
    const message = queue?.shift();
    if (queue && queue.length === 0) this.queues.delete(address);
    return message;
  }

  /** Messages waiting at `address`. */
  size(address: string): number {
    return this.queues.get(address)?.length ?? 0;
  }

  async receive(address: string, options: ReceiveOptions = {}): Promise<Message | undefined> {
    checkAddress('receive', address);
    const timeoutMs = checkTimeout('receive', options.timeoutMs);
    return (await this.wait([address], timeoutMs))?.message;
  }

  receiveAny(addresses: readonly string[], options: ReceiveOptions = {}): Promise<Received | undefined> {
    const checked = checkAddresses('receiveAny', addresses);
    return this.wait(checked, checkTimeout('receiveAny', options.timeoutMs));
  }

  /** The head of the first of `addresses` holding a message, else the first to arrive, else `undefined` after `timeoutMs`. */
  private wait(addresses: readonly string[], timeoutMs: number | undefined): Promise<Received | undefined> {
    for (const address of addresses) {
      const message = this.take(address);
      if (message) return Promise.resolve({ address, message });
    }
    if (timeoutMs === 0) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      const waiter: Waiter = { addresses, resolve, timer: undefined };
      if (timeoutMs !== undefined) waiter.timer = setTimeout(() => this.settle(waiter, undefined), timeoutMs);
      for (const address of addresses) {
        const list = this.waiters.get(address) ?? [];
        list.push(waiter);
        this.waiters.set(address, list);
      }
    });
  }

  /** Answers a waiter, which then waits on none of its addresses any more. */
  private settle(waiter: Waiter, received: Received | undefined): void {
    clearTimeout(waiter.timer);
    for (const address of waiter.addresses) {
      const list = this.waiters.get(address);
      const index = list?.indexOf(waiter) ?? -1;
      if (index >= 0) list!.splice(index, 1);
      if (list?.length === 0) this.waiters.delete(address);
    }
    waiter.resolve(received);
  }

  replyAddress(): string {
    return `reply.${nanoid(12)}`;
  }

  /** No agent runs without an engine: the body is checked and goes nowhere. */
  async publish(topic: string, body: Json): Promise<void> {
    checkTopic('publish', topic);
    checkMessageBody(body, `message body published on '${topic}'`);
  }
}

/** The mailboxes of `flow.run` in this process. */
export const processMailboxes = new InMemoryMailboxes();
