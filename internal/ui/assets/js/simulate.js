// The Simulate panel: the planned scenario run as a seeded simulation
// (POST /v1/simulations), each class's simulated figures beside the plan's,
// the verdict with its reasons, and per class two time series: requests in
// flight and queued, and 429s and shed requests per interval.

import { h, byId, num, replace, setFieldError } from './dom.js';
import { post, ApiError } from './api.js';
import { lineChart, legend } from './chart.js';

// FIELDS maps an error location to the input it is about.
const FIELDS = [
  ['body.duration_s', 'sim-duration'],
  ['body.interval_s', 'sim-duration'],
  ['body.max_events', 'sim-duration'],
  ['body.seed', 'sim-seed'],
  ['body.refill', 'sim-refill'],
];

function ms(v) {
  return v === null || v === undefined ? '–' : `${num(v, 0)}\u00a0ms`;
}

const COLUMNS = ['Class', 'Pool', 'Throughput', 'Plan', 'Shed', '429s', 'Retries', 'TTFT p95', 'Plan', 'E2E p95', 'Plan', 'Holds'];

function row(c) {
  const s = c.simulated;
  const p = c.predicted;
  // Cells carry their number unformatted in data-value.
  const cell = (field, label, value, ...content) => h('td', { 'data-field': field, 'data-label': label, 'data-value': value }, ...content);
  return h('tr', { 'data-class': c.name },
    h('th', { scope: 'row', 'data-label': 'Class' }, c.name, h('span', { class: 'hint', text: ` ${c.arrivals.replace('_', ' ')}` })),
    cell('pool', 'Pool', c.pool, String(c.pool)),
    cell('throughput', 'Throughput', s.throughput_rps, `${num(s.throughput_rps, 2)}\u00a0req/s`),
    cell('plan-throughput', 'Plan', c.vs_plan.expected_rps, `${num(c.vs_plan.expected_rps, 2)}\u00a0req/s`),
    cell('shed', 'Shed', s.shed, num(s.shed)),
    cell('rate-limited', '429s', s.rate_limited, num(s.rate_limited)),
    cell('retries', 'Retries', s.retries, num(s.retries)),
    cell('ttft', 'TTFT p95', s.ttft_p95_ms, ms(s.ttft_p95_ms)),
    cell('plan-ttft', 'Plan', p.ttft_p95_ms, ms(p.ttft_p95_ms)),
    cell('e2e', 'E2E p95', s.e2e_p95_ms, ms(s.e2e_p95_ms)),
    cell('plan-e2e', 'Plan', p.e2e_p95_ms, ms(p.e2e_p95_ms)),
    cell('holds', 'Holds', String(c.verdict.holds), h('span', { class: c.verdict.holds ? 'ok' : 'bad', text: c.verdict.holds ? 'yes' : 'no' })));
}

function table(result) {
  return h('div', { class: 'table-wrap' },
    h('table', { class: 'sim' },
      h('caption', { class: 'visually-hidden', text: 'Simulated figures of each class beside the plan' }),
      h('thead', {}, h('tr', {}, COLUMNS.map((c) => h('th', { scope: 'col', text: c })))),
      h('tbody', {}, result.classes.map(row))));
}

// SERIES names a class's series by what they count: requests, or for an
// agent task class (counts "tasks") the model calls in flight and
// answered 429 and the tasks queued for a slot and shed.
const SERIES = {
  requests: {
    axis: 'requests', inFlight: 'in flight', queued: 'queued', limited: '429s', shed: 'shed',
    load: 'requests in flight and queued', refused: '429s and shed requests',
  },
  tasks: {
    axis: 'tasks queued, calls in flight', inFlight: 'calls in flight', queued: 'tasks queued', limited: '429s (calls)', shed: 'tasks shed',
    load: 'model calls in flight and tasks queued', refused: 'calls answered 429 and tasks shed',
  },
};

// classCharts are one class's time series against minutes of simulated
// time (seconds for a run under ten minutes).
function classCharts(c, settings) {
  const minutes = settings.duration_s >= 600;
  const unit = minutes ? 60 : 1;
  const x = (i) => ((i + 0.5) * settings.interval_s) / unit;
  const points = (values) => values.map((y, i) => ({ x: x(i), y }));
  const names = SERIES[c.counts] || SERIES.requests;
  const load = [
    { name: names.inFlight, points: points(c.series.in_flight) },
    { name: names.queued, points: points(c.series.queued) },
  ];
  if (c.series.pool) load.push({ name: 'AIMD pool', points: points(c.series.pool) });
  const refused = [
    { name: names.limited, points: points(c.series.rate_limited), cls: 'series-3' },
    { name: names.shed, points: points(c.series.shed), cls: 'series-5' },
  ];
  const xLabel = `simulated ${minutes ? 'minutes' : 'seconds'}`;
  const s = c.simulated;
  return h('article', { class: 'sim-class', 'data-class': c.name },
    h('h3', { text: c.name }),
    h('ul', { class: 'reasons' }, c.verdict.reasons.map((r) => h('li', { text: r }))),
    h('div', { class: 'charts' },
      h('figure', {}, legend(load), lineChart({
        title: `${c.name}: ${names.load}`,
        description: `Time-averages per ${num(settings.interval_s)} s; pool ${c.pool}, ${num(s.backlog)} waiting at the end.`,
        xLabel, yLabel: names.axis, series: load, dots: false,
      })),
      h('figure', {}, legend(refused), lineChart({
        title: `${c.name}: ${names.refused}`,
        description: `Per ${num(settings.interval_s)} s; ${num(s.rate_limited)} 429s and ${num(s.shed)} shed in all.`,
        xLabel, yLabel: `per ${num(settings.interval_s)} s`, series: refused, dots: false,
      }))));
}

