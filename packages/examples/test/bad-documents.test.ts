/**
 * Bad documents, generated here from real corpus emails and seeded random bytes: each one gets a
 * failure record with a code and a reason, the good documents next to them get their records,
 * and the batch runs to the end.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildReport,
  corpusFilePath,
  DEFAULT_PIPELINE_PARAMS,
  listCorpus,
  listLocalFiles,
  runDocumentPipeline,
  type DocumentPipelineResult,
  type DocumentRecord,
  type DocumentRef,
} from '../src/index.js';
import { seededBytes } from './helpers.js';

/** A real email of the corpus, by id. */
function corpusEmail(docId: string): Buffer {
  const ref = listCorpus().find((r) => r.docId === docId);
  if (!ref) throw new Error(`no corpus document ${docId}`);
  return readFileSync(corpusFilePath(ref.path));
}

function headerBlockLength(email: Buffer): number {
  return email.toString('latin1').indexOf('\n\n');
}

/** A multipart email with a text part and a base64 attachment, cut inside the attachment. */
function truncatedMultipart(): Buffer {
  const body = corpusEmail('easy-ham-1/00003').toString('latin1');
  const text = body.slice(body.indexOf('\n\n') + 2, body.indexOf('\n\n') + 800);
  const attachment = seededBytes(6000, 7).toString('base64').replace(/.{76}/g, '$&\n');
  const email = [
    'From: Alice Example <alice@example.org>',
    'To: bob@example.net',
    'Subject: the report you asked for',
    'Date: Thu, 22 Aug 2002 12:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="XYZ-boundary"',
    '',
    '--XYZ-boundary',
    'Content-Type: text/plain; charset=us-ascii',
    '',
    text,
    '--XYZ-boundary',
    'Content-Type: application/pdf; name="report.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    attachment,
    '--XYZ-boundary--',
    '',
  ].join('\n');
  let cut = email.indexOf(attachment) + Math.floor(attachment.length / 2);
  while (attachment.slice(0, cut - email.indexOf(attachment)).replace(/\s/g, '').length % 4 === 0) cut++;
  return Buffer.from(email.slice(0, cut), 'latin1');
}

/** What each generated file must give: a failure code, or `ok`. */
const EXPECTED: Record<string, string> = {
  'empty.eml': 'EMPTY',
  'blank.txt': 'EMPTY',
  'binary.eml': 'BINARY',
  'image.txt': 'BINARY',
  'truncated-headers.eml': 'TRUNCATED',
  'truncated-attachment.eml': 'TRUNCATED',
  'truncated-utf8.txt': 'TRUNCATED',
  'huge.eml': 'TOO_LARGE',
  'malformed.eml': 'MALFORMED',
  'malformed-no-core-headers.eml': 'MALFORMED',
  'images-only.eml': 'NO_TEXT',
  'good-spam.eml': 'ok',
  'good-ham.eml': 'ok',
  'notes.md': 'ok',
  'plain.txt': 'ok',
  'legacy-latin1.txt': 'ok',
  // Entries with a document's name that are not files: listed, and failed with the reason.
  'named-pipe.eml': 'UNREADABLE',
  'dangling-link.txt': 'UNREADABLE',
};

