// The compare view: list the ended probes (GET /v1/probes), tick the ones
// to compare and pick the baseline, and show them side by side
// (GET /v1/compare): the knee, knee_refined, the TTFT and E2E p95 and the
// goodput at the knee, the 429s, the served model and the date, and each
// one's drift against the baseline.

import { h, byId, num, replace } from './dom.js';
import { call } from './api.js';

const ENDED = new Set(['succeeded', 'failed', 'cancelled', 'interrupted']);
const MAX_RUNS = 16;

// drift renders a percentage with its sign, '–' when the figure is
// missing, 'baseline' for the baseline itself.
function drift(row, key) {
  if (!row.drift) return 'baseline';
  const v = row.drift[key];
  return v === null || v === undefined ? '–' : `${v > 0 ? '+' : ''}${num(v, 1)} %`;
}

// knee renders a run's knee as its result gives it: the one place the
// view renders a knee, where a mark on it belongs.
const knee = (row) => {
  if (row.knee === null || row.knee === undefined) return 'none';
  return row.knee_lower_bound ? `≥ ${row.knee}` : String(row.knee);
};

function served(row) {
  const s = row.served;
  if (!s || !s.models || !s.models.length) return '–';
  const names = s.models.map((m) => m.name).join(', ');
  if (s.check === 'switch') return `${names}: not the model asked (${s.asked})`;
  if (s.check === 'deployment') return `${names} (behind deployment ${s.asked})`;
  return names;
}

const at = (row, key, digits) => (row.at_knee ? num(row.at_knee[key], digits) : '–');

const COLUMNS = [
  ['Probe', (r) => r.name],
  ['Model', (r) => r.model || '–'],
  ['Served', served],
  ['Date', (r) => (r.date ? new Date(r.date).toISOString().slice(0, 16).replace('T', ' ') + ' UTC' : '–')],
  ['Knee', knee],
  ['Refined', (r) => (r.knee_refined ? `${r.knee_refined} (res. ${r.knee_refined_resolution})` : '–')],
  ['TTFT p95, ms', (r) => at(r, 'ttft_p95_ms', 1)],
  ['E2E p95, ms', (r) => at(r, 'e2e_p95_ms', 1)],
  ['Goodput, req/s', (r) => at(r, 'goodput_rps', 3)],
  ['429', (r) => (r.answers ? `${num(r.rate_limited)} of ${num(r.answers)}` : num(r.rate_limited))],
  ['Knee drift', (r) => drift(r, 'knee_pct')],
  ['TTFT drift', (r) => drift(r, 'ttft_p95_pct')],
  ['E2E drift', (r) => drift(r, 'e2e_p95_pct')],
  ['Goodput drift', (r) => drift(r, 'goodput_pct')],
];

export class Compare {
  constructor() {
    this.section = byId('compare');
    this.list = byId('compare-probes');
    this.table = byId('compare-table');
    this.error = byId('compare-error');
    this.runButton = byId('compare-run');
    byId('compare-refresh').addEventListener('click', () => this.refresh());
    this.runButton.addEventListener('click', () => this.compare());
  }

  // refresh lists the ended probes, newest first, each with a box to tick
  // and a choice of baseline.
  async refresh() {
    this.error.textContent = '';
    let page;
    try {
      page = (await call('GET', '/v1/probes?limit=100')).data;
    } catch (err) {
      this.error.textContent = err.message;
      return;
    }
    const probes = page.items.filter((p) => ENDED.has(p.status));
    if (!probes.length) {
      replace(this.list, h('p', { class: 'hint', text: 'No probe has ended yet.' }));
      this.runButton.disabled = true;
      return;
    }
    replace(this.list, h('div', { class: 'table-wrap' }, h('table', { class: 'steps', id: 'compare-choices' },
      h('caption', { class: 'visually-hidden', text: 'Ended probes' }),
      h('thead', {}, h('tr', {}, ['Compare', 'Baseline', 'Probe', 'Model', 'Created', 'Status', 'Knee'].map((t) => h('th', { scope: 'col', text: t })))),
      h('tbody', {}, probes.map((p, i) => h('tr', { 'data-id': p.id },
        h('td', { 'data-label': 'Compare' }, h('input', { type: 'checkbox', class: 'compare-pick', value: p.id, 'aria-label': `Compare ${p.id}`, checked: i < 2 })),
        h('td', { 'data-label': 'Baseline' }, h('input', { type: 'radio', name: 'compare-baseline', value: p.id, 'aria-label': `${p.id} as the baseline`, checked: i === 0 })),
        h('td', { 'data-label': 'Probe', text: p.id }),
        h('td', { 'data-label': 'Model', text: p.target.model }),
        h('td', { 'data-label': 'Created', text: p.created_at.slice(0, 16).replace('T', ' ') }),
        h('td', { 'data-label': 'Status', text: p.status }),
        h('td', { 'data-label': 'Knee', text: p.knee ?? 'none' })))))));
    this.runButton.disabled = false;
  }

  // compare asks for the ticked probes, in the list's order, against the
  // chosen baseline (the first ticked one when the baseline is not ticked).
  async compare() {
    this.error.textContent = '';
    const ids = [...this.list.querySelectorAll('input.compare-pick:checked')].map((i) => i.value);
    if (!ids.length) {
      this.error.textContent = 'Tick at least one probe.';
      return;
    }
    if (ids.length > MAX_RUNS) {
      this.error.textContent = `At most ${MAX_RUNS} probes are compared at once.`;
      return;
    }
    const chosen = this.list.querySelector('input[name="compare-baseline"]:checked');
    const baseline = chosen && ids.includes(chosen.value) ? chosen.value : ids[0];
    this.section.dataset.status = 'loading';
    let c;
    try {
      c = (await call('GET', `/v1/compare?probes=${ids.map(encodeURIComponent).join(',')}&baseline=${encodeURIComponent(baseline)}`)).data;
    } catch (err) {
      this.section.dataset.status = 'error';
      this.error.textContent = err.errors.length ? err.errors.map((e) => `${e.location}: ${e.message}`).join('; ') : err.message;
      return;
    }
    this.render(c);
    this.section.dataset.status = 'ready';
  }

  render(c) {
    const switched = c.runs.filter((r) => r.served && r.served.check === 'switch');
    replace(this.table,
      h('div', { class: 'table-wrap' }, h('table', { class: 'steps', id: 'compare-result', 'data-baseline': c.baseline },
        h('caption', { class: 'visually-hidden', text: `Probes compared with ${c.baseline}` }),
        h('thead', {}, h('tr', {}, COLUMNS.map(([title]) => h('th', { scope: 'col', text: title })))),
        h('tbody', {}, c.runs.map((r) => h('tr', { 'data-id': r.name, class: r.drift ? null : 'baseline' },
          COLUMNS.map(([title, cell]) => h('td', { 'data-label': title }, cell(r)))))))),
      switched.length ? h('ul', { class: 'warnings' }, switched.map((r) => h('li', { text: `${r.name}: the answers named another model (${served(r)})` }))) : null,
      h('p', { class: 'hint', text: `TTFT and E2E p95 and goodput are those of the step at the knee; 429: answers that were 429 of all answers; drift in % of the baseline, ${c.baseline}.` }));
  }
}
