// Charts drawn as inline SVG: the ceilings of a class as bars, and line
// charts for the what-if sweep and the probe's curves. Colours and fonts
// come from the stylesheet (classes), so the charts follow the page.

import { h, svg, num } from './dom.js';

let chartCount = 0;

// frame starts an SVG of the given size, titled for screen readers.
function frame(width, height, title, description) {
  chartCount += 1;
  const id = `chart-${chartCount}`;
  return svg('svg', {
    viewBox: `0 0 ${width} ${height}`, class: 'svg-chart', role: 'img',
    'aria-labelledby': `${id}-title ${id}-desc`,
  },
  svg('title', { id: `${id}-title`, text: title }),
  svg('desc', { id: `${id}-desc`, text: description }));
}

// niceTicks returns about `count` round values spanning [lo, hi].
function niceTicks(lo, hi, count = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => raw <= s);
  const ticks = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

function linear(d0, d1, r0, r1) {
  const span = d1 - d0 || 1;
  return (v) => r0 + ((v - d0) / span) * (r1 - r0);
}

// compact writes axis numbers short: 1.5M, 250k.
function compact(v) {
  const a = Math.abs(v);
  if (a >= 1e9) return `${num(v / 1e9, 1)}G`;
  if (a >= 1e6) return `${num(v / 1e6, 2)}M`;
  if (a >= 1e4) return `${num(v / 1e3, 1)}k`;
  return num(v, 2);
}

// ceilingChart draws one class's ceilings as horizontal bars on a log
// scale: unbounded ones run off the right edge, the binding one is marked,
// and lines show the pool and the smallest pool the demand needs.
export function ceilingChart(cls) {
  const rows = cls.ceilings;
  const width = 460;
  const left = 78;
  const right = 72;
  const rowH = 22;
  const top = 10;
  const height = top + rows.length * rowH + 34;
  const finite = rows.map((c) => c.max_pool).filter((v) => v !== null && v > 0);
  const top10 = 10 ** Math.max(1, Math.ceil(Math.log10(Math.max(...finite, cls.min_pool || 1, 10) * 1.2)));
  const x = (v) => left + (Math.log10(Math.max(v, 1)) / Math.log10(top10)) * (width - left - right);
  const bound = rows.find((c) => c.constraint === cls.binding_constraint);
  const chart = frame(width, height, `Ceilings of ${cls.name}`,
    `${rows.length} ceilings on a log scale; the pool is ${cls.pool}, bound by ${cls.binding_constraint}.`);

  for (let t = 1; t <= top10; t *= 10) {
    chart.append(svg('line', { class: 'grid', x1: x(t), x2: x(t), y1: top, y2: height - 24 }),
      svg('text', { class: 'tick', x: x(t), y: height - 10, 'text-anchor': 'middle', text: num(t) }));
  }
  rows.forEach((c, i) => {
    const y = top + i * rowH;
    const binding = c === bound;
    const unbounded = c.max_pool === null;
    const end = unbounded ? width - right : x(c.max_pool);
    chart.append(
      svg('text', { class: `label${binding ? ' binding' : ''}`, x: left - 6, y: y + 15, 'text-anchor': 'end', text: c.constraint }),
      svg('rect', { class: `bar${binding ? ' binding' : ''}${unbounded ? ' unbounded' : ''}`, x: left, y: y + 3, width: Math.max(end - left, 1), height: rowH - 7 },
        svg('title', { text: `${c.constraint}: ${unbounded ? 'unbounded' : c.max_pool}. ${c.detail}` })),
      svg('text', { class: `value${binding ? ' binding' : ''}`, x: end + 4, y: y + 15,
        text: unbounded ? 'unbounded' : `${num(c.max_pool)}${binding ? ' ◀ binding' : ''}` }),
    );
  });
  const axisY = height - 24;
  if (cls.min_pool !== null && cls.min_pool > 0) {
    chart.append(svg('line', { class: 'min-pool', x1: x(cls.min_pool), x2: x(cls.min_pool), y1: top, y2: axisY },
      svg('title', { text: `min pool ${cls.min_pool}` })));
  }
  chart.append(svg('line', { class: 'axis', x1: left, x2: width - right, y1: axisY, y2: axisY }));
  return chart;
}

