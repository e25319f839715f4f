/**
 * wink-nlp reads each text as a fresh instance would, whatever the process read before: the
 * records must be the same embedded and on any number of workers, which read the documents in
 * other orders. (A plain shared wink-nlp instance does not: see `src/utils/nlp.ts`.)
 */
import { readFileSync } from 'node:fs';
import winkNLP from 'wink-nlp';
import model from 'wink-eng-lite-web-model';
import { beforeAll, describe, expect, it } from 'vitest';
import { classifierFeatures, corpusFilePath, getNlp, getTokenizer, listCorpus, sampleCorpus } from '../src/index.js';
import { parseEmail } from '../src/utils/email-parser.js';
import { cleanText } from '../src/utils/text-cleaner.js';
import { analyseText } from '../src/utils/text-analysis.js';

const OPTIONS = { maxChars: 20_000, keywordCount: 8, summarySentences: 2 };

async function cleanTextOf(
  docId: string,
): Promise<{ subject: string | null; text: string; senderDomain: string | null }> {
  const ref = listCorpus().find((r) => r.docId === docId)!;
  const email = await parseEmail(readFileSync(corpusFilePath(ref.path)));
  return {
    subject: email.subject,
    text: cleanText({ kind: 'email', plainText: email.plainText, html: email.html }),
    senderDomain: email.senderDomain,
  };
}

/** Everything the pipeline reads of a wink-nlp document. */
function digest(nlp: ReturnType<typeof getNlp>, text: string): unknown {
  const { its } = nlp;
  const doc = nlp.readDoc(text);
  return [
    doc.tokens().out(),
    doc.tokens().out(its.type),
    doc.tokens().out(its.pos),
    doc.tokens().out(its.normal),
    doc.sentences().out(),
    doc.out(its.readabilityStats),
    doc.out(its.sentenceWiseImportance),
  ];
}

describe('wink-nlp as the pipeline uses it', () => {
  let target: Awaited<ReturnType<typeof cleanTextOf>>;
  let others: string[];

  beforeAll(async () => {
    // spam-2/00941 has `e-marketing...`, which a shared instance splits one way before it has
    // seen `e-marketing` and another way after.
    target = await cleanTextOf('spam-2/00941');
    others = await Promise.all(sampleCorpus(150).map(async (ref) => (await cleanTextOf(ref.docId)).text));
  });

  it('reads a text as a fresh instance does, again, and after 150 other emails', () => {
    const fresh = digest(winkNLP(model, ['sbd', 'pos']), target.text);
    const first = digest(getNlp(), target.text);
    const again = digest(getNlp(), target.text);
    for (const text of others) getNlp().readDoc(text);
    const after = digest(getNlp(), target.text);
    expect(first).toEqual(fresh);
    expect(again).toEqual(fresh);
    expect(after).toEqual(fresh);
  });

  it('gives the same analysis and classifier features whatever was read before', () => {
    const analysis = analyseText(target.text, OPTIONS);
    const features = classifierFeatures(target);
    for (const text of others.slice().reverse()) {
      analyseText(text, OPTIONS);
      classifierFeatures({ subject: null, text, senderDomain: null });
    }
    expect(analyseText(target.text, OPTIONS)).toEqual(analysis);
    expect(classifierFeatures(target)).toEqual(features);
    expect(getTokenizer().readDoc('e-marketing...').tokens().out()).toEqual(['e-marketing', '.', '..']);
  });

  it('shows why: a plain shared instance reads the same text differently the second time', () => {
    const plain = winkNLP(model, []);
    const once = plain.readDoc('Commercial e-marketing... they are gone').tokens().out();
    const twice = plain.readDoc('Commercial e-marketing... they are gone').tokens().out();
    expect(once).toEqual(['Commercial', 'e-marketing', '.', '..', 'they', 'are', 'gone']);
    expect(twice).toEqual(['Commercial', 'e-marketing', '...', 'they', 'are', 'gone']);
  });
});
