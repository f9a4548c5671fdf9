// The what-if panel: one field of the scenario (a JSON Pointer) swept over
// a range in one POST /v1/what-if; the slider then reads the grid's cell
// for its value, and the chart shows each class's pool along the range
// with the points where its binding constraint changes.

import { h, byId, num, replace, debounce, setFieldError } from './dom.js';
import { post, ApiError } from './api.js';
import { fromLocation, fromPointer, toPointer, getAt, display } from './paths.js';
import { lineChart, legend } from './chart.js';

// STEPS is the number of intervals the slider's range is cut into.
const STEPS = 40;
const LIMITS = ['rpm', 'tpm', 'itpm', 'otpm', 'rpd', 'tpd'];
const INTEGER_FIELDS = new Set(['max_tokens', 'knee', 'knee_refined', 'concurrency']);
const FRACTION_FIELDS = new Set(['headroom', 'cached_input_fraction', 'error_rate', 'rate_limited_rate']);

// fieldOptions lists the fields people usually vary that the scenario
// sets to a number, grouped for the select.
function fieldOptions(doc) {
  const out = [];
  const add = (group, label, segments) => {
    if (typeof getAt(doc, segments) === 'number') out.push({ group, label, segments });
  };
  (doc.quotas || []).forEach((q, i) => {
    for (const dim of LIMITS) add(`Key ${q.name}`, `${dim} of key ${q.name}`, ['quotas', i, dim]);
  });
  add('Latency', 'knee', ['latency', 'knee']);
  add('Latency', 'knee_refined (the budget uses it in place of knee)', ['latency', 'knee_refined']);
  (doc.classes || []).forEach((c, i) => {
    const group = `Class ${c.name}`;
    const at = (...rest) => ['classes', i, ...rest];
    for (const d of ['rps', 'rpm', 'requests']) add(group, `demand ${d} of ${c.name}`, at('demand', d));
    for (const tokens of ['input_tokens', 'output_tokens']) {
      for (const q of ['p50', 'p95']) add(group, `${tokens} ${q} of ${c.name}`, at(tokens, q));
    }
    add(group, `max_tokens of ${c.name}`, at('max_tokens'));
    add(group, `SLO TTFT p95 (ms) of ${c.name}`, at('slo', 'ttft_p95_ms'));
    add(group, `SLO E2E p95 (ms) of ${c.name}`, at('slo', 'e2e_p95_ms'));
    add(group, `knee of ${c.name}`, at('latency', 'knee'));
    add(group, `knee_refined of ${c.name}`, at('latency', 'knee_refined'));
  });
  return out;
}

// preferredField is the field behind the first class's binding
// constraint, when the scenario sets it: what a person usually tries first.
function preferredField(doc, plan) {
  const cls = plan.classes[0];
  if (!cls) return null;
  const i = (doc.classes || []).findIndex((c) => c.name === cls.name);
  const q = (doc.quotas || []).findIndex((x) => x.name === cls.quota);
  const b = cls.binding_constraint;
  const candidates = {
    // The budget uses knee_refined when the latency block gives it.
    knee: [['classes', i, 'latency', 'knee_refined'], ['classes', i, 'latency', 'knee'], ['latency', 'knee_refined'], ['latency', 'knee']],
    slo_ttft: [['classes', i, 'slo', 'ttft_ms'], ['classes', i, 'slo', 'ttft_p95_ms']],
    slo_e2e: [['classes', i, 'slo', 'e2e_ms'], ['classes', i, 'slo', 'e2e_p95_ms'], ['classes', i, 'slo', 'task_e2e_ms']],
    slo_tpot: [['classes', i, 'slo', 'tpot_ms']],
  }[b] || (LIMITS.includes(b) ? [['quotas', q, b]] : []);
  return candidates.find((segments) => typeof getAt(doc, segments) === 'number') || null;
}

