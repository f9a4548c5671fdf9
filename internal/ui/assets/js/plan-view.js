// The plan as a table (one row per class) with each class's explanation,
// warnings and ceilings chart, and the keys' utilisation.

import { h, num, replace } from './dom.js';
import { ceilingChart } from './chart.js';

// latency is a predicted p95: null means a queue that grows without bound
// at the stated demand, unless no pool fits, when nothing is sent and
// there is nothing to predict.
function latency(v, cls) {
  if (cls.pool === 0) return h('span', { class: 'hint', title: 'No pool fits, so the class sends nothing: see its remedies.', text: 'no pool' });
  return v === null || v === undefined ? 'unbounded' : `${num(v, 1)}\u00a0ms`;
}

function ceilingItem(cls, c) {
  const binding = c.constraint === cls.binding_constraint;
  const value = c.max_pool === null ? 'unbounded' : num(c.max_pool);
  return h('li', { class: binding ? 'binding' : undefined },
    h('details', {},
      h('summary', { title: c.detail },
        h('span', { class: 'constraint', text: c.constraint }), ' ',
        h('span', { class: 'value', 'data-constraint': c.constraint, text: value }),
        binding ? h('span', { class: 'tag', text: 'binding' }) : null),
      h('p', { text: c.detail })));
}

function remedies(cls) {
  if (!cls.remedies || cls.remedies.length === 0) {
    if (!cls.feasible) return h('span', { class: 'hint', text: 'none found' });
    return h('span', { class: 'hint', text: cls.fits !== false ? 'none needed' : 'none: the queueing model fits; see the check' });
  }
  return h('ul', { class: 'remedies' }, cls.remedies.map((r) =>
    h('li', {}, h('span', { class: 'constraint', text: r.constraint }), ': ', r.change, remedyCost(r.cost))));
}

// money writes an amount with two decimals, or four digits below 1.
function money(v) {
  if (v !== 0 && Math.abs(v) < 1) return String(Number(v.toPrecision(4)));
  return new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 }).format(v);
}

// remedyCost is what a remedy's change costs a day, as the report says it.
function remedyCost(c) {
  if (!c) return null;
  const what = c.tier ? `tier ${c.tier} gives it` : 'with the limit raised';
  if (c.per_day === null) return `; ${what}`;
  let change = '';
  if (c.change_per_day !== null) {
    change = c.change_per_day > 0 ? `, ${money(c.change_per_day)} more than now`
      : c.change_per_day < 0 ? `, ${money(-c.change_per_day)} less than now` : ', as now';
  }
  return `; ${what}: ${money(c.per_day)}\u00a0${c.currency} a day${change}`;
}

// costText is a cost a day in words, with the prompt cache's saving.
function costText(c) {
  const saving = c.cache_saving_per_day > 0 ? `; the prompt cache saves ${money(c.cache_saving_per_day)} a day` : '';
  return `costs ${money(c.per_day)}\u00a0${c.currency} a day, ${money(c.per_hour)} an hour${saving}`;
}

const COLUMNS = ['Class', 'Pool (cap)', 'Min pool (needed)', 'Binding', 'Fits', 'Check', 'TTFT p95', 'E2E p95', 'req/s (demand / capacity)'];

// LEGEND says what the columns mean, as the command line's table does.
const LEGEND = 'Pool is a cap: the most requests the class may have in flight. Min pool is the least pool that ' +
  'meets its SLO at its demand. Fits: the queueing model and the plan\'s own simulation (Check) both hold. ' +
  'req/s is the demand against what the pool carries running flat out.';

function rates(cls) {
  const p = cls.predicted;
  const demand = p.offered_rps ? num(p.offered_rps, 2) : '–';
  return `${demand} / ${num(p.throughput_rps, 2)}`;
}

function checkCell(cls) {
  const c = cls.check;
  if (!c) return h('span', { class: 'hint', text: '–' });
  return h('span', { class: c.holds ? 'ok' : 'bad', title: c.summary, text: c.holds ? 'holds' : 'breaks' });
}

