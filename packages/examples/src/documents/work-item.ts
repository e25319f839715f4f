import type { WorkItem } from './types.js';

/** A work item before any stage wrote to it. */
export function emptyWorkItem(): WorkItem {
  return {
    bytes: null,
    subject: null,
    senderDomain: null,
    date: null,
    plainText: null,
    html: null,
    text: null,
    language: null,
    keywords: [],
    summary: null,
    summarySource: null,
    predictedLabel: null,
    spamScore: null,
    failure: null,
    warnings: [],
    timingMs: {},
  };
}