// defaultRange is the slider's range around a field's value: a quarter to
// four times it, kept within the field's rules (p50 <= p95, fractions <= 1).
function defaultRange(doc, segments, base) {
  const field = segments.at(-1);
  let from = base / 4;
  let to = base === 0 ? 10 : base * 4;
  const sibling = (name) => getAt(doc, [...segments.slice(0, -1), name]);
  if (field === 'p95' && typeof sibling('p50') === 'number') from = Math.max(from, sibling('p50'));
  if (field === 'p50' && typeof sibling('p95') === 'number') to = Math.min(to, sibling('p95'));
  if (FRACTION_FIELDS.has(field)) to = Math.min(to, 1);
  const round = (v) => (INTEGER_FIELDS.has(field) ? Math.round(v) : Number(v.toPrecision(3)));
  return { from: Math.max(round(from), INTEGER_FIELDS.has(field) ? 1 : 0), to: round(to) };
}

// gridValues cuts [from, to] into STEPS intervals at round values and adds
// the values that must be on the grid (the scenario's, a typed one).
function gridValues(from, to, integer, fixed) {
  const values = new Set(fixed);
  for (let i = 0; i <= STEPS; i += 1) {
    let v = Number((from + ((to - from) * i) / STEPS).toPrecision(3));
    if (integer) v = Math.round(v);
    values.add(v);
  }
  return [...values].filter(Number.isFinite).sort((a, b) => a - b);
}

// WhatIf drives the panel. hooks: preview(segments, value, isBase) shows
// the plan at a value, apply(segments, value) writes it into the
// scenario, scenarioErrors(errors) shows problems of the scenario itself.
export class WhatIf {
  constructor(hooks) {
    this.hooks = hooks;
    this.section = byId('whatif');
    this.field = byId('wi-field');
    this.pointer = byId('wi-pointer');
    this.from = byId('wi-from');
    this.to = byId('wi-to');
    this.slider = byId('wi-slider');
    this.value = byId('wi-value');
    this.caption = byId('wi-caption');
    this.readout = byId('wi-readout');
    this.chart = byId('wi-chart');
    this.seq = 0;
    this.grid = null;
    this.scheduleSweep = debounce(() => this.sweep(), 250);

    this.field.addEventListener('change', () => this.onFieldChosen());
    this.pointer.addEventListener('change', () => this.onPointerTyped());
    for (const input of [this.from, this.to]) input.addEventListener('change', () => this.onRangeChanged());
    this.slider.addEventListener('input', () => this.show(Number(this.slider.value)));
    this.value.addEventListener('change', () => this.onValueTyped());
    byId('wi-apply').addEventListener('click', () => this.grid && this.hooks.apply(this.grid.segments, this.current()));
    byId('wi-reset').addEventListener('click', () => this.grid && this.show(this.grid.values.indexOf(this.base)));
  }

  // setScenario takes a newly planned scenario and its plan. It keeps the
  // chosen field when the scenario still has it, but the slider starts
  // again at the new scenario's value with a range around it: a value or
  // range of the previous scenario would show a plan of neither.
  setScenario(doc, plan) {
    this.doc = doc;
    this.plan = plan;
    this.options = fieldOptions(doc);
    const keep = this.segments && typeof getAt(doc, this.segments) === 'number' ? toPointer(this.segments) : null;
    const groups = new Map();
    for (const o of this.options) {
      if (!groups.has(o.group)) groups.set(o.group, h('optgroup', { label: o.group }));
      groups.get(o.group).append(h('option', { value: toPointer(o.segments), text: `${o.label} (${num(getAt(doc, o.segments), 3)})` }));
    }
    replace(this.field, [...groups.values()], h('option', { value: '', text: 'Another field: type a JSON Pointer' }));
    const first = preferredField(doc, plan) || (this.options[0] && this.options[0].segments);
    const pointer = keep ?? (first ? toPointer(first) : '');
    this.field.value = this.options.some((o) => toPointer(o.segments) === pointer) ? pointer : '';
    this.pointer.value = pointer;
    this.choose(fromPointer(pointer));
  }

  onFieldChosen() {
    if (this.field.value === '') {
      this.pointer.focus();
      return;
    }
    this.pointer.value = this.field.value;
    this.choose(fromPointer(this.field.value));
  }

