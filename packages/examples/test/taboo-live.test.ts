import { describe, expect, it } from 'vitest';
import type { StreamEntry } from '@queueflow/runtime';
import { LiveTranscript } from '../src/cli/taboo-live.js';
import type { TabooSaid } from '../src/taboo/types.js';

function entry(said: TabooSaid, attempt = 1): [TabooSaid, StreamEntry] {
  return [said, { id: '0-1', step: 1, attempt, node: 'n', at: 0, data: said }];
}

function transcript(): { live: LiveTranscript; text: () => string } {
  let text = '';
  return { live: new LiveTranscript((t) => (text += t)), text: () => text };
}

describe('LiveTranscript', () => {
  it("holds an entry that arrives before the one it answers, then writes both in the players' turns", () => {
    const { live, text } = transcript();
    live.say(...entry({ agent: 'hinter', round: 1, turn: 1, text: 'It erupts' }));
    // The hinter's next clue is read from its stream before the guess it judged.
    live.say(...entry({ agent: 'hinter', round: 1, turn: 2, text: 'Etna is one' }));
    expect(text()).toBe('  hinter  1.1: It erupts\n');
    live.say(...entry({ agent: 'guesser', round: 1, turn: 1, text: 'earthquake' }));
    live.say(...entry({ agent: 'hinter', end: 'played', solved: 0, rounds: 1 }));
    live.say(...entry({ agent: 'guesser', round: 1, turn: 2, text: 'volcano' }));
    expect(text()).toBe(
      [
        '  hinter  1.1: It erupts',
        '  guesser 1.1: earthquake',
        '  hinter  1.2: Etna is one',
        '  guesser 1.2: volcano',
        '  (the hinter ends the game: 0 of 1 words guessed)',
        '',
      ].join('\n'),
    );
  });

  it('writes streamed tokens as one line and marks a try that failed', () => {
    const { live, text } = transcript();
    live.say(...entry({ agent: 'hinter', round: 1, turn: 1, token: 'It ' }));
    live.say(...entry({ agent: 'hinter', round: 1, turn: 1, token: 'says volcano' }));
    live.say(...entry({ agent: 'hinter', round: 1, turn: 1, token: 'It erupts' }, 2));
    live.say(...entry({ agent: 'hinter', round: 1, turn: 1, text: 'It erupts' }, 2));
    expect(text()).toBe('  hinter  1.1: It says volcano (tried again)\n  hinter  1.1: It erupts\n');
  });

  it('flush writes what is still held when the streams end', () => {
    const { live, text } = transcript();
    live.say(...entry({ agent: 'guesser', round: 1, turn: 1, text: 'volcano' }));
    expect(text()).toBe('');
    live.flush();
    expect(text()).toBe('  guesser 1.1: volcano\n');
  });
});
