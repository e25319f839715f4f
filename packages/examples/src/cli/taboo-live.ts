import type { StreamEntry } from '@queueflow/runtime';
import type { TabooSaid } from '../taboo/types.js';

type Agent = TabooSaid['agent'];

/**
 * The conversation as it happens, one line per thing an agent says, from the agents' streams:
 * a model's tokens are written as they come and the line ends when the agent has said it; a
 * line from a try that failed (a clue that broke the taboo) ends with `(tried again)`.
 *
 * The two agents' streams are followed apart, so an entry can arrive before the one it answers
 * (the hinter's next clue before the guess it judged). The players take turns, the hinter
 * first, so an entry of the agent whose turn it is not is held until the other has said its
 * line; {@link flush} writes what is still held when the streams end (a game that timed out).
 */
export class LiveTranscript {
  /** The line being written token by token: who, which turn, which try. */
  private open: { key: string; attempt: number } | undefined;
  private turn: Agent = 'hinter';
  private readonly held: Array<{ said: TabooSaid; entry: StreamEntry }> = [];

  constructor(private readonly write: (text: string) => void) {}

  say(said: TabooSaid, entry: StreamEntry): void {
    if (said.agent !== this.turn) {
      this.held.push({ said, entry });
      return;
    }
    this.print(said, entry);
    for (let next = this.nextHeld(); next; next = this.nextHeld()) this.print(next.said, next.entry);
  }

  /** Writes what is held, in the order it came, and ends an open line. */
  flush(): void {
    for (const { said, entry } of this.held.splice(0)) this.print(said, entry);
    this.closeLine();
  }

  private nextHeld(): { said: TabooSaid; entry: StreamEntry } | undefined {
    const index = this.held.findIndex(({ said }) => said.agent === this.turn);
    return index < 0 ? undefined : this.held.splice(index, 1)[0];
  }

  private print(said: TabooSaid, entry: StreamEntry): void {
    if ('end' in said) {
      this.closeLine();
      this.write(`  (the hinter ends the game: ${said.solved} of ${said.rounds} words guessed)\n`);
      return;
    }
    const key = `${said.agent} ${said.round}.${said.turn}`;
    if (this.open && (this.open.key !== key || this.open.attempt !== entry.attempt)) {
      this.closeLine(this.open.key === key ? ' (tried again)' : '');
    }
    const prefix = `  ${said.agent.padEnd(7)} ${said.round}.${said.turn}: `;
    if ('token' in said) {
      if (!this.open) this.write(prefix);
      this.open = { key, attempt: entry.attempt };
      this.write(said.token);
      return;
    }
    if (this.open) this.closeLine();
    else this.write(`${prefix}${said.text}\n`);
    // The line is said: the other agent's turn.
    this.turn = said.agent === 'hinter' ? 'guesser' : 'hinter';
  }

  private closeLine(suffix = ''): void {
    if (!this.open) return;
    this.write(`${suffix}\n`);
    this.open = undefined;
  }
}