describe('bad documents', () => {
  let dir: string;
  let result: DocumentPipelineResult;
  let byId: Map<string, DocumentRecord>;
  const missing: DocumentRef = {
    docId: 'missing.eml',
    source: 'file',
    path: '/nonexistent/queueflow/missing.eml',
    kind: 'email',
    trueLabel: null,
    split: null,
  };

  beforeAll(async () => {
    delete process.env.OPENAI_BASE_URL; // never call a model from tests
    dir = mkdtempSync(path.join(tmpdir(), 'queueflow-bad-docs-'));
    const ham = corpusEmail('easy-ham-1/00003');
    const spam = corpusEmail('spam-1/00001');
    const files: Record<string, Buffer | string> = {
      'empty.eml': Buffer.alloc(0),
      'blank.txt': '  \n\n\t \r\n',
      'binary.eml': seededBytes(4096, 1),
      'image.txt': Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), seededBytes(2048, 2)]),
      'truncated-headers.eml': ham.subarray(0, Math.floor(headerBlockLength(ham) / 2)),
      'truncated-attachment.eml': truncatedMultipart(),
      'truncated-utf8.txt': Buffer.from('Grüße aus Köln, und ein Preis von 20 €').subarray(0, -1),
      'huge.eml': Buffer.concat([ham, Buffer.alloc(DEFAULT_PIPELINE_PARAMS.maxBytes, 'padding line\n')]),
      'malformed.eml': Buffer.concat([Buffer.from('<<< this is not a header line >>>\n'), ham]),
      'malformed-no-core-headers.eml':
        'X-Mailer: none\nX-Note: nothing else\n\nThe body of a message without a sender.\n',
      'images-only.eml': [
        'From: promo@example.com',
        'Date: Thu, 22 Aug 2002 12:00:00 +0000',
        'MIME-Version: 1.0',
        'Content-Type: text/html; charset=us-ascii',
        '',
        '<html><body><img src="http://example.com/offer.gif"></body></html>',
        '',
      ].join('\n'),
      'good-spam.eml': spam,
      'good-ham.eml': ham,
      'notes.md':
        '# Release notes\n\nThe **queue** now retries failed steps with exponential backoff. ' +
        'Workers can be scaled horizontally, and each run keeps its checkpoint in Redis.\n\n' +
        '- Faster fan-out\n- Fewer connections\n',
      'plain.txt': 'Meeting moved to Thursday. Please bring the quarterly figures and the draft budget.\n',
      'legacy-latin1.txt': Buffer.from('Caf\xe9 cr\xe8me for everyone at the meeting on Friday afternoon.\n', 'latin1'),
    };
    for (const [name, content] of Object.entries(files)) writeFileSync(path.join(dir, name), content);
    execFileSync('mkfifo', [path.join(dir, 'named-pipe.eml')]); // reading it would block: it must never be opened
    symlinkSync('moved-away.txt', path.join(dir, 'dangling-link.txt'));
    const docs = [...(await listLocalFiles(dir)), missing];
    result = await runDocumentPipeline(docs, { concurrency: 4, params: { llmSummary: true } });
    byId = new Map(result.records.map((record) => [record.id, record]));
  });

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('gives every file one record and finishes the batch', () => {
    expect(result.records.map((r) => r.id).sort()).toEqual([...Object.keys(EXPECTED), missing.docId].sort());
    expect(result.shared.work).toEqual({});
  });

  it.each(Object.entries(EXPECTED))('%s → %s', (name, expected) => {
    const record = byId.get(name)!;
    if (expected === 'ok') {
      expect(record.failure).toBeNull();
      expect(record.status).toBe('ok');
      expect(record.predictedLabel).toMatch(/^(spam|ham)$/);
    } else {
      expect(record.status).toBe('failed');
      expect(record.failure?.code).toBe(expected);
      expect(record.failure?.reason.length).toBeGreaterThan(10);
      expect(record.predictedLabel).toBeNull();
    }
  });

  it('gives the same records when the folder is selected rather than listed', async () => {
    const selected = await runDocumentPipeline({ source: 'files', dir, limit: null }, { params: { llmSummary: true } });
    const strip = ({ timingMs: _t, ...rest }: DocumentRecord) => rest;
    expect(selected.records.map(strip)).toEqual(result.records.filter((r) => r.id !== missing.docId).map(strip));
  });

  it('fails a file that is not there as UNREADABLE', () => {
    expect(byId.get('missing.eml')?.failure).toMatchObject({ stage: 'parse', code: 'UNREADABLE' });
  });

  it('lists a FIFO and a symbolic link to nothing, and fails each with what it is', () => {
    expect(byId.get('named-pipe.eml')?.failure).toEqual({
      stage: 'parse',
      code: 'UNREADABLE',
      reason: `not a regular file but a FIFO (named pipe): ${path.join(dir, 'named-pipe.eml')}`,
    });
    expect(byId.get('dangling-link.txt')?.failure).toEqual({
      stage: 'parse',
      code: 'UNREADABLE',
      reason: `a symbolic link to nothing: ${path.join(dir, 'dangling-link.txt')} -> moved-away.txt`,
    });
  });

  it('rejects a huge file without reading it', () => {
    expect(byId.get('huge.eml')?.failure?.reason).toMatch(/over the limit of 1048576 bytes/);
    expect(byId.get('huge.eml')?.bytes).toBeNull();
  });

  it('reads Markdown and text files as documents', () => {
    expect(byId.get('notes.md')).toMatchObject({
      kind: 'markdown',
      subject: 'Release notes',
      senderDomain: null,
      trueLabel: null,
    });
    expect(byId.get('notes.md')?.keywords).toContain('backoff');
    expect(byId.get('notes.md')?.summary).toContain('The queue now retries'); // no Markdown left
    expect(byId.get('legacy-latin1.txt')?.warnings).toContain('not valid UTF-8: read as Windows-1252');
  });

  it('keeps the extractive summary when an LLM summary is asked for but not configured', () => {
    const record = byId.get('good-ham.eml')!;
    expect(record.summarySource).toBe('extractive');
    expect(record.warnings.some((w) => w.startsWith('LLM summary asked for'))).toBe(true);
  });

  it('counts and lists every failure in the report', () => {
    const report = buildReport(result.records, result.elapsedMs);
    const failing = Object.values(EXPECTED).filter((code) => code !== 'ok').length + 1;
    expect(report.failed).toBe(failing);
    expect(report.failures.map((f) => f.id).sort()).toEqual(
      result.records
        .filter((r) => r.status === 'failed')
        .map((r) => r.id)
        .sort(),
    );
    expect(report.failuresByCode).toEqual({
      EMPTY: 2,
      BINARY: 2,
      TRUNCATED: 3,
      TOO_LARGE: 1,
      MALFORMED: 2,
      NO_TEXT: 1,
      UNREADABLE: 3,
    });
  });
});