// classRows is one class: a row of figures, then a row with its ceilings
// and remedies, in a tbody of their own.
function classRows(cls) {
  const cell = (field, label, ...content) => h('td', { 'data-field': field, 'data-label': label }, ...content);
  const p = cls.predicted;
  return h('tbody', { 'data-class': cls.name, class: cls.fits === true ? undefined : 'infeasible' },
    h('tr', {},
      h('th', { scope: 'row', 'data-label': 'Class' }, h('span', { class: 'class-name', text: cls.name }),
        h('span', { class: 'hint', text: `${cls.mode} · ${cls.quota}` })),
      cell('pool', 'Pool (cap)', h('strong', { text: String(cls.pool) })),
      cell('min_pool', 'Min pool (needed)', cls.min_pool === null ? 'none fits' : String(cls.min_pool)),
      cell('binding', 'Binding', h('mark', { class: 'binding', text: cls.binding_constraint }),
        cls.tied_constraints && cls.tied_constraints.length ? h('span', { class: 'hint', text: ` (tied: ${cls.tied_constraints.join(', ')})` }) : null),
      cell('fits', 'Fits', cls.fits === undefined ? h('span', { class: 'hint', text: '–' }) : h('span', { class: cls.fits ? 'ok' : 'bad', text: cls.fits ? 'yes' : 'no' }),
        cls.feasible && cls.fits === false ? h('span', { class: 'hint', text: ' (feasible by the model)' }) : null),
      cell('check', 'Check', checkCell(cls)),
      cell('ttft', 'TTFT p95', latency(p.ttft_p95_ms, cls)),
      cell('e2e', 'E2E p95', latency(p.e2e_p95_ms, cls), p.shed_share ? h('span', {
        class: p.shed_share > 0.01 ? 'bad' : 'hint',
        title: 'Share of its requests the client sheds, those that wait longer than admission.max_queue_wait_ms for a slot; the percentiles are over the requests served, and over 1 % the class does not fit.',
        text: ` sheds ${num(100 * p.shed_share, 2)}\u00a0%`,
      }) : null),
      cell('throughput', 'req/s (demand / capacity)', rates(cls))),
    h('tr', { class: 'more' },
      h('td', { colspan: COLUMNS.length, 'data-field': 'ceilings' },
        h('span', { class: 'more-label', text: 'Ceilings' }),
        h('ul', { class: 'ceilings' }, cls.ceilings.map((c) => ceilingItem(cls, c)))),
    ),
    h('tr', { class: 'more' },
      h('td', { colspan: COLUMNS.length, 'data-field': 'remedies' },
        h('span', { class: 'more-label', text: 'Remedies' }), remedies(cls))));
}

function table(plan) {
  return h('div', { class: 'table-wrap' },
    h('table', { class: 'plan-table' },
      h('caption', { class: 'visually-hidden', text: 'Pool and binding constraint of each class' }),
      h('thead', {}, h('tr', {}, COLUMNS.map((c) => h('th', { scope: 'col', text: c })))),
      plan.classes.map(classRows)),
    h('p', { class: 'hint legend', text: LEGEND }));
}

function checkSummary(plan) {
  if (!plan.check) return null;
  const runs = plan.check.runs.map((r) => `${num(r.duration_s, 0)}\u00a0s${plan.check.runs.length > 1 ? ` from ${clock(r.start_hour)} UTC` : ''}, ${num(r.events, 0)} events`).join('; ');
  return h('p', { class: plan.check.holds ? 'check ok' : 'check bad', 'data-field': 'check' },
    `Check: ${plan.check.summary} (seeded simulation of the plan: ${runs}).`);
}

function clock(hours) {
  const m = Math.round(hours * 60);
  return `${String(Math.floor(m / 60) % 24).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`;
}

function windows(plan) {
  if (!plan.windows || plan.windows.length === 0) return null;
  return h('ul', { class: 'windows', 'aria-label': 'Windows of the day (UTC)' }, plan.windows.map((w) =>
    h('li', {}, h('strong', { text: `${clock(w.start_hour)}–${clock(w.start_hour + w.hours)} UTC` }), ': ',
      w.classes.map((c) => `${c.name} pool ${c.pool} (${c.binding_constraint})${c.sets_pool ? ', sets its pool' : ''}`).join('; '))));
}

function warnings(list, label) {
  if (!list || list.length === 0) return null;
  return h('ul', { class: 'warnings', 'aria-label': label }, list.map((w) => h('li', { text: w })));
}

function quotas(plan) {
  const items = plan.quotas.map((q) => {
    const use = Object.entries(q.utilization || {}).map(([dim, u]) => `${dim} ${num(u * 100, 0)} %`).join(', ');
    const cost = q.cost ? `; ${costText(q.cost)}` : '';
    return h('li', { 'data-quota': q.name }, h('strong', { text: q.name }), `: ${use || 'no limits'} used at the stated demand${cost}`);
  });
  if (plan.cost) {
    items.push(h('li', { 'data-field': 'cost' }, h('strong', { text: 'In total' }), `: the plan ${costText(plan.cost)}`));
  }
  return h('ul', { class: 'quotas' }, items);
}

function classDetails(cls) {
  return h('article', { class: 'class-card', 'data-class': cls.name },
    h('h3', { text: cls.name }),
    h('p', { text: cls.explanation }),
    cls.check ? h('p', { class: cls.check.holds ? 'check ok' : 'check bad', text: `Check: ${cls.check.summary}.` }) : null,
    warnings(cls.warnings, `Warnings for ${cls.name}`),
    h('figure', {}, ceilingChart(cls),
      h('figcaption', { class: 'hint', text: 'Ceilings on a log scale; the dashed line is the smallest pool the demand needs. Hover a bar for its derivation.' })));
}

// renderPlan shows a plan in the element.
export function renderPlan(el, plan) {
  replace(el,
    warnings(plan.warnings, 'Warnings'),
    table(plan),
    checkSummary(plan),
    windows(plan),
    quotas(plan),
    h('div', { class: 'class-cards' }, plan.classes.map(classDetails)));
}