// lineChart draws series of {x, y} points against linear axes.
// opts: title, description, xLabel, yLabel, series [{name, points, cls}],
// markers [{x, y, label, cls}] (labelled points), vlines [{x, label, cls}],
// dots (false: lines only, for long time series).
export function lineChart(opts) {
  const width = 480;
  const height = 260;
  const labelled = (opts.vlines || []).length;
  const m = { left: 58, right: 16, top: 10 + labelled * 13, bottom: 44 };
  const all = opts.series.flatMap((s) => s.points);
  const xs = all.map((p) => p.x).concat((opts.vlines || []).map((v) => v.x));
  const ys = all.map((p) => p.y).filter((v) => v !== null);
  const xTicks = niceTicks(Math.min(...xs), Math.max(...xs), 5);
  const yTicks = niceTicks(0, Math.max(...ys, 1) * 1.1, 5);
  const x = linear(Math.min(...xs), Math.max(...xs), m.left, width - m.right);
  const yTop = Math.max(yTicks.at(-1), Math.max(...ys, 1) * 1.1);
  const y = linear(0, yTop, height - m.bottom, m.top);
  const chart = frame(width, height, opts.title, opts.description);

  for (const t of yTicks) {
    chart.append(svg('line', { class: 'grid', x1: m.left, x2: width - m.right, y1: y(t), y2: y(t) }),
      svg('text', { class: 'tick', x: m.left - 6, y: y(t) + 4, 'text-anchor': 'end', text: compact(t) }));
  }
  for (const t of xTicks) {
    if (x(t) < m.left - 1 || x(t) > width - m.right + 1) continue;
    chart.append(svg('text', { class: 'tick', x: x(t), y: height - m.bottom + 16, 'text-anchor': 'middle', text: compact(t) }));
  }
  chart.append(
    svg('line', { class: 'axis', x1: m.left, x2: width - m.right, y1: height - m.bottom, y2: height - m.bottom }),
    svg('line', { class: 'axis', x1: m.left, x2: m.left, y1: m.top, y2: height - m.bottom }),
    svg('text', { class: 'axis-label', x: (m.left + width - m.right) / 2, y: height - 6, 'text-anchor': 'middle', text: opts.xLabel }),
    svg('text', { class: 'axis-label', x: 14, y: (m.top + height - m.bottom) / 2, 'text-anchor': 'middle',
      transform: `rotate(-90 14 ${(m.top + height - m.bottom) / 2})`, text: opts.yLabel }),
  );
  (opts.vlines || []).forEach((v, i) => {
    const flip = x(v.x) > width * 0.8;
    chart.append(svg('line', { class: `vline ${v.cls || ''}`, x1: x(v.x), x2: x(v.x), y1: 13 + i * 13, y2: height - m.bottom }),
      svg('text', { class: `vline-label ${v.cls || ''}`, x: flip ? x(v.x) - 4 : x(v.x) + 4, y: 10 + i * 13,
        'text-anchor': flip ? 'end' : 'start', text: v.label }));
  });
  opts.series.forEach((s, i) => {
    const cls = s.cls || `series-${i % 6}`;
    let d = '';
    let pen = false;
    for (const p of s.points) {
      if (p.y === null) { pen = false; continue; }
      d += `${pen ? 'L' : 'M'}${x(p.x).toFixed(1)},${y(p.y).toFixed(1)}`;
      pen = true;
    }
    chart.append(svg('path', { class: `line ${cls}`, 'data-series': s.name, d }));
    if (opts.dots === false) return;
    for (const p of s.points) {
      if (p.y === null) continue;
      chart.append(svg('circle', { class: `dot ${cls}${p.hollow ? ' hollow' : ''}`, cx: x(p.x), cy: y(p.y), r: 2.5 },
        svg('title', { text: `${s.name}: ${num(p.y, 2)} at ${num(p.x, 3)}${p.note ? ` (${p.note})` : ''}` })));
    }
  });
  for (const mk of opts.markers || []) {
    const cx = x(mk.x);
    const cy = y(mk.y);
    chart.append(
      svg('path', { class: `marker ${mk.cls || ''}`, d: `M${cx},${cy - 6}L${cx + 6},${cy}L${cx},${cy + 6}L${cx - 6},${cy}Z` },
        svg('title', { text: mk.label })),
      svg('text', { class: 'marker-label', x: cx, y: cy - 9, 'text-anchor': 'middle', text: mk.short || mk.label }),
    );
  }
  return chart;
}

// legend lists the series names with their colours.
export function legend(series) {
  return h('ul', { class: 'legend' },
    series.map((s, i) => h('li', {}, h('span', { class: `swatch ${s.cls || `series-${i % 6}`}`, 'aria-hidden': 'true' }), s.name)));
}
