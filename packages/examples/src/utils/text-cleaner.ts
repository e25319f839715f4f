import type { DocumentKind } from '../documents/types.js';
import { htmlToText, looksLikeHtml } from './html-text.js';

/** The bodies the parse stage found. */
export interface RawBodies {
  kind: DocumentKind;
  plainText: string | null;
  html: string | null;
}

/**
 * The text the analysis reads: the plain-text body, or the HTML body turned into text when there
 * is no plain text with letters in it (or the "plain text" is HTML); Markdown loses its markup.
 * Then: line ends unified, zero-width characters and long unbroken runs (base64, uuencode)
 * dropped, quote markers removed, blank lines collapsed.
 */
export function cleanText(bodies: RawBodies): string {
  let text = bodies.plainText ?? '';
  if (bodies.kind === 'markdown') text = stripMarkdown(text);
  else if (looksLikeHtml(text)) text = htmlToText(text);
  if (!/\p{L}/u.test(text) && bodies.html) text = htmlToText(bodies.html);
  if (bodies.kind === 'email') text = stripEmailClutter(text);
  return normalise(text);
}

/**
 * What is not the sender's own words: quoted replies and their "... wrote:" lines (kept when
 * nothing else is left), PGP armour, the signature after the `-- ` delimiter, and a mailing
 * list's footer below a rule of underscores near the end.
 */
function stripEmailClutter(text: string): string {
  let lines = text.replace(/\r\n?/g, '\n').split('\n');
  const signature = lines.findIndex((line) => line === '-- ' || line === '--');
  if (signature > 0) lines = lines.slice(0, signature);
  const footer = lines.findIndex((line, i) => i >= lines.length - 15 && /^_{10,}\s*$/.test(line));
  if (footer > 0) lines = lines.slice(0, footer);
  const kept: string[] = [];
  let armour = false;
  for (const line of lines) {
    if (/^-----BEGIN PGP SIGNATURE-----/.test(line)) armour = true;
    if (!armour && !/^-----BEGIN PGP SIGNED MESSAGE-----|^Hash: /.test(line)) kept.push(line);
    if (/^-----END PGP SIGNATURE-----/.test(line)) armour = false;
  }
  const own = kept.filter((line) => !/^\s*>/.test(line) && !/\bwrote:\s*$/.test(line));
  return own.join('').replace(/\s/g, '').length >= 20 ? own.join('\n') : kept.join('\n');
}

function normalise(text: string): string {
  return text
    .replace(/\r\n?/g, '\n')
    .replace(/[\u200b-\u200d\u2060\ufeff\u00ad]/g, '')
    .replace(/[\u00a0\t\f\v]+/g, ' ')
    .split('\n')
    .map((line) =>
      line
        .replace(/^(\s*>)+\s?/, '')
        .replace(/ {2,}/g, ' ')
        .trim(),
    )
    .filter((line) => !/^\S{76,}$/.test(line))
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Markdown to plain text: headings, emphasis, code fences, links and images lose their markup. */
function stripMarkdown(markdown: string): string {
  return markdown
    .replace(/^```.*$/gm, '')
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/\[([^\]]+)\]\([^)]*\)/g, '$1')
    .replace(/^\s{0,3}#{1,6}\s+/gm, '')
    .replace(/^\s{0,3}[-*+]\s+/gm, '')
    .replace(/^\s{0,3}>\s?/gm, '')
    .replace(/(\*\*|__|\*|_|`)(?=\S)([^\n]*?\S)\1/g, '$2')
    .replace(/^\s*([-*_]\s*){3,}$/gm, '');
}

/** The first heading or non-empty line of a text file, as its subject (at most 120 characters). */
export function firstLineTitle(text: string): string | null {
  for (const line of text.split(/\r?\n/)) {
    const title = line
      .replace(/^\s{0,3}#{1,6}\s+/, '')
      .replace(/\s+/g, ' ')
      .trim();
    if (title !== '') return title.length > 120 ? `${title.slice(0, 117)}...` : title;
  }
  return null;
}
