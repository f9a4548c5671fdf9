// The probe view: start a probe (POST /v1/probes) as a ladder or a knee
// search, follow it live (server-sent events on /v1/probes/{id}/events:
// EventSource without a token, fetch() streaming with one, polling as the
// last resort), show the steps with their intervals, the knee ("≥ 4" for a
// lower bound; and knee_refined) and the curves, cancel it, and hand its latency block to
// the scenario. The step sizes follow the CLI's: blank is
// max(40, 3c) + c, and fewer than max(40, 3c) measured is refused.

import { h, byId, num, replace, setFieldError } from './dom.js';
import { call, post, token, authHeaders, ApiError } from './api.js';
import { lineChart, legend } from './chart.js';

const FINAL = new Set(['succeeded', 'failed', 'cancelled', 'interrupted']);
const POLL_MS = 1000;

// fields maps the top of an error location to the input it is about.
const FIELDS = [
  ['body.target.base_url', 'probe-base-url'],
  ['body.target.model', 'probe-model'],
  ['body.target.credential', 'probe-credential'],
  ['body.target', 'probe-base-url'],
  ['body.steps', 'probe-steps'],
  ['body.max_concurrency', 'probe-max-concurrency'],
  ['body.requests_per_step', 'probe-requests'],
  ['body.max_tokens', 'probe-max-tokens'],
  ['body.input_tokens', 'probe-input-tokens'],
  ['body.deadline_ms', 'probe-deadline'],
];

function inputFor(location) {
  const hit = FIELDS.find(([prefix]) => location === prefix || location.startsWith(`${prefix}.`) || location.startsWith(`${prefix}[`));
  return hit ? byId(hit[1]) : null;
}

// parseSSE splits server-sent event text into complete events and the
// unfinished rest.
function parseSSE(buffer) {
  const events = [];
  const blocks = buffer.split('\n\n');
  const rest = blocks.pop();
  for (const block of blocks) {
    let type = 'message';
    const data = [];
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const [field, ...value] = line.split(':');
      const text = value.join(':').replace(/^ /, '');
      if (field === 'event') type = text;
      else if (field === 'data') data.push(text);
    }
    if (data.length) events.push({ type, data: data.join('\n') });
  }
  return { events, rest };
}

// minMeasured is the least number of measured requests a fixed-size step
// of concurrency c may have, as the server counts it.
const minMeasured = (c) => Math.max(40, 3 * c);

// range renders an interval, or nothing.
const range = (ci, digits) => (ci ? `${num(ci.lo, digits)}–${num(ci.hi, digits)}` : null);

// latencyCell shows p50 / p90 / p95 / p99 of one metric, and under it
// the interval of the p95; "~" marks a figure derived rather than
// measured.
function latencyCell(s, name, digits, estimated) {
  const mark = estimated ? '~' : '';
  const values = ['p50', 'p90', 'p95', 'p99'].map((p) => s[`${name}_${p}_ms`]);
  const ci = range(s[`${name}_p95_ci`], digits);
  return [
    h('span', { class: 'quad', text: values.map((v) => (v ? num(v, digits) + mark : '–')).join(' / ') }),
    ci ? h('span', { class: 'ci', text: `p95 ${ci}` }) : null,
  ];
}

// uslText renders a USL fit; a peak beyond the measured range (the fit's
// peak_beyond_range) is said to be an extrapolation, not a peak.
function uslText(usl, steps) {
  const parts = ['alpha', 'beta', 'gamma', 'r2'].filter((k) => typeof usl[k] === 'number').map((k) => `${k} ${num(usl[k], 4)}`);
  if (typeof usl.peak === 'number') {
    const top = Math.max(0, ...steps.map((s) => s.concurrency));
    parts.push(usl.peak_beyond_range
      ? `peak ${num(usl.peak, 1)} in flight, beyond the measured range (up to ${top} in flight): an extrapolation, not a peak the probe saw`
      : `peak ${num(usl.peak, 1)} in flight`);
  }
  return parts.join(', ');
}

const STEP_COLUMNS = [
  ['In flight', (s) => `${s.concurrency}${s.refine ? ' r' : ''}${s.too_short ? ' !' : ''}`],
  ['Req.', (s) => num(s.requests)],
  ['OK', (s) => num(s.ok)],
  ['429', (s) => num(s.rate_limited)],
  ['Err.', (s) => num(s.errors)],
  ['Goodput req/s', (s) => [h('span', { text: num(s.goodput_rps, 2) + (s.goodput_estimated ? '~' : '') }),
    s.goodput_ci ? h('span', { class: 'ci', text: `± ${num((s.goodput_ci.hi - s.goodput_ci.lo) / 2, 2)}` }) : null]],
  ['Thrpt req/s', (s) => num(s.throughput_rps, 2)],
  ['Out tok/s', (s) => num(s.output_tps, 1)],
  ['TTFT ms p50/90/95/99', (s) => latencyCell(s, 'ttft', 0, s.ttft_estimated)],
  ['TPOT ms p50/90/95/99', (s) => latencyCell(s, 'tpot', 1, s.tpot_estimated)],
  ['E2E ms p50/90/95/99', (s) => latencyCell(s, 'e2e', 0, s.e2e_estimated)],
];

