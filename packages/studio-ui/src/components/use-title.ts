import { useEffect } from 'preact/hooks';

/** Names the browser tab after the view: "Run abc · queueflow studio". */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · queueflow studio`;
  }, [title]);
}
