import { QueueflowError } from '../errors/queueflow-error.js';
import { jsonCopy, type Json } from '../json/json.js';
import { checkMessageBody, type Message } from '../mailbox/message.js';

/**
 * Reminders of keyed agents (README "Agents"): a message an agent sends itself later, set from
 * one of its turns with `this.remind(name, …)`. The rules of when one is due and what a late one
 * delivers are written here once; the Redis store's fire-reminders.lua mirrors {@link fireReminder}.
 */

/** Options of `this.remind`. Times are epoch milliseconds, durations milliseconds. */
export interface ReminderOptions {
  /** Due this long after now (the store's clock). */
  afterMs?: number;
  /** Due at this time (the store's clock). */
  at?: number;
  /** Repeats this often until cancelled; the first tick is `afterMs`/`at`, else one period from now. */
  every?: number;
  /** The body of the message it sends. @defaultValue null */
  body?: Json;
  /**
   * What a reminder that could not fire on time delivers (its workers were down, or Redis was):
   * `'once'` one message for all its missed ticks, `'skip'` none (the next tick comes on time).
   * A tick is missed when it is a whole period late (`every`), or, for a one-shot reminder,
   * 60 s late (ONE_SHOT_GRACE_MS). Missed ticks are never replayed one by one. @defaultValue 'once'
   */
  missed?: 'skip' | 'once';
}

/** A reminder as stored: when it is due next, and what it sends. */
export interface StoredReminder {
  /** Epoch ms. */
  due: number;
  /** The period of a repeating reminder, in ms. */
  every?: number;
  body: Json;
  missed: 'skip' | 'once';
}

/** What a turn's step does to its agent's reminders: set one (replacing one of the name) or cancel it. */
export type ReminderChange = { name: string; cancel: true } | { name: string; reminder: StoredReminder };

/** How late a one-shot reminder may fire and still count as on time, in ms (60 s). */
export const ONE_SHOT_GRACE_MS = 60_000;

/** Shortest period of a repeating reminder, in ms. */
const MIN_EVERY_MS = 10;

const NAME = /^[A-Za-z0-9_.:-]{1,100}$/;

/**
 * The reminder `this.remind(name, options)` stores, checked.
 * @param now - the store's clock, epoch ms.
 * @throws QueueflowError `INVALID_OPTION` naming the bad name or option.
 */
export function planReminder(name: unknown, options: ReminderOptions, now: number): StoredReminder {
  checkReminderName(name);
  const owner = `remind('${name as string}')`;
  if (typeof options !== 'object' || options === null) throw invalid(owner, 'options', 'an object', options);
  const known = ['afterMs', 'at', 'every', 'body', 'missed'];
  for (const option of Object.keys(options))
    if (!known.includes(option)) throw invalid(owner, option, `one of ${known.join(', ')}`, option);
  const { afterMs, at, every } = options;
  if (afterMs !== undefined && at !== undefined) throw invalid(owner, 'at', 'absent when `afterMs` is given', at);
  if (afterMs !== undefined && !(Number.isFinite(afterMs) && afterMs >= 0))
    throw invalid(owner, 'afterMs', 'a finite number of milliseconds from 0', afterMs);
  if (at !== undefined && !Number.isFinite(at)) throw invalid(owner, 'at', 'an epoch time in milliseconds', at);
  if (every !== undefined && !(Number.isFinite(every) && every >= MIN_EVERY_MS))
    throw invalid(owner, 'every', `a period of at least ${MIN_EVERY_MS} milliseconds`, every);
  if (afterMs === undefined && at === undefined && every === undefined)
    throw invalid(owner, 'afterMs', 'given (or `at`, or `every`)', undefined);
  const missed = options.missed ?? 'once';
  if (missed !== 'skip' && missed !== 'once') throw invalid(owner, 'missed', "'skip' or 'once'", missed);
  const body = checkMessageBody(options.body ?? null, `the body of reminder '${name as string}'`);
  const due = at ?? now + (afterMs ?? every!);
  return { due, ...(every === undefined ? {} : { every }), body: jsonCopy(body), missed };
}

/** @throws QueueflowError `INVALID_OPTION` for a name that is not 1 to 100 letters, digits or `_ . : -`. */
export function checkReminderName(name: unknown): string {
  if (typeof name !== 'string' || !NAME.test(name))
    throw new QueueflowError(
      'INVALID_OPTION',
      `remind: expected a name of 1 to 100 letters, digits or _ . : -, got ${typeof name === 'string' ? JSON.stringify(name.slice(0, 80)) : typeof name}`,
      { retryable: false },
    );
  return name;
}

/**
 * What a reminder due at or before `now` does: the message it delivers (none for a missed tick
 * under `'skip'`), and when it is due next (a repeating one: the first tick after `now`).
 */
export function fireReminder(
  name: string,
  reminder: StoredReminder,
  now: number,
): { message?: Message; next?: number } {
  const late = now - reminder.due;
  let deliver: boolean;
  let next: number | undefined;
  if (reminder.every !== undefined) {
    const ticks = Math.floor(late / reminder.every) + 1;
    next = reminder.due + ticks * reminder.every;
    deliver = ticks === 1 || reminder.missed === 'once';
  } else {
    deliver = late < ONE_SHOT_GRACE_MS || reminder.missed === 'once';
  }
  const message: Message = {
    id: reminderMessageId(name, reminder.due),
    body: reminder.body,
    sentAt: now,
    reminder: name,
  };
  return { ...(deliver ? { message } : {}), ...(next === undefined ? {} : { next }) };
}

/** The id of the message a reminder's tick due at `due` sends: the same should it be fired twice. */
function reminderMessageId(name: string, due: number): string {
  return `r.${name}.${due}`;
}

/** A reminder as `engine.agent` lists it. */
export function reminderInfo(name: string, reminder: StoredReminder): ReminderInfo {
  return { name, due: reminder.due, ...(reminder.every === undefined ? {} : { every: reminder.every }) };
}

/** A pending reminder of an agent (`engine.agent(ref).reminders`). */
export interface ReminderInfo {
  name: string;
  /** When it fires next, epoch ms. */
  due: number;
  /** Its period, in ms, when it repeats. */
  every?: number;
}

function invalid(owner: string, option: string, expected: string, got: unknown): QueueflowError {
  return new QueueflowError(
    'INVALID_OPTION',
    `${owner}: expected \`${option}\` to be ${expected}, got ${JSON.stringify(got) ?? String(got)}`,
    {
      retryable: false,
    },
  );
}
