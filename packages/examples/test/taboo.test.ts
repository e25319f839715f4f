/**
 * The Taboo example offline: the referee's rules, the rule-based players, and the whole game on
 * a LocalEngine of `playTaboo`'s own and on one given to it, which give the same transcript.
 */
import { LocalEngine, setWarningHandler } from '@queueflow/runtime';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  breaksTaboo,
  cardsFor,
  formatTranscript,
  isRightGuess,
  playTaboo,
  ruleBasedGuess,
  ruleBasedHint,
  TABOO_DECK,
  tabooGuesser,
  tabooHinter,
  type HinterState,
  type TabooGame,
} from '../src/index.js';
import { waitFor } from '../../../tests/support/wait-for.js';
import { EXPECTED_GAME } from './taboo-expected.js';

describe('Taboo rules', () => {
  it('a hint breaks the taboo when it says the word or a forbidden word, plurals included', () => {
    const card = { word: 'apple', forbidden: ['fruit', 'tree'] };
    expect(breaksTaboo('It grows on trees', card)).toBe('tree');
    expect(breaksTaboo('Apples keep the doctor away', card)).toBe('apple');
    expect(breaksTaboo('Newton saw one drop', card)).toBeUndefined();
    expect(breaksTaboo('A FRUIT!', card)).toBe('fruit');
  });

  it('a guess is right whatever its case, punctuation or plural', () => {
    expect(isRightGuess('Apple', 'apple')).toBe(true);
    expect(isRightGuess(' apples. ', 'apple')).toBe(true);
    expect(isRightGuess('pineapple', 'apple')).toBe(false);
  });

  it("every card's first clue breaks its taboo and the hinter skips it; the other clues are fair", () => {
    for (const card of TABOO_DECK) {
      expect(breaksTaboo(card.clues[0]!, card), card.word).toBeDefined();
      for (const clue of card.clues.slice(1)) expect(breaksTaboo(clue, card), clue).toBeUndefined();
      expect(ruleBasedHint(card, 1)).toBe(card.clues[1]);
    }
  });

  it('the rule-based guesser picks the word the hints call to mind most, never the same wrong guess twice', () => {
    expect(ruleBasedGuess(['It waddles and swims to catch fish'], [])).toBe('penguin');
    expect(ruleBasedGuess(['It waddles and swims to catch fish'], ['penguin'])).toBe('seal');
  });

  it('cardsFor picks cards by word and names an unknown one', () => {
    expect(cardsFor(['Piano', 'apple']).map((c) => c.word)).toEqual(['piano', 'apple']);
    expect(() => cardsFor(['unicorn'])).toThrow(/no card 'unicorn' in the deck \(apple, piano/);
    expect(cardsFor().map((c) => c.word)).toEqual(TABOO_DECK.map((c) => c.word));
    expect(() => cardsFor([])).toThrow('expected `words` to name at least one card, got an empty list');
  });
});

describe('Taboo game, offline, embedded', () => {
  let onItsOwn: TabooGame;
  let onLocalEngine: TabooGame;
  const engine = new LocalEngine({ flows: [], agents: [tabooHinter, tabooGuesser] });

  beforeAll(async () => {
    delete process.env.OPENAI_BASE_URL; // never a model in tests
    setWarningHandler((code, message) => {
      throw new Error(`unexpected warning ${code}: ${message}`);
    });
    onItsOwn = await playTaboo();
    onLocalEngine = await playTaboo({ engine });
  });

  afterAll(async () => {
    setWarningHandler(null);
    await engine.close();
  });

  it('plays the whole deck with the rule-based players: the same game every time', () => {
    expect(formatTranscript(onItsOwn.transcript)).toBe(EXPECTED_GAME);
    expect(onItsOwn.solved).toBe(5);
    expect(onItsOwn.rounds).toBe(6);
    expect(onItsOwn.transcript.every((e) => e.kind !== 'hint' || e.source === 'rules')).toBe(true);
  });

  it("gives the same transcript and guesser log on playTaboo's own engine and on one given to it", () => {
    expect(onLocalEngine.transcript).toEqual(onItsOwn.transcript);
    expect(onLocalEngine.guesserLog).toEqual(onItsOwn.guesserLog);
  });

  it('each agent consumes every message once: 10 guesses for the hinter, 10 hints and the end for the guesser', () => {
    for (const game of [onItsOwn, onLocalEngine]) {
      expect(game.hinter.received).toHaveLength(10);
      expect(game.guesser.received).toHaveLength(11);
      expect(new Set([...game.hinter.received, ...game.guesser.received]).size).toBe(21);
    }
  });

  it('plays with players "llm" but no endpoint configured: the rule-based players stand in, no network', async () => {
    const game = await playTaboo({ engine, players: 'llm', words: ['piano'] });
    expect(game.transcript[0]).toEqual({
      kind: 'hint',
      round: 1,
      turn: 1,
      text: TABOO_DECK[1]!.clues[1],
      source: 'rules',
    });
    expect(game.solved).toBe(1);
  });

  it('each turn handles one message: the hinter a start and 10 guesses, the guesser its join, 10 hints and the end', async () => {
    const turns = async (ref: string): Promise<string[]> =>
      (await engine.agentHistory(ref)).map((turn) => `${turn.status} ${(turn.message?.body as { type: string }).type}`);
    expect(await turns(onLocalEngine.hinter.ref)).toEqual(['completed start', ...Array(10).fill('completed guess')]);
    expect(await turns(onLocalEngine.guesser.ref)).toEqual([
      'completed join',
      ...Array(10).fill('completed hint'),
      'completed end',
    ]);
  });

  it('ends the game when the guesser goes quiet: the reminder of the last hint (turn timeout)', async () => {
    const engineAlone = new LocalEngine({ flows: [], agents: [tabooHinter] }); // nobody takes the guesser's turns
    const ref = tabooHinter.ref('nobody-guesses');
    try {
      const start = {
        type: 'start',
        cards: cardsFor(['apple']),
        maxTurns: 3,
        turnTimeoutMs: 200,
        settings: {},
      } as const;
      await engineAlone.send(ref, start);
      const hinter = await waitFor('the hinter to end the game', async () => {
        const info = await engineAlone.agent(ref);
        return info?.running === undefined && (info?.state as unknown as HinterState | undefined)?.ended
          ? info
          : undefined;
      });
      const state = hinter.state as unknown as HinterState;
      expect(state.ended).toBe('timeout');
      expect(formatTranscript(state.transcript)).toContain(
        'Game ended: the guesser stopped answering (0 of 0 words guessed)',
      );
      expect(hinter.reminders).toEqual([]);
    } finally {
      await engineAlone.close();
    }
  });
});
