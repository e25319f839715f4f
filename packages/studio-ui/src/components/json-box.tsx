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

export interface JsonBoxProps {
  value: Json;
  /** The accessible name of the box. */
  label: string;
  /** Without `onChange` the box only shows the value, as a collapsible tree. */
  onChange?: (value: Json | undefined, problem: string | undefined) => void;
  /** `text` edits the JSON as text (a code editor), `tree` as a tree. @defaultValue 'tree' */
  mode?: 'tree' | 'text';
  height?: string;
}

/**
 * A JSON value in vanilla-jsoneditor: a collapsible, searchable, keyboard-driven tree, or with
 * `onChange` an editor that reports the edited value (or why it is not JSON).
 */
export function JsonBox({ value, label, onChange, mode = 'tree', height = '24rem' }: JsonBoxProps) {
  const target = useRef<HTMLDivElement>(null);
  const editor = useRef<Awaited<ReturnType<Editors['createJSONEditor']>>>();
  const onChangeRef = useRef(onChange);
  onChangeRef.current = onChange;
  const [failed, setFailed] = useState<string>();

  useEffect(() => {
    let gone = false;
    loadEditors().then(
      ({ createJSONEditor, Mode, toJSONContent, isContentParseError }) => {
        if (gone || !target.current) return;
        editor.current = createJSONEditor({
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
            onChange: (content: Content, _previous: Content, status: OnChangeStatus) => {
              const problem =
                status.contentErrors && isContentParseError(status.contentErrors)
                  ? status.contentErrors.parseError.message
                  : undefined;
              let next: Json | undefined;
              if (!problem) {
                try {
                  next = toJSONContent(content).json as Json;
                } catch (error) {
                  onChangeRef.current?.(undefined, (error as Error).message);
                  return;
                }
              }
              onChangeRef.current?.(next, problem);
            },
          },
        });
      },
      (error: unknown) => setFailed((error as Error).message),
    );
    return () => {
      gone = true;
      void editor.current?.destroy();
      editor.current = undefined;
    };
    // The editor is made once; later values go in through `set` below.
  }, []);

  useEffect(() => {
    editor.current?.set({ json: value });
  }, [value]);

  if (failed) return <p class="problem">The JSON viewer could not load: {failed}</p>;
  return <div ref={target} class="json-box jse-theme-default" style={{ height }} />;
}
