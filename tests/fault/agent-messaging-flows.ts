/**
 * The agent types of the agent-messaging fault tests, loaded by worker processes and the test.
 * - `alarm` sets the reminder its message names and records each ring (id, when sent);
 * - `relay` asks the next agent of its message's path and answers with what came back, or the
 *   code of its ask's error;
 * - `scripted` runs the ops of its message in turn: sends to and receives at gates (plain
 *   mailboxes), and asks, answering as `relay` does;
 * - `announcer` publishes on `fault.news` in `prep`, then waits `execMs` in `exec` (a SIGKILL lands
 *   there, before the commit), writing its pid to `<markerDir>/current` first;
 * - `listener` records the ids of the `fault.news` bodies it gets (keys from the body's `to`).
 */
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defineAgent, Node, type JsonObject, type ReminderOptions } from '@queueflow/runtime';

interface Rings extends JsonObject {
  rings: { id: string; sentAt: number }[];
}

class Alarm extends Node<Rings> {
  override prep(state: Rings): undefined {
    const message = this.message!;
    if (message.reminder !== undefined) state.rings.push({ id: message.id, sentAt: message.sentAt });
    else this.remind('ring', message.body as ReminderOptions);
    return undefined;
  }
}
export const alarm = defineAgent<Rings>('fault-alarm', {
  state: () => ({ rings: [] }),
  turn: () => new Alarm({ name: 'alarm' }),
});

class Relay extends Node {
  override async prep(): Promise<void> {
    const message = this.message!;
    const [next, ...rest] = (message.body as { path: string[] }).path;
    let answer: JsonObject;
    if (next === undefined) answer = { reached: true };
    else {
      try {
        answer = ((await this.ask(next, { path: rest }, { timeoutMs: 120_000 }))?.body as JsonObject) ?? {
          timedOut: true,
        };
      } catch (error) {
        answer = { code: (error as { code?: string }).code ?? null, pid: process.pid };
      }
    }
    if (message.replyTo) await this.reply(message, answer);
  }
}
export const relay = defineAgent('fault-relay', { state: () => ({}), turn: () => new Relay({ name: 'relay' }) });

type Op = { send: string } | { receive: string } | { ask: string };
/** Runs its message's ops (`send` to, `receive` at a gate, `ask` an agent), answering as `relay`. */
class Scripted extends Node {
  override async prep(): Promise<void> {
    const message = this.message!;
    let answer: JsonObject = { reached: true, pid: process.pid };
    for (const op of (message.body as { ops: Op[] }).ops) {
      if ('send' in op) await this.send(op.send, {});
      else if ('receive' in op) await this.receive(op.receive, { timeoutMs: 120_000 });
      else {
        try {
          answer = ((await this.ask(op.ask, { ops: [] }, { timeoutMs: 120_000 }))?.body as JsonObject) ?? {
            timedOut: true,
          };
        } catch (error) {
          const { code, message: text } = error as { code?: string; message: string };
          answer = { code: code ?? null, message: text, pid: process.pid };
        }
      }
    }
    if (message.replyTo) await this.reply(message, answer);
  }
}
export const scripted = defineAgent('fault-scripted', {
  state: () => ({}),
  turn: () => new Scripted({ name: 'scripted' }),
});

interface News extends JsonObject {
  to: string[];
  execMs: number;
  markerDir: string;
}
class Announce extends Node<JsonObject, Record<string, never>> {
  override async prep(): Promise<News> {
    const body = this.message!.body as News;
    await this.publish('fault.news', { to: body.to });
    return body;
  }
  override async exec(body: News): Promise<void> {
    const partial = join(body.markerDir, `current.${process.pid}.tmp`);
    writeFileSync(partial, String(process.pid));
    renameSync(partial, join(body.markerDir, 'current')); // atomic on one file system
    await new Promise((resolve) => setTimeout(resolve, body.execMs));
  }
}
export const announcer = defineAgent('fault-announcer', {
  state: () => ({}),
  turn: () => new Announce({ name: 'announce' }),
});

class Listen extends Node<{ got: string[] }> {
  override prep(state: { got: string[] }): undefined {
    state.got.push(this.message!.id);
    return undefined;
  }
}
export const listener = defineAgent<{ got: string[] }>('fault-listener', {
  state: () => ({ got: [] }),
  turn: () => new Listen({ name: 'listen' }),
  subscribe: { 'fault.news': (body) => (body as { to: string[] }).to },
});

/** Two players that answer each other for ever: a runaway loop (a conversation's budget stops it). */
class Bounce extends Node<{ hits: number }> {
  override async prep(state: { hits: number }): Promise<void> {
    state.hits += 1;
    const other = this.agentKey === 'ping' ? 'pong' : 'ping';
    await this.send(player.ref(other), { hit: state.hits });
  }
}
export const player = defineAgent('fault-player', {
  state: () => ({ hits: 0 }),
  turn: () => new Bounce({ name: 'bounce' }),
});
