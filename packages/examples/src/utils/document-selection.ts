import type { DocumentRef, DocumentSelection } from '../documents/types.js';
import { listLocalFiles } from './local-files.js';
import { listCorpus, sampleCorpus } from './spam-assassin-corpus.js';

/**
 * The documents a {@link DocumentSelection} names, in output order. Deterministic: the same
 * selection gives the same list in every process that sees the same files.
 */
export async function expandSelection(selection: DocumentSelection): Promise<DocumentRef[]> {
  switch (selection.source) {
    case 'spam-assassin':
      return selection.limit === null ? listCorpus() : sampleCorpus(selection.limit);
    case 'files': {
      const files = await listLocalFiles(selection.dir);
      return selection.limit === null ? files : files.slice(0, selection.limit);
    }
    case 'refs':
      return selection.refs.map((ref) => ({ ...ref }));
    default:
      throw new TypeError(`unknown document selection: ${JSON.stringify(selection)}`);
  }
}

/** A selection from a list of references or a selection. */
export function toSelection(input: DocumentSelection | DocumentRef[]): DocumentSelection {
  return Array.isArray(input) ? { source: 'refs', refs: input } : input;
}
