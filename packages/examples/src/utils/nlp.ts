import winkNLP, { type WinkMethods } from 'wink-nlp';
import model from 'wink-eng-lite-web-model';

let analyser: WinkMethods | undefined;
let tokenizer: WinkMethods | undefined;

/**
 * The process-wide wink-nlp instance for analysis (English lite model; sentence boundaries and
 * parts of speech, which sentence importance and readability need), created on first use. The
 * model takes a moment and some memory to load, so every node visit in this process shares it;
 * it is never put in `shared` (each worker process builds its own).
 */
export function getNlp(): WinkMethods {
  analyser ??= winkNLP(model, ['sbd', 'pos']);
  return analyser;
}

/** A process-wide wink-nlp instance that only tokenises (about twice as fast): for features. */
export function getTokenizer(): WinkMethods {
  tokenizer ??= winkNLP(model, []);
  return tokenizer;
}