  onPointerTyped() {
    const pointer = this.pointer.value.trim();
    this.field.value = this.options.some((o) => toPointer(o.segments) === pointer) ? pointer : '';
    this.choose(fromPointer(pointer));
  }

  // choose starts varying the field at segments from its value in the
  // scenario, over the default range around it.
  choose(segments) {
    setFieldError(this.pointer, '');
    this.grid = null; // the previous grid is of another field or scenario
    const base = segments && getAt(this.doc, segments);
    if (!segments || segments.length === 0 || typeof base !== 'number') {
      const why = segments ? `the scenario has no number at ${this.pointer.value || '/'}` : 'a JSON Pointer starts with /, as in /quotas/0/tpm';
      setFieldError(this.pointer, why);
      this.segments = null;
      this.section.dataset.status = 'error';
      this.caption.textContent = '';
      replace(this.readout);
      replace(this.chart);
      return;
    }
    this.segments = segments;
    this.base = base;
    this.extra = null;
    // Until the new grid comes, show none: the readout and the chart of
    // the previous one are of another field, or of another scenario's
    // classes.
    replace(this.readout);
    replace(this.chart);
    const range = defaultRange(this.doc, segments, base);
    this.from.value = range.from;
    this.to.value = range.to;
    setFieldError(this.to, '');
    this.section.dataset.status = 'loading';
    this.scheduleSweep();
  }

  onRangeChanged() {
    const from = Number(this.from.value);
    const to = Number(this.to.value);
    if (this.from.value === '' || this.to.value === '' || !(from < to)) {
      setFieldError(this.to, 'give a range: From below To');
      return;
    }
    setFieldError(this.to, '');
    if (this.segments) this.scheduleSweep();
  }

  onValueTyped() {
    const v = Number(this.value.value);
    if (this.value.value.trim() === '' || !Number.isFinite(v)) {
      setFieldError(this.value, 'type a number');
      return;
    }
    setFieldError(this.value, '');
    if (!this.grid) return;
    const i = this.grid.values.indexOf(v);
    if (i >= 0) {
      this.show(i);
      return;
    }
    this.extra = v;
    this.scheduleSweep();
  }

  current() {
    return this.grid.values[Number(this.slider.value)];
  }

  // sweep asks the server for the grid of the current field and range.
  async sweep() {
    if (!this.segments) return;
    const seq = ++this.seq;
    const segments = this.segments;
    const from = Number(this.from.value);
    const to = Number(this.to.value);
    const integer = INTEGER_FIELDS.has(segments.at(-1)) || (Number.isInteger(this.base) && to - from >= STEPS);
    const fixed = [this.base, ...(this.extra === null ? [] : [this.extra])];
    const values = gridValues(from, to, integer, fixed);
    this.section.dataset.status = 'loading';
    this.caption.textContent = `Planning ${values.length} values of ${display(segments)}…`;
    let answer;
    try {
      answer = await post('/v1/what-if', { scenario: this.doc, variations: [{ path: toPointer(segments), values }] });
    } catch (err) {
      if (seq === this.seq) this.showRequestError(err);
      return;
    }
    if (seq !== this.seq) return;
    const want = this.extra ?? (this.grid && this.grid.segments === segments ? this.current() : this.base);
    this.grid = { segments, values, cells: answer.cells };
    this.slider.max = String(values.length - 1);
    const at = values.indexOf(want);
    this.show(at >= 0 ? at : values.indexOf(this.base));
  }

  showRequestError(err) {
    this.section.dataset.status = 'error';
    this.caption.textContent = err.message;
    if (!(err instanceof ApiError)) return;
    const scenarioErrors = [];
    for (const e of err.errors) {
      if (/^body\.variations\[\d+\]\.path/.test(e.location)) setFieldError(this.pointer, e.message);
      else if (/^body\.variations/.test(e.location)) setFieldError(this.value, e.message);
      else if (fromLocation(e.location, 'body.scenario')) scenarioErrors.push(e);
      else setFieldError(this.pointer, e.message);
    }
    if (scenarioErrors.length) this.hooks.scenarioErrors(scenarioErrors);
  }