// Probe drives the view. hooks.useLatency(latency) puts a latency block
// into the scenario and plans it.
export class Probe {
  constructor(hooks) {
    this.hooks = hooks;
    this.section = byId('probe');
    this.form = byId('probe-form');
    this.cancelButton = byId('probe-cancel');
    this.useButton = byId('probe-use');
    this.status = byId('probe-status');
    this.progress = byId('probe-progress');
    this.summary = byId('probe-summary');
    this.table = byId('probe-steps-table');
    this.charts = byId('probe-charts');
    this.resource = null;
    this.form.addEventListener('submit', (e) => { e.preventDefault(); this.start(); });
    byId('probe-search').addEventListener('change', () => this.syncShape());
    this.syncShape();
    this.cancelButton.addEventListener('click', () => this.cancel());
    this.useButton.addEventListener('click', () => this.resource && this.hooks.useLatency(this.resource.latency));
  }

  // syncShape enables the fields of the kind of run chosen: a search sizes
  // its own steps.
  syncShape() {
    const search = byId('probe-search').checked;
    byId('probe-steps').disabled = search;
    byId('probe-requests').disabled = search;
    byId('probe-max-concurrency').disabled = !search;
  }

  clearErrors() {
    for (const input of this.form.querySelectorAll('input')) setFieldError(input, '');
    byId('probe-form-error').textContent = '';
  }

  // request reads the form into a probe request, or shows what is wrong:
  // a ladder (steps, and a step size that keeps max(40, 3c) measured
  // requests at its largest step) or a search (up to a concurrency).
  request() {
    const value = (id) => byId(id).value.trim();
    const target = { base_url: value('probe-base-url'), model: value('probe-model') };
    if (value('probe-credential')) target.credential = value('probe-credential');
    const body = {
      target,
      max_tokens: Number(value('probe-max-tokens')),
      input_tokens: Number(value('probe-input-tokens')),
      deadline_ms: Number(value('probe-deadline')),
      ignore_eos: byId('probe-ignore-eos').checked,
    };
    if (byId('probe-search').checked) {
      const top = Number(value('probe-max-concurrency'));
      if (!Number.isInteger(top) || top < 1) {
        setFieldError(byId('probe-max-concurrency'), 'give the highest concurrency to try, a whole number');
        return null;
      }
      return { ...body, search: true, max_concurrency: top };
    }
    const steps = value('probe-steps').split(/[\s,]+/).filter(Boolean).map(Number);
    if (steps.length === 0 || steps.some((s) => !Number.isInteger(s) || s < 1)) {
      setFieldError(byId('probe-steps'), 'give concurrencies as whole numbers, such as 1,2,4,8');
      return null;
    }
    body.steps = steps;
    if (value('probe-requests') !== '') {
      const n = Number(value('probe-requests'));
      const c = Math.max(...steps);
      const warmup = Math.min(c, Math.floor(n / 2));
      if (!Number.isInteger(n) || n - warmup < minMeasured(c)) {
        setFieldError(byId('probe-requests'), `a step needs at least max(40, 3c) = ${minMeasured(c)} measured requests at concurrency ${c}: give at least ${minMeasured(c) + c}, or leave it blank`);
        return null;
      }
      body.requests_per_step = n;
    }
    return body;
  }

  async start() {
    this.clearErrors();
    const body = this.request();
    if (!body) return;
    this.stopWatching();
    this.resource = null;
    this.useButton.disabled = true;
    this.setStatus('starting', 'Starting the probe…');
    let resource;
    try {
      resource = await post('/v1/probes', body);
    } catch (err) {
      this.showStartError(err);
      return;
    }
    this.render(resource);
    this.watch(resource.id);
  }

  showStartError(err) {
    this.setStatus('error', `The probe was not started: ${err.message}`);
    if (!(err instanceof ApiError)) return;
    if (err.status === 404 || err.status === 405) {
      byId('probe-form-error').textContent = 'This server has no probe endpoints.';
      return;
    }
    if (err.errors.length === 0) {
      const input = err.status === 403 ? byId('probe-base-url') : null;
      if (input) setFieldError(input, err.message);
      else byId('probe-form-error').textContent = err.message;
      return;
    }
    const unplaced = [];
    for (const e of err.errors) {
      const input = inputFor(e.location);
      if (input) setFieldError(input, e.message);
      else unplaced.push(`${e.location}: ${e.message}`);
    }
    byId('probe-form-error').textContent = unplaced.join('; ');
  }

