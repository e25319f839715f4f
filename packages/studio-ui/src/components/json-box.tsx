import { useEffect, useRef, useState } from 'preact/hooks';
import type * as JsonEditorModule from 'vanilla-jsoneditor';
import type { Content, OnChangeStatus } from 'vanilla-jsoneditor';
import type { Json } from '../api/types';

type Editors = typeof JsonEditorModule;
let editors: Promise<Editors> | undefined;
/** vanilla-jsoneditor, loaded the first time a JSON box shows. */
function loadEditors(): Promise<Editors> {
  editors ??= import('vanilla-jsoneditor');
  return editors;
}

/** What an editing box holds: its value, or why it is not JSON. */
export interface JsonBoxContent {
  value: Json | undefined;
  problem: string | undefined;
}

export interface JsonBoxProps {
  value: Json;
  /** The accessible name of the box. */
  label: string;
  /** Without `onChange` the box only shows the value, as a collapsible tree. */
  onChange?: (content: JsonBoxContent) => void;
  /**
   * Set to a function that reads the editor's content now: while typing, the editor tells
   * `onChange` after a short pause, so a form that submits reads the last keystrokes through this.
   */
  contentRef?: { current: (() => JsonBoxContent) | undefined };
  /** `text` edits the JSON as text (a code editor), `tree` as a tree. @defaultValue 'tree' */
  mode?: 'tree' | 'text';
  /** CSS height. @defaultValue about the value's own, 8 to 28 lines */
  height?: string;
}

/**
 * A JSON value in vanilla-jsoneditor: a collapsible, searchable, keyboard-driven tree, or with
 * `onChange` an editor that reports the edited value (or why it is not JSON).
 */
export function JsonBox({ value, label, onChange, contentRef, mode = 'tree', height }: JsonBoxProps) {
  const target = useRef<HTMLDivElement>(null);
  const editor = useRef<ReturnType<Editors['createJSONEditor']>>();
  const onChangeRef = useRef(onChange);
  onChangeRef.current = onChange;
  const [failed, setFailed] = useState<string>();

  useEffect(() => {
    let gone = false;
    loadEditors().then(
      ({ createJSONEditor, Mode, toJSONContent, isContentParseError }) => {
        if (gone || !target.current) return;
        const contentOf = (content: Content, status?: OnChangeStatus): JsonBoxContent => {
          if (status?.contentErrors && isContentParseError(status.contentErrors))
            return { value: undefined, problem: status.contentErrors.parseError.message };
          try {
            return { value: toJSONContent(content).json as Json, problem: undefined };
          } catch (error) {
            return { value: undefined, problem: (error as Error).message };
          }
        };
        const created = createJSONEditor({
          target: target.current,
          props: {
            content: { json: value },
            mode: mode === 'text' ? Mode.text : Mode.tree,
            readOnly: !onChangeRef.current,
            ariaLabel: label,
            mainMenuBar: !!onChangeRef.current,
            navigationBar: false,
            statusBar: !!onChangeRef.current,
            askToFormat: false,
            onChange: (content: Content, _previous: Content, status: OnChangeStatus) =>
              onChangeRef.current?.(contentOf(content, status)),
          },
        });
        editor.current = created;
        if (contentRef) contentRef.current = () => contentOf(created.get());
      },
      (error: unknown) => setFailed((error as Error).message),
    );
    return () => {
      gone = true;
      void editor.current?.destroy();
      editor.current = undefined;
      if (contentRef) contentRef.current = undefined;
    };
    // The editor is made once; later values go in through `set` below.
  }, []);

  useEffect(() => {
    editor.current?.set({ json: value });
  }, [value]);

  if (failed) return <p class="problem">The JSON viewer could not load: {failed}</p>;
  // The editor needs a height: about the value's own, from 8 to 28 lines.
  const lines = Math.min(28, Math.max(8, JSON.stringify(value, null, 2).split('\n').length + 2));
  return <div ref={target} class="json-box jse-theme-default" style={{ height: height ?? `${lines * 1.4 + 2}rem` }} />;
}
