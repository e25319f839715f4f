import type { Figure } from './record-figure.js';

/** `name  value unit  (bar ≥ 2.0: met)`, the line `npm run bench` prints per figure. */
export function formatFigure(figure: Figure): string {
  const value = figure.unit === '×' ? figure.value.toFixed(2) : formatNumber(figure.value);
  const unit = figure.unit === '×' ? '×' : ` ${figure.unit}`;
  return `${figure.name.padEnd(40)} ${`${value}${unit}`.padStart(18)}${barNote(figure)}`;
}

/** `  (bar ≥ 2: met)` or `  (bar ≤ 3: NOT met)`; nothing for a figure without a bar. */
export function barNote(figure: Pick<Figure, 'value' | 'better' | 'bar'>): string {
  if (figure.bar === undefined) return '';
  const met = figure.better === 'higher' ? figure.value >= figure.bar : figure.value <= figure.bar;
  return `  (bar ${figure.better === 'higher' ? '≥' : '≤'} ${figure.bar}: ${met ? 'met' : 'NOT met'})`;
}

function formatNumber(value: number): string {
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  return Number(value.toPrecision(3)).toString();
}
