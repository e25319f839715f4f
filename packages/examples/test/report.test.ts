/** The report's arithmetic and the failure-code round trip, on hand-made records. */
import { describe, expect, it } from 'vitest';
import {
  buildRecord,
  buildReport,
  DocumentError,
  formatReport,
  toFailure,
  type DocumentRef,
  type WorkItem,
} from '../src/index.js';

function ref(docId: string, trueLabel: 'spam' | 'ham', split: 'train' | 'test'): DocumentRef {
  return { docId, source: 'spam-assassin', path: `${docId}.txt`, kind: 'email', trueLabel, split };
}

function work(predictedLabel: 'spam' | 'ham', total: number): WorkItem {
  return {
    bytes: 100,
    subject: 's',
    senderDomain: 'example.org',
    date: null,
    plainText: null,
    html: null,
    text: 't',
    language: null,
    keywords: [],
    summary: null,
    summarySource: null,
    predictedLabel,
    spamScore: predictedLabel === 'spam' ? 5 : -5,
    failure: null,
    warnings: [],
    timingMs: { parse: total / 2, analyse: total / 2 },
  };
}

describe('buildReport', () => {
  const records = [
    buildRecord(ref('a', 'spam', 'test'), work('spam', 10)), // true positive
    buildRecord(ref('b', 'spam', 'test'), work('ham', 4)), // false negative
    buildRecord(ref('c', 'ham', 'test'), work('ham', 30)), // true negative
    buildRecord(ref('d', 'ham', 'test'), work('spam', 2)), // false positive
    buildRecord(ref('e', 'ham', 'test'), work('ham', 1)), // true negative
    buildRecord(ref('f', 'spam', 'train'), work('ham', 50)), // train split: not scored
    buildRecord(ref('g', 'ham', 'test'), {
      ...work('ham', 0),
      failure: { stage: 'parse', code: 'EMPTY', reason: 'the file has 0 bytes' },
    }),
  ];
  const report = buildReport(records, 2000, 2);

  it('scores only the held-out documents that have a prediction', () => {
    expect(report.heldOut).toMatchObject({
      documents: 5,
      accuracy: 3 / 5,
      precision: 1 / 2,
      recall: 1 / 2,
      confusion: { truePositive: 1, falsePositive: 1, trueNegative: 2, falseNegative: 1 },
    });
  });

  it('counts documents, failures and throughput', () => {
    expect(report).toMatchObject({
      documents: 7,
      ok: 6,
      failed: 1,
      failuresByCode: { EMPTY: 1 },
      documentsPerSecond: 3.5,
    });
    expect(report.failures).toEqual([{ id: 'g', stage: 'parse', code: 'EMPTY', reason: 'the file has 0 bytes' }]);
    expect(records[6]).toMatchObject({ status: 'failed', predictedLabel: null });
  });

  it('lists the slowest documents with their slowest stage', () => {
    expect(report.slowest).toEqual([
      { id: 'f', totalMs: 50, slowestStage: 'parse', stageMs: 25 },
      { id: 'c', totalMs: 30, slowestStage: 'parse', stageMs: 15 },
    ]);
  });

  it('prints every failure with its reason', () => {
    const text = formatReport(report);
    expect(text).toContain('accuracy 60.0%');
    expect(text).toContain('g  [parse] EMPTY: the file has 0 bytes');
  });
});

describe('toFailure', () => {
  it('keeps the failure code of a DocumentError, also when only its message crossed a process', () => {
    const error = new DocumentError('BINARY', 'NUL byte at offset 3');
    expect(toFailure('parse', error)).toEqual({ stage: 'parse', code: 'BINARY', reason: 'NUL byte at offset 3' });
    const plain = new Error(error.message); // what fromErrorRecord rebuilds: name and message
    expect(toFailure('parse', plain)).toEqual({ stage: 'parse', code: 'BINARY', reason: 'NUL byte at offset 3' });
  });

  it('names anything else ERROR with the error name', () => {
    expect(toFailure('analyse', new RangeError('boom'))).toEqual({
      stage: 'analyse',
      code: 'ERROR',
      reason: 'RangeError: boom',
    });
  });
});
