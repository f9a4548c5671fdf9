// The scenario editor: a textarea with line numbers, where the lines named
// by errors are marked, and the list of errors right under it. Long lines
// wrap instead of scrolling sideways, so each number stands as tall as its
// line's rows (measured on a hidden copy of the text), and the editor grows
// with the text up to the window's height.

import { h, byId, replace } from './dom.js';

// MIN_ROWS is the least the editor shows, empty or not.
const MIN_ROWS = 24;

// Editor wraps the textarea. onSubmit runs on Ctrl+Enter (Cmd+Enter),
// onInput after each change the person makes.
export class Editor {
  constructor(onSubmit, onInput = () => {}) {
    this.area = byId('scenario-text');
    this.gutter = byId('scenario-gutter');
    this.errors = byId('scenario-errors');
    this.box = this.area.closest('.editor');
    this.marked = new Set();
    // The copy is in the editor's box, off to the side, styled as the
    // textarea's text, to measure how many rows each line wraps to.
    this.mirror = h('div', { class: 'mirror', 'aria-hidden': 'true' });
    this.box.append(this.mirror);
    this.area.addEventListener('input', () => {
      this.drawGutter();
      onInput();
    });
    this.area.addEventListener('scroll', () => { this.gutter.scrollTop = this.area.scrollTop; });
    this.area.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        onSubmit();
      }
    });
    new ResizeObserver(() => this.drawGutter()).observe(this.area);
  }

  get text() {
    return this.area.value;
  }

  set text(value) {
    this.area.value = value;
    this.showErrors([]);
  }

  // lineHeights measures the height of each line of the text as the
  // textarea wraps it.
  lineHeights(lines) {
    const style = getComputedStyle(this.area);
    const pad = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
    this.mirror.style.width = `${this.area.clientWidth - pad}px`;
    replace(this.mirror, lines.map((l) => h('div', { text: l === '' ? '\u200b' : l })));
    return [...this.mirror.children].map((d) => d.getBoundingClientRect().height);
  }

  drawGutter() {
    const lines = this.area.value.split('\n');
    const rowHeight = parseFloat(getComputedStyle(this.area).lineHeight) || 18;
    const heights = this.lineHeights(lines);
    const spans = lines.map((_, i) => {
      const span = h('span', { class: this.marked.has(i + 1) ? 'marked' : undefined, 'data-line': i + 1, text: `${i + 1}\n` });
      // Through the CSSOM: the page's CSP refuses style attributes.
      if (heights[i] > rowHeight + 0.5) span.style.height = `${heights[i]}px`;
      return span;
    });
    replace(this.gutter, spans);
    this.grow(heights.reduce((a, b) => a + b, 0), rowHeight);
    this.gutter.scrollTop = this.area.scrollTop;
  }

  // grow sizes the editor to its text, at least MIN_ROWS rows; the
  // stylesheet's max-height keeps it within the window, and beyond that
  // the text scrolls.
  grow(textHeight, rowHeight) {
    const style = getComputedStyle(this.area);
    const pad = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
    this.box.style.height = `${Math.ceil(Math.max(textHeight, MIN_ROWS * rowHeight) + pad + 2)}px`;
  }

  // showErrors lists problems under the editor and marks their lines.
  // Each problem: {path (as the API spells it, or ''), message, line}.
  showErrors(problems) {
    this.marked = new Set(problems.map((p) => p.line).filter(Boolean));
    this.drawGutter();
    this.area.toggleAttribute('aria-invalid', problems.length > 0);
    if (problems.length === 0) {
      replace(this.errors);
      return;
    }
    const title = problems.length === 1 ? 'The scenario has a problem' : `The scenario has ${problems.length} problems`;
    replace(this.errors,
      h('p', { class: 'errors-title', text: title }),
      h('ul', {}, problems.map((p) => h('li', { 'data-path': p.path || '' },
        p.line ? h('button', { type: 'button', class: 'link', on: { click: () => this.goToLine(p.line) }, text: `line ${p.line}` }) : null,
        p.path ? h('code', { text: p.path }) : null,
        h('span', { text: p.message })))));
  }

  // goToLine selects a line of the text and scrolls it into view: to the
  // top of its gutter number, which stands where the line starts.
  goToLine(line) {
    const lines = this.area.value.split('\n');
    const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
    this.area.focus();
    this.area.setSelectionRange(start, start + (lines[line - 1] || '').length);
    const span = this.gutter.querySelector(`[data-line="${line}"]`);
    const rowHeight = parseFloat(getComputedStyle(this.area).lineHeight) || 18;
    this.area.scrollTop = Math.max(0, (span ? span.offsetTop - this.gutter.firstElementChild.offsetTop : 0) - 2 * rowHeight);
  }
}