// Simulate drives the panel. hooks.scenarioErrors(errors) shows problems
// of the scenario itself under the editor.
export class Simulate {
  constructor(hooks) {
    this.hooks = hooks;
    this.section = byId('simulate');
    this.form = byId('sim-form');
    this.button = byId('sim-run');
    this.status = byId('sim-status');
    this.verdict = byId('sim-verdict');
    this.table = byId('sim-table');
    this.charts = byId('sim-charts');
    this.doc = null;
    this.seq = 0;
    this.form.addEventListener('submit', (e) => { e.preventDefault(); this.run(); });
  }

  // setScenario takes the scenario that planned last.
  setScenario(doc) {
    this.doc = doc;
    this.button.disabled = false;
    if (this.section.dataset.status === 'empty') this.setStatus('ready', 'Ready to simulate the planned scenario.');
  }

  setStatus(state, text) {
    this.section.dataset.status = state;
    this.status.textContent = text;
  }

  clearErrors() {
    for (const input of this.form.querySelectorAll('input, select')) setFieldError(input, '');
    byId('sim-form-error').textContent = '';
  }

  // request reads the form into a simulation request, or shows what is
  // wrong with it.
  request() {
    const minutes = Number(byId('sim-duration').value);
    if (!(minutes > 0)) {
      setFieldError(byId('sim-duration'), 'give the simulated time in minutes, more than 0');
      return null;
    }
    const body = {
      scenario: this.doc,
      duration_s: Math.round(minutes * 60 * 1000) / 1000,
      pacing: byId('sim-pacing').checked,
      aimd: byId('sim-aimd').checked,
      retry_after: byId('sim-retry-after').checked,
      refill: byId('sim-refill').value,
    };
    const seed = byId('sim-seed').value.trim();
    if (seed !== '') {
      if (!/^\d+$/.test(seed)) {
        setFieldError(byId('sim-seed'), 'a whole number, 0 or more');
        return null;
      }
      body.seed = Number(seed);
    }
    return body;
  }

  async run() {
    if (!this.doc) return;
    this.clearErrors();
    const body = this.request();
    if (!body) return;
    const seq = ++this.seq;
    this.button.disabled = true;
    this.setStatus('running', 'Simulating…');
    let result;
    try {
      result = await post('/v1/simulations', body);
    } catch (err) {
      if (seq === this.seq) this.showError(err);
      return;
    } finally {
      if (seq === this.seq) this.button.disabled = false;
    }
    if (seq !== this.seq) return;
    this.render(result);
  }

  showError(err) {
    this.setStatus('error', `The simulation did not run: ${err.message}`);
    if (!(err instanceof ApiError)) return;
    const unplaced = [];
    const scenario = [];
    for (const e of err.errors) {
      if (e.location === 'body.scenario' || e.location.startsWith('body.scenario.')) {
        scenario.push(e);
        continue;
      }
      const hit = FIELDS.find(([prefix]) => e.location === prefix);
      if (hit) setFieldError(byId(hit[1]), e.message);
      else unplaced.push(`${e.location}: ${e.message}`);
    }
    if (scenario.length) this.hooks.scenarioErrors(scenario);
    byId('sim-form-error').textContent = unplaced.join('; ');
  }

  render(result) {
    const st = result.settings;
    this.setStatus('done', `Simulated ${num(st.duration_s / 60, 1)} minutes with seed ${st.seed}: pacing ${st.pacing ? 'on' : 'off'}, `
      + `AIMD ${st.aimd ? 'on' : 'off'}, ${num(st.events)} events.`);
    this.verdict.className = result.verdict.holds ? 'ok' : 'bad';
    const summary = result.verdict.summary;
    this.verdict.textContent = `${summary.charAt(0).toUpperCase()}${summary.slice(1)}.`;
    replace(this.table, table(result),
      h('ul', { class: 'quotas' }, result.quotas.map((q) => h('li', {}, h('strong', { text: q.name }),
        `: ${q.dimensions.map((d) => `${d.dimension} ${num(d.use_mean * 100, 1)} % used, ${num(d.rate_limited)} 429s`).join('; ')}`))),
      result.warnings.length ? h('ul', { class: 'warnings' }, result.warnings.map((w) => h('li', { text: w }))) : null);
    replace(this.charts, result.classes.map((c) => classCharts(c, st)));
  }
}
