import type { ComponentChildren } from 'preact';
import { useEffect, useRef } from 'preact/hooks';

export interface ConfirmDialogProps {
  title: string;
  /** Text of the confirming button. */
  confirm: string;
  open: boolean;
  busy?: boolean;
  /** The confirming button is off (e.g. the form is not valid yet). */
  disabled?: boolean;
  /** Styles the confirming button as destructive. */
  danger?: boolean;
  onConfirm: () => void;
  onClose: () => void;
  children?: ComponentChildren;
}

/**
 * A modal confirmation on the browser's `<dialog>`: it keeps focus inside, closes on Escape, and
 * gives focus back to where it was.
 */
export function ConfirmDialog({
  title,
  confirm,
  open,
  busy,
  disabled,
  danger,
  onConfirm,
  onClose,
  children,
}: ConfirmDialogProps) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (!dialog) return;
    if (open && !dialog.open) dialog.showModal();
    if (!open && dialog.open) dialog.close();
  }, [open]);
  const titleId = `dialog-${title.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <dialog ref={ref} aria-labelledby={titleId} onClose={onClose} class="dialog">
      <form
        method="dialog"
        onSubmit={(event) => {
          event.preventDefault();
          onConfirm();
        }}
      >
        <h2 id={titleId}>{title}</h2>
        <div class="dialog-body">{children}</div>
        <div class="dialog-buttons">
          <button type="button" onClick={onClose}>
            Cancel
          </button>
          <button type="submit" class={danger ? 'danger' : 'primary'} disabled={busy || disabled}>
            {busy ? 'Working…' : confirm}
          </button>
        </div>
      </form>
    </dialog>
  );
}
