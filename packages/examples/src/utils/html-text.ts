import { compile, type HtmlToTextOptions } from 'html-to-text';

const OPTIONS: HtmlToTextOptions = {
  wordwrap: false,
  selectors: [
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'img', format: 'skip' },
    { selector: 'style', format: 'skip' },
    { selector: 'script', format: 'skip' },
    { selector: 'head', format: 'skip' },
    { selector: 'h1', options: { uppercase: false } },
    { selector: 'h2', options: { uppercase: false } },
    { selector: 'h3', options: { uppercase: false } },
    { selector: 'table', format: 'block' },
    { selector: 'tr', format: 'block' },
    { selector: 'td', format: 'inline' },
    { selector: 'th', format: 'inline' },
  ],
};

let converter: ((html: string) => string) | undefined;

/** HTML to plain text with html-to-text (links without their URLs, no images, styles or scripts). */
export function htmlToText(html: string): string {
  converter ??= compile(OPTIONS);
  return converter(html);
}

/** Whether a "plain text" body is really HTML (spam often sends HTML as text/plain). */
export function looksLikeHtml(text: string): boolean {
  const tags = text
    .slice(0, 20_000)
    .match(/<\/?(html|body|head|div|p|br|table|tr|td|font|span|center|a|img)\b[^>]*>/gi);
  return (tags?.length ?? 0) >= 3;
}