  // show moves the slider to grid index i and shows that cell.
  show(i) {
    if (!this.grid || i < 0) return;
    const { values, cells, segments } = this.grid;
    const value = values[i];
    const cell = cells[i];
    this.slider.value = String(i);
    this.slider.setAttribute('aria-valuetext', num(value, 3));
    this.value.value = String(value);
    setFieldError(this.value, cell.errors ? cell.errors.map((e) => `${e.path ? `${e.path}: ` : ''}${e.message}`).join('; ') : '');
    this.section.dataset.status = 'ready';
    this.section.dataset.path = toPointer(segments);
    this.section.dataset.value = String(value);
    this.caption.textContent = `${display(segments)} = ${num(value, 3)} (the scenario has ${num(this.base, 3)})`;
    replace(this.readout, cell.classes ? this.readoutTable(cell) : null);
    replace(this.chart, this.drawChart(i));
    this.hooks.preview(segments, value, value === this.base && !cell.errors);
  }

  readoutTable(cell) {
    const before = new Map(this.plan.classes.map((c) => [c.name, c]));
    return h('table', { class: 'readout' },
      h('caption', { class: 'visually-hidden', text: 'Each class at this value' }),
      h('thead', {}, h('tr', {}, ['Class', 'Pool', 'Binding', 'Min pool', 'Feasible', 'Scenario pool'].map((c) => h('th', { scope: 'col', text: c })))),
      h('tbody', {}, cell.classes.map((c) => {
        const was = before.get(c.name);
        return h('tr', { 'data-class': c.name },
          h('th', { scope: 'row', text: c.name }),
          h('td', { 'data-field': 'pool', 'data-label': 'Pool', text: String(c.pool) }),
          h('td', { 'data-field': 'binding', 'data-label': 'Binding' }, h('mark', { class: 'binding', text: c.binding_constraint })),
          h('td', { 'data-field': 'min_pool', 'data-label': 'Min pool', text: c.min_pool === null ? 'none fits' : String(c.min_pool) }),
          h('td', { 'data-field': 'feasible', 'data-label': 'Feasible' }, h('span', { class: c.feasible ? 'ok' : 'bad', text: c.feasible ? 'yes' : 'no' })),
          h('td', { 'data-label': 'Scenario pool', text: was ? `${was.pool} (${was.binding_constraint})` : '–' }));
      })));
  }

  drawChart(i) {
    const { values, cells, segments } = this.grid;
    const names = this.plan.classes.map((c) => c.name);
    const series = names.map((name, k) => ({
      name,
      cls: `series-${k % 6}`,
      points: cells.map((cell, j) => {
        const c = cell.classes && cell.classes.find((x) => x.name === name);
        return { x: values[j], y: c ? c.pool : null, hollow: c && !c.feasible, note: c ? `${c.binding_constraint}${c.feasible ? '' : ', does not fit'}` : 'invalid' };
      }),
    }));
    const markers = [];
    names.forEach((name, k) => {
      let prev = null;
      cells.forEach((cell, j) => {
        const c = cell.classes && cell.classes.find((x) => x.name === name);
        if (!c) { prev = null; return; }
        if (prev !== null && prev !== c.binding_constraint) {
          markers.push({ x: values[j], y: c.pool, cls: `series-${k % 6}`, short: c.binding_constraint,
            label: `${name}: binding changes from ${prev} to ${c.binding_constraint} at ${num(values[j], 3)}` });
        }
        prev = c.binding_constraint;
      });
    });
    const chart = lineChart({
      title: `Pool against ${display(segments)}`,
      description: `${names.length} classes over ${values.length} values; ${markers.length} binding changes marked.`,
      xLabel: display(segments), yLabel: 'pool', series, markers,
      vlines: [{ x: this.base, label: 'scenario', cls: 'base' }, { x: values[i], label: 'slider', cls: 'current' }],
    });
    const changes = markers.length
      ? h('ul', { class: 'changes' }, markers.map((m) => h('li', { text: m.label })))
      : h('p', { class: 'hint', text: 'The binding constraint does not change over this range.' });
    return [legend(series), chart, changes];
  }
}
