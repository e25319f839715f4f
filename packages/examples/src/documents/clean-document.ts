import { cleanText } from '../utils/text-cleaner.js';
import { DocumentError } from './document-error.js';
import { capText, DocumentStage, type ResolvedParams } from './document-stage.js';
import type { DocumentKind, WorkItem } from './types.js';

export interface CleanInput {
  kind: DocumentKind;
  subject: string | null;
  plainText: string | null;
  html: string | null;
  parsed: boolean;
  maxTextChars: number;
}

/**
 * Turns the parsed bodies into the plain text the later stages read (HTML to text with
 * html-to-text, Markdown markup removed, junk lines dropped) and frees the raw bodies from
 * `shared`. A document with neither text nor subject fails with `NO_TEXT`.
 */
export class CleanDocument extends DocumentStage<CleanInput, { text: string; warnings: string[] }> {
  readonly stage = 'clean' as const;

  protected input(work: WorkItem | undefined, params: ResolvedParams): CleanInput {
    return {
      kind: params.kind,
      subject: work?.subject ?? null,
      plainText: work?.plainText ?? null,
      html: work?.html ?? null,
      parsed: work?.bytes !== undefined && work?.bytes !== null,
      maxTextChars: params.maxTextChars,
    };
  }

  protected transform(input: CleanInput): { text: string; warnings: string[] } {
    if (!input.parsed) throw new Error('clean stage reached before the document was parsed');
    const warnings: string[] = [];
    const text = capText(cleanText(input), input.maxTextChars, 'clean text', warnings) ?? '';
    if (text === '' && input.subject === null) {
      throw new DocumentError(
        'NO_TEXT',
        'no subject and no text left after cleaning (e.g. only images or attachments)',
      );
    }
    if (text === '') warnings.push('no body text: analysed and classified on the subject only');
    return { text, warnings };
  }

  protected apply(work: WorkItem, output: { text: string; warnings: string[] }): void {
    work.text = output.text;
    work.plainText = null;
    work.html = null;
    work.warnings.push(...output.warnings);
  }
}
