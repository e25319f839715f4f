/** An agent key from any text: whitespace and `/` replaced, at most 200 characters. */
export function agentKeyOf(text: string): string {
  return text.replace(/[\s/]+/g, '_').slice(0, 200) || '_';
}
