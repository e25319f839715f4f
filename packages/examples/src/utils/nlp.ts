import winkNLP, { type Model, type WinkMethods } from 'wink-nlp';
import model from 'wink-eng-lite-web-model';

/**
 * The lexeme feature of a loaded wink-nlp core model: `hash` maps a lexeme's text to its index
 * in `list`; the first `intrinsicSize` entries are the model's vocabulary.
 */
interface LexemeFeature {
  hash: Record<string, number>;
  list: string[];
  intrinsicSize: number;
}

/**
 * Out-of-vocabulary lexemes a wink-nlp instance may hold before it is replaced by a new one: the
 * forgotten ones still take memory (see {@link ForgetfulNlp}); the whole corpus adds about
 * 250,000 to the analyser's instance.
 */
const MAX_LEARNED_LEXEMES = 200_000;

/**
 * The model's custom-entity meta model, loaded once: `wink-eng-lite-web-model` 1.8 re-stringifies
 * the same JSON on every load (`machines = JSON.stringify(machines)`), so that the 20th or so
 * wink-nlp instance of a process fails with `RangeError: Invalid string length`.
 */
let metaCerModel: unknown;

/**
 * A wink-nlp instance whose `readDoc` reads each text as a new instance would, whatever it read
 * before.
 *
 * wink-nlp adds every out-of-vocabulary word it reads to its instance's lexeme cache, and its
 * tokenizer consults that cache: text glued to punctuation is split one way when the word is
 * known and another when it is not. So a shared instance tokenizes the same text differently
 * depending on the documents it read earlier (corpus email spam-2/00941: `e-marketing...` gives
 * `e-marketing` `.` `..` in a fresh instance, `e-marketing` `...` once the word has been seen,
 * with different token and sentence counts). Of 300 corpus emails read after 2,000 others, 22
 * got other tokens, tags, sentences or readability figures from a shared instance than from a
 * fresh one. The pipeline's records must not depend on which process read which documents in
 * which order (the same records embedded and on any number of workers), and a new instance per
 * document costs about 70 ms.
 *
 * So before each `readDoc` the learned words are removed from the lexeme hash, the only place
 * the tokenizer and the cache look words up: every text then meets the model's own vocabulary
 * alone, as in a fresh instance. The lexeme list and wink-nlp's table of their properties only
 * grow (wink-nlp has no way to shrink them), and a word read again is added again under a new
 * index; indexes of learned words are never compared with each other, only with the vocabulary
 * size. When the instance has learned {@link MAX_LEARNED_LEXEMES} words it is replaced by a new
 * one. The tests check that a text analyses the same fresh, again, and after hundreds of others.
 *
 * This reaches into wink-nlp's loaded model (`features.lexeme`, from `wink-eng-lite-web-model`
 * 1.x with wink-nlp 2.x); `attach` fails loudly when that shape is missing. It also loads the
 * model's custom-entity part once for every instance (see {@link metaCerModel}).
 */
class ForgetfulNlp {
  private instance!: WinkMethods;
  private lexemes!: LexemeFeature;
  /** Entries of `lexemes.list` from here on may be in `lexemes.hash`. */
  private clean = 0;

  constructor(private readonly pipe: string[]) {
    this.attach();
  }

  get its(): WinkMethods['its'] {
    return this.instance.its;
  }

  get as(): WinkMethods['as'] {
    return this.instance.as;
  }

  /** Reads `text` as a fresh instance would. Use the document before the next `readDoc`. */
  readDoc(text: string): ReturnType<WinkMethods['readDoc']> {
    this.forget();
    return this.instance.readDoc(text);
  }

  private forget(): void {
    const { hash, list, intrinsicSize } = this.lexemes;
    if (list.length - intrinsicSize > MAX_LEARNED_LEXEMES) {
      this.attach();
      return;
    }
    for (let index = Math.max(this.clean, intrinsicSize); index < list.length; index++) {
      const text = list[index]!;
      if (hash[text] === index) delete hash[text];
    }
    this.clean = list.length;
  }

  private attach(): void {
    let core: { features?: { lexeme?: Partial<LexemeFeature> } } | undefined;
    const loader = model as unknown as { core: () => typeof core; metaCER: () => unknown };
    metaCerModel ??= loader.metaCER();
    const capturing = {
      ...(model as unknown as Record<string, unknown>),
      core: () => (core = loader.core()),
      metaCER: () => metaCerModel,
    } as unknown as Model;
    this.instance = winkNLP(capturing, this.pipe);
    const lexeme = core?.features?.lexeme;
    if (!lexeme?.hash || !Array.isArray(lexeme.list) || typeof lexeme.intrinsicSize !== 'number') {
      throw new Error(
        'wink-nlp: the loaded model has no features.lexeme { hash, list, intrinsicSize } (another model version?)',
      );
    }
    this.lexemes = lexeme as LexemeFeature;
    this.clean = lexeme.list.length;
  }
}

/** The part of wink-nlp's API the pipeline uses. */
export type Nlp = Pick<WinkMethods, 'readDoc' | 'its' | 'as'>;

let analyser: ForgetfulNlp | undefined;
let tokenizer: ForgetfulNlp | undefined;

/**
 * The process-wide wink-nlp instance for analysis (English lite model; sentence boundaries and
 * parts of speech, which sentence importance and readability need), created on first use. The
 * model takes a moment and some memory to load, so every node visit in this process shares it;
 * it is never put in `shared` (each worker process builds its own). Each `readDoc` reads its text
 * as a fresh instance would (see {@link ForgetfulNlp}), so results do not depend on what the
 * process read before.
 */
export function getNlp(): Nlp {
  analyser ??= new ForgetfulNlp(['sbd', 'pos']);
  return analyser;
}

/** A process-wide wink-nlp instance that only tokenises (about twice as fast): for features. */
export function getTokenizer(): Nlp {
  tokenizer ??= new ForgetfulNlp([]);
  return tokenizer;
}