  setStatus(state, text) {
    this.section.dataset.status = state;
    this.status.textContent = text;
  }

  // watch follows the probe's events until its final state.
  watch(id) {
    const url = `/v1/probes/${encodeURIComponent(id)}/events`;
    this.cancelButton.disabled = false;
    if (token()) {
      this.streamWithFetch(url, id);
      return;
    }
    const source = new EventSource(url);
    this.source = source;
    for (const type of ['status', 'progress', 'step', 'done']) {
      source.addEventListener(type, (e) => this.onEvent(type, JSON.parse(e.data)));
    }
    source.addEventListener('error', () => {
      source.close();
      if (!this.finished()) this.poll(id);
    });
  }

  async streamWithFetch(url, id) {
    const controller = new AbortController();
    this.abort = controller;
    try {
      const resp = await fetch(url, { headers: { Accept: 'text/event-stream', ...authHeaders() }, signal: controller.signal });
      if (!resp.ok || !resp.body) throw new Error(`events: ${resp.status}`);
      const reader = resp.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value.replace(/\r\n?/g, '\n');
        const parsed = parseSSE(buffer);
        buffer = parsed.rest;
        for (const ev of parsed.events) this.onEvent(ev.type, JSON.parse(ev.data));
      }
    } catch (err) {
      if (err.name === 'AbortError') return;
    }
    if (!this.finished()) this.poll(id);
  }

  // poll reads the probe resource until it is final.
  async poll(id) {
    if (this.polling) return;
    this.polling = true;
    while (this.polling && !this.finished()) {
      try {
        const { data } = await call('GET', `/v1/probes/${encodeURIComponent(id)}`);
        this.render(data);
      } catch (err) {
        this.setStatus('error', `Lost the probe: ${err.message}`);
        break;
      }
      if (!this.finished()) await new Promise((r) => setTimeout(r, POLL_MS));
    }
    this.polling = false;
  }

  stopWatching() {
    if (this.source) this.source.close();
    if (this.abort) this.abort.abort();
    this.polling = false;
    this.source = null;
    this.abort = null;
  }

  finished() {
    return Boolean(this.resource && FINAL.has(this.resource.status));
  }

  onEvent(type, data) {
    if (!this.resource) return;
    if (type === 'status') this.render({ ...this.resource, status: data.status });
    else if (type === 'progress') {
      this.progress.textContent = `At concurrency ${data.step}: ${num(data.requests)} requests done, ${num(data.ok)} OK, `
        + `${num(data.rate_limited)} rate limited, ${num(data.errors)} errors`
        + (data.cancelled ? `, ${num(data.cancelled)} cancelled` : '');
    } else if (type === 'step') {
      const steps = (this.resource.steps || []).filter((s) => s.concurrency !== data.concurrency || s.rate_rps !== data.rate_rps);
      this.render({ ...this.resource, steps: [...steps, data].sort((a, b) => a.concurrency - b.concurrency) });
    } else if (type === 'done') {
      this.stopWatching();
      this.render(data);
    }
  }

  async cancel() {
    if (!this.resource) return;
    this.cancelButton.disabled = true;
    try {
      await call('DELETE', `/v1/probes/${encodeURIComponent(this.resource.id)}`);
      this.progress.textContent = 'Cancelling…';
    } catch (err) {
      byId('probe-form-error').textContent = `Cancel failed: ${err.message}`;
      this.cancelButton.disabled = false;
    }
  }

  render(resource) {
    this.resource = resource;
    const final = FINAL.has(resource.status);
    const steps = resource.steps || [];
    this.setStatus(resource.status, `Probe ${resource.id}: ${resource.status}${resource.target ? ` (${resource.target.model} at ${resource.target.base_url})` : ''}`);
    this.cancelButton.disabled = final;
    this.useButton.disabled = !(final && resource.latency);
    if (final) this.progress.textContent = '';
    this.renderSummary(resource, final);
    replace(this.table, steps.length ? this.stepTable(steps) : null);
    replace(this.charts, steps.length ? this.curveCharts(steps, resource.knee, resource.knee_lower_bound) : null);
  }

  renderSummary(r, final) {
    const item = (term, value, attrs = {}) => [h('dt', { text: term }), h('dd', attrs, value)];
    const hasKnee = r.knee !== undefined && r.knee !== null;
    let knee = 'after the first measured steps';
    if (hasKnee && r.knee_lower_bound) knee = `≥ ${r.knee} in flight (a lower bound: no step failed the knee rule; probe to higher concurrency to find it)`;
    else if (hasKnee) knee = `${r.knee} in flight`;
    else if (final) knee = 'none: no step was measured in a steady state, the steps measured one concurrency only, or the first one already failed the knee rule';
    const refined = r.knee_refined ? `${r.knee_refined} in flight (the knee lies above ${r.knee_refined - r.knee_refined_resolution})` : null;
    const usl = r.usl ? uslText(r.usl, r.steps || []) : null;
    const s = r.served;
    let served = null;
    if (s && s.models && s.models.length) {
      served = s.models.map((m) => `${m.name} (${num(m.answers)} answers)`).join(', ');
      if (s.check === 'switch') served = `another model than the one asked (${s.asked}): ${served}`;
      else if (s.check === 'deployment') served += `, the model behind deployment ${s.asked}`;
    }
    const c = r.connections;
    const conns = c ? `${num(c.new)} new, ${num(c.reused)} reused${c.setup_mean_ms ? `; a new one took ${num(c.setup_mean_ms, 1)} ms to set up` : ''}` : null;
    const warnings = (r.notes || []).filter((n) => n.startsWith('WARNING'));
    replace(this.summary,
      item('Knee', knee, { id: 'probe-knee', 'data-knee': r.knee ?? '', 'data-knee-lower-bound': hasKnee && r.knee_lower_bound ? 'true' : 'false' }),
      refined ? item('Refined knee', refined, { id: 'probe-knee-refined', 'data-knee': r.knee_refined }) : null,
      r.collapse !== undefined && r.collapse !== null ? item('Collapse', `${r.collapse} in flight`) : null,
      r.quota_limited !== undefined ? item('Quota-limited', r.quota_limited ? 'yes: the share of 429s rises with concurrency, or the key ran out' : 'no') : null,
      r.stop_reason ? item('Stopped because', [r.stop_reason, r.stop_detail].filter(Boolean).join(': ')) : null,
      r.error ? item('Error', r.error) : null,
      usl ? item('USL fit', usl) : null,
      served ? item('Served model', served, { id: 'probe-served', 'data-check': s.check, class: s.check === 'switch' ? 'warnings' : null }) : null,
      conns ? item('Connections', conns) : null,
      warnings.length ? item('Warnings', h('ul', { class: 'warnings' }, warnings.map((w) => h('li', { text: w })))) : null);
  }

  stepTable(steps) {
    const marks = [];
    if (steps.some((s) => s.refine)) marks.push('r: a refinement step of the search');
    if (steps.some((s) => s.too_short)) marks.push('!: too short for a steady state, not judged');
    if (steps.some((s) => s.goodput_estimated || s.ttft_estimated || s.tpot_estimated || s.e2e_estimated)) marks.push('~: estimated, not measured');
    return h('div', { class: 'table-wrap' }, h('table', { class: 'steps' },
      h('caption', { class: 'visually-hidden', text: 'Measured steps' }),
      h('thead', {}, h('tr', {}, STEP_COLUMNS.map(([title]) => h('th', { scope: 'col', text: title })))),
      h('tbody', {}, steps.map((s) => h('tr', { 'data-concurrency': s.concurrency, class: s.too_short ? 'too-short' : null },
        STEP_COLUMNS.map(([title, cell]) => h('td', { 'data-label': title }, cell(s))))))),
    h('p', { class: 'hint', text: ['Goodput ± its 95 % interval; p95 with its 95 % interval under each latency; 429: every 429 answer, retried ones included.', ...marks].join(' ') }));
  }

  curveCharts(steps, knee, lowerBound) {
    const at = (key) => steps.filter((s) => !s.too_short).map((s) => ({ x: s.concurrency, y: s[key] ?? null }));
    const vlines = knee === null || knee === undefined ? [] : [{ x: knee, label: `knee ${lowerBound ? '≥ ' : ''}${knee}`, cls: 'knee' }];
    // Goodput is at most the throughput and often equal to it: throughput
    // is drawn first, wide and pale, and goodput dashed over it, so that
    // both lines show where they meet.
    const goodput = { name: 'goodput', points: at('goodput_rps'), cls: 'series-0 over' };
    const throughput = { name: 'throughput', points: at('throughput_rps'), cls: 'series-1 under' };
    const rate = [throughput, goodput];
    const latency = [{ name: 'TTFT p95', points: at('ttft_p95_ms') }, { name: 'E2E p95', points: at('e2e_p95_ms') }];
    return [
      h('figure', {}, legend([goodput, throughput]), lineChart({
        title: 'Goodput and throughput against concurrency', description: `${steps.length} steps; knee ${knee ?? 'not found'}.`,
        xLabel: 'concurrency', yLabel: 'req/s', series: rate, vlines,
      })),
      h('figure', {}, legend(latency), lineChart({
        title: 'Latency p95 against concurrency', description: `${steps.length} steps; knee ${knee ?? 'not found'}.`,
        xLabel: 'concurrency', yLabel: 'ms', series: latency, vlines,
      })),
    ];
  }
}
