// The scenario editor: a textarea with line numbers, where the lines named
// by errors are marked, and the list of errors right under it.

import { h, byId, replace } from './dom.js';

// Editor wraps the textarea. onSubmit runs on Ctrl+Enter (Cmd+Enter).
export class Editor {
  constructor(onSubmit) {
    this.area = byId('scenario-text');
    this.gutter = byId('scenario-gutter');
    this.errors = byId('scenario-errors');
    this.marked = new Set();
    this.area.addEventListener('input', () => this.drawGutter());
    this.area.addEventListener('scroll', () => { this.gutter.scrollTop = this.area.scrollTop; });
    this.area.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        onSubmit();
      }
    });
  }

  get text() {
    return this.area.value;
  }

  set text(value) {
    this.area.value = value;
    this.showErrors([]);
  }

  drawGutter() {
    const lines = this.area.value.split('\n').length;
    const spans = [];
    for (let i = 1; i <= lines; i += 1) {
      spans.push(h('span', { class: this.marked.has(i) ? 'marked' : undefined, 'data-line': i, text: `${i}\n` }));
    }
    replace(this.gutter, spans);
    this.gutter.scrollTop = this.area.scrollTop;
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

  // goToLine selects a line of the text and scrolls it into view.
  goToLine(line) {
    const lines = this.area.value.split('\n');
    const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
    this.area.focus();
    this.area.setSelectionRange(start, start + (lines[line - 1] || '').length);
    const lineHeight = parseFloat(getComputedStyle(this.area).lineHeight) || 20;
    this.area.scrollTop = Math.max(0, (line - 3) * lineHeight);
  }
}
