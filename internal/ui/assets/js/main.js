// The page: the scenario editor and its plan, the what-if panel, the
// simulation panel, the probe view and the comparison of probes, wired
// together.

import { byId, h, replace, debounce, num } from './dom.js';
import { post, text, askToken, ApiError } from './api.js';
import { parse, SyntaxProblem, lineFor, withValue, withTopLevel } from './source.js';
import { fromLocation, display, withValue as docWithValue } from './paths.js';
import { renderPlan } from './plan-view.js';
import { Editor } from './editor.js';
import { WhatIf } from './whatif.js';
import { Probe } from './probe.js';
import { Simulate } from './simulate.js';
import { Compare } from './compare.js';

const planSection = byId('plan');
const planBody = byId('plan-body');
const banner = byId('plan-banner');
const planState = byId('plan-state');
const examples = byId('example-select');

// state holds the last scenario that planned and its plan, and the
// example last loaded into the editor with its text as loaded.
const state = { doc: null, plan: null, previewSeq: 0, loaded: null };

const editor = new Editor(planEditor, describeExample);
const whatif = new WhatIf({ preview, apply, scenarioErrors: (errors) => editor.showErrors(problems(errors, editor.text)) });
const simulate = new Simulate({ scenarioErrors: (errors) => editor.showErrors(problems(errors, editor.text)) });
new Probe({ useLatency });
new Compare();

function setPlanState(status, message) {
  planSection.dataset.status = status;
  planState.textContent = message;
}

// problems turns API error details into editor problems: the path as the
// API spells it below the scenario, and the line of the text it names.
function problems(errors, source) {
  return errors.map((e) => {
    const segments = fromLocation(e.location, 'body.scenario');
    if (!segments) return { path: e.location, message: e.message, line: null };
    return { path: display(segments) || 'scenario', message: e.message, line: lineFor(source, segments) };
  });
}

function showPlan(plan, variation) {
  renderPlan(planBody, plan);
  banner.hidden = !variation;
  if (variation) {
    replace(banner,
      h('p', {},
        h('strong', { text: 'What-if: ' }),
        `${variation.path} = ${num(variation.value, 3)} (the scenario has ${num(variation.base, 3)}). `,
        h('a', { href: '#whatif', text: 'What-if controls' })));
  }
  planSection.dataset.status = variation ? 'whatif' : 'ready';
  planSection.dataset.value = variation ? String(variation.value) : '';
}

// planEditor plans the editor's scenario and shows the plan or the
// problems.
async function planEditor() {
  const source = editor.text;
  let doc;
  try {
    doc = parse(source);
  } catch (err) {
    if (!(err instanceof SyntaxProblem)) throw err;
    editor.showErrors([{ path: '', message: `not YAML or JSON: ${err.message}`, line: err.line }]);
    setPlanState('error', 'The scenario does not parse.');
    return;
  }
  setPlanState('loading', 'Planning…');
  let plan;
  try {
    plan = await post('/v1/plans', { scenario: doc });
  } catch (err) {
    const list = err instanceof ApiError && err.errors.length ? problems(err.errors, source) : [{ path: '', message: err.message, line: null }];
    editor.showErrors(list);
    state.previewSeq += 1;
    if (state.plan) showPlan(state.plan, null);
    setPlanState('error', state.plan ? 'The scenario has problems; the plan shown is the last one that planned.' : err.message);
    return;
  }
  editor.showErrors([]);
  describeExample();
  state.doc = doc;
  state.plan = plan;
  state.previewSeq += 1;
  showPlan(plan, null);
  setPlanState('ready', `Planned ${plan.classes.length} ${plan.classes.length === 1 ? 'class' : 'classes'}.`);
  whatif.setScenario(doc, plan);
  simulate.setScenario(doc);
}

const previewPlan = debounce(async (segments, value, seq) => {
  let plan;
  try {
    plan = await post('/v1/plans', { scenario: docWithValue(state.doc, segments, value) });
  } catch (err) {
    if (seq === state.previewSeq) setPlanState('error', `What-if plan failed: ${err.message}`);
    return;
  }
  if (seq !== state.previewSeq) return;
  showPlan(plan, { path: display(segments), value, base: whatif.base });
}, 150);

// preview shows the plan at a what-if value: the scenario's own plan at
// its own value, otherwise the plan of the varied scenario.
function preview(segments, value, isBase) {
  const seq = ++state.previewSeq;
  if (isBase) {
    showPlan(state.plan, null);
    return;
  }
  previewPlan(segments, value, seq);
}

// apply writes a what-if value into the editor and plans it.
function apply(segments, value) {
  try {
    editor.text = withValue(editor.text, segments, value);
  } catch (err) {
    editor.showErrors([{ path: display(segments), message: err.message, line: null }]);
    return;
  }
  describeExample();
  planEditor();
}

// useLatency puts a probe's latency block into the editor and plans it.
function useLatency(latency) {
  try {
    editor.text = withTopLevel(editor.text, 'latency', latency);
  } catch (err) {
    editor.showErrors([{ path: 'latency', message: err.message, line: null }]);
    return;
  }
  describeExample();
  byId('scenario').scrollIntoView();
  planEditor();
}

async function loadExample() {
  const option = examples.selectedOptions[0];
  if (!option) return;
  try {
    editor.text = await text(option.dataset.url);
  } catch (err) {
    setPlanState('error', err.message);
    return;
  }
  state.loaded = { name: option.value, text: editor.text };
  describeExample();
  await planEditor();
}

// describeExample says what the editor holds: the example chosen, as
// loaded, with its description; or a scenario of the person's own (pasted,
// typed, or an example changed), and what Load would put in its place.
function describeExample() {
  const option = examples.selectedOptions[0];
  const el = byId('example-description');
  const loaded = state.loaded;
  const asLoaded = loaded !== null && editor.text === loaded.text;
  if (option && asLoaded && loaded.name === option.value) {
    el.dataset.holds = 'example';
    el.textContent = option.dataset.description;
    return;
  }
  el.dataset.holds = asLoaded ? 'another-example' : 'own';
  const holds = asLoaded ? `The editor holds the example ${loaded.name}.` : 'The editor holds a scenario of your own.';
  el.textContent = option ? `${holds} Load puts ${option.value} in its place: ${option.dataset.description}` : holds;
}

async function loadExamples() {
  const list = JSON.parse(await text('/ui/examples/')).examples;
  replace(examples, list.map((e) => h('option', { value: e.name, 'data-url': e.url, 'data-description': e.description, text: e.name })));
  if (list.some((e) => e.name === 'three-classes')) examples.value = 'three-classes';
  describeExample();
}

byId('plan-button').addEventListener('click', planEditor);
byId('example-load').addEventListener('click', loadExample);
examples.addEventListener('change', describeExample);
byId('token-button').addEventListener('click', () => askToken());

loadExamples().then(loadExample).catch((err) => setPlanState('error', err.message));
