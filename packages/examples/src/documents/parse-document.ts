import { parseEmail, type ParsedEmail } from '../utils/email-parser.js';
import { readDocumentBytes } from '../utils/document-reader.js';
import { checkNotBinary, checkNotEmpty, decodeText } from '../utils/raw-content-checks.js';
import { firstLineTitle } from '../utils/text-cleaner.js';
import { capText, DocumentStage, type ResolvedParams } from './document-stage.js';
import type { DocumentRef, WorkItem } from './types.js';

export interface ParseInput {
  ref: DocumentRef;
  maxBytes: number;
  maxTextChars: number;
}

/**
 * What the parse stage keeps: an email's fields (a text or Markdown file fills the subject and the
 * plain text), and the document's size in bytes.
 */
export interface ParseOutput extends ParsedEmail {
  bytes: number;
}

/**
 * The first stage: loads the document named by the params (it is never in `shared`), rejects
 * what cannot be a document (`TOO_LARGE` before reading, `EMPTY`, `BINARY`), then parses it: an
 * email with postal-mime (headers, text and HTML bodies; `TRUNCATED`, `MALFORMED`), a text or
 * Markdown file as UTF-8 (its first line as the subject).
 */
export class ParseDocument extends DocumentStage<ParseInput, ParseOutput> {
  readonly stage = 'parse' as const;

  protected input(_work: WorkItem | undefined, params: ResolvedParams): ParseInput {
    const { docId, source, path, kind, trueLabel, split } = params;
    return {
      ref: { docId, source, path, kind, trueLabel, split },
      maxBytes: params.maxBytes,
      maxTextChars: params.maxTextChars,
    };
  }

  protected async transform({ ref, maxBytes, maxTextChars }: ParseInput): Promise<ParseOutput> {
    const bytes = await this.untimed(readDocumentBytes(ref, maxBytes));
    checkNotEmpty(bytes);
    checkNotBinary(bytes);
    const warnings: string[] = [];
    let fields: Omit<ParseOutput, 'bytes' | 'warnings'>;
    if (ref.kind === 'email') {
      const email = await parseEmail(bytes);
      warnings.push(...email.warnings);
      fields = email;
    } else {
      const decoded = decodeText(bytes);
      warnings.push(...decoded.warnings);
      fields = {
        subject: firstLineTitle(decoded.text),
        senderDomain: null,
        date: null,
        plainText: decoded.text,
        html: null,
      };
    }
    return {
      bytes: bytes.length,
      subject: fields.subject,
      senderDomain: fields.senderDomain,
      date: fields.date,
      plainText: capText(fields.plainText, maxTextChars, 'text body', warnings),
      html: capText(fields.html, maxTextChars, 'HTML body', warnings),
      warnings,
    };
  }

  protected apply(work: WorkItem, output: ParseOutput): void {
    const { warnings, ...fields } = output;
    Object.assign(work, fields);
    work.warnings.push(...warnings);
  }
}
