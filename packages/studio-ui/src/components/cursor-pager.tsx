export interface CursorPagerProps {
  /** The cursors of the pages before this one, oldest first (the page shown reads after the last). */
  cursors: string[];
  /** The cursor of the page after this one, when there is one. */
  next: string | undefined;
  onCursors: (cursors: string[]) => void;
  /** The buttons' labels, back then on: "Previous" / "Next", "Newer" / "Older". */
  labels: [string, string];
}

/** Back and on buttons for a list the API pages by cursor (agents, conversations). */
export function CursorPager({ cursors, next, onCursors, labels }: CursorPagerProps) {
  return (
    <p>
      {cursors.length > 0 && (
        <button type="button" onClick={() => onCursors(cursors.slice(0, -1))}>
          {labels[0]}
        </button>
      )}{' '}
      {next && (
        <button type="button" onClick={() => onCursors([...cursors, next])}>
          {labels[1]}
        </button>
      )}
    </p>
  );
}
