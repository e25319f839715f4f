import type { StreamEntry } from '@queueflow/runtime';
import type { TabooSaid } from '../taboo/types.js';

/**
 * The conversation as it happens, one line per thing an agent says, from the agents' streams:
 * a model's tokens are written as they come and the line ends when the agent has said it; a
 * line from a try that failed (a clue that broke the taboo) ends with `(tried again)`.
 */
export class LiveTranscript {
  /** The line being written token by token: who, which turn, which try. */
  private open: { key: string; attempt: number } | undefined;

  constructor(private readonly write: (text: string) => void) {}

  say(said: TabooSaid, entry: StreamEntry): void {
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
  }

  private closeLine(suffix = ''): void {
    if (!this.open) return;
    this.write(`${suffix}\n`);
    this.open = undefined;
  }
}
