// The scenario as text: parsing YAML or JSON (JSON is YAML too), finding
// the line of a path, and changing a value or a top-level block while
// keeping the rest of the text (comments included) as written.

import { load, dump, parseEvents, getScalarValue, EVENT_ID } from '../vendor/js-yaml.esm.min.mjs';
import { toPointer } from './paths.js';

// SyntaxProblem is text that is not YAML or JSON, with its 1-based line.
export class SyntaxProblem extends Error {
  constructor(message, line) {
    super(message);
    this.line = line;
  }
}

// parse returns the document the text holds.
export function parse(text) {
  let doc;
  try {
    doc = load(text);
  } catch (err) {
    const line = err.mark ? err.mark.line + 1 : null;
    throw new SyntaxProblem(err.reason || err.message, line);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new SyntaxProblem('a scenario is a mapping (quotas, latency, classes, policy)', 1);
  }
  return doc;
}

// isJSON tells whether the text is written as JSON rather than block YAML.
function isJSON(text) {
  return text.trimStart().startsWith('{');
}

// index maps the JSON Pointer of every node of the text to where it is:
// `at`, the offset of its key (or of the item, in a list), and for a
// scalar `start` and `end` of its value.
function index(text) {
  const nodes = new Map();
  const stack = [{ kind: 'document', path: [] }];
  for (const ev of parseEvents(text, {})) {
    const top = stack.at(-1);
    if (ev.type === EVENT_ID.DOCUMENT) continue;
    if (ev.type === EVENT_ID.POP) {
      const done = stack.pop();
      if (done.isKey) stack.at(-1).key = '';
      continue;
    }
    const collection = ev.type === EVENT_ID.MAPPING || ev.type === EVENT_ID.SEQUENCE;
    const offset = ev.type === EVENT_ID.SCALAR ? ev.valueStart : ev.start;
    if (top.kind === 'mapping' && top.key === null) {
      // a key: a scalar, or (rarely) a collection to skip
      if (collection) stack.push({ kind: 'skip', isKey: true });
      else {
        top.key = ev.type === EVENT_ID.SCALAR ? getScalarValue(text, ev) : '';
        top.keyAt = offset;
      }
      continue;
    }
    let path = null;
    let at = offset;
    if (top.kind === 'document') path = [];
    else if (top.kind === 'mapping') {
      path = top.path && [...top.path, top.key];
      at = top.keyAt;
      top.key = null;
    } else if (top.kind === 'sequence') {
      path = top.path && [...top.path, top.items];
      top.items += 1;
    }
    if (path) {
      const node = { at };
      if (ev.type === EVENT_ID.SCALAR) Object.assign(node, { start: ev.valueStart, end: ev.valueEnd });
      nodes.set(toPointer(path), node);
    }
    if (collection) {
      stack.push({ kind: ev.type === EVENT_ID.MAPPING ? 'mapping' : 'sequence', path, key: null, items: 0 });
    }
  }
  return nodes;
}

function lineOf(text, offset) {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line += 1;
  return line;
}

// lineFor returns the 1-based line of the deepest node of the path that the
// text has (the key itself when present), or null when the text does not
// parse.
export function lineFor(text, segments) {
  let nodes;
  try {
    nodes = index(text);
  } catch {
    return null;
  }
  for (let n = segments.length; n >= 0; n -= 1) {
    const node = nodes.get(toPointer(segments.slice(0, n)));
    if (node) return lineOf(text, node.at);
  }
  return null;
}

// withScalar returns the text with the number at the path replaced,
// keeping everything else as written; null when the text has no scalar
// there.
function withScalar(text, segments, value) {
  const node = index(text).get(toPointer(segments));
  if (!node || node.start === undefined) return null;
  return text.slice(0, node.start) + String(value) + text.slice(node.end);
}

// withValue returns the text with the value at the path: in place when
// the text has a scalar there, otherwise by writing the document out again
// (as JSON when it was JSON, else as YAML, without its comments).
export function withValue(text, segments, value) {
  const inPlace = withScalar(text, segments, value);
  if (inPlace !== null) return inPlace;
  const doc = parse(text);
  let parent = doc;
  for (const s of segments.slice(0, -1)) {
    if (parent[s] === undefined) parent[s] = {};
    parent = parent[s];
  }
  parent[segments.at(-1)] = value;
  return isJSON(text) ? `${JSON.stringify(doc, null, 2)}\n` : dump(doc, { lineWidth: 120 });
}

// withTopLevel returns the text with the top-level key set to value. Block
// YAML keeps its other keys and comments: the key's lines are replaced, or
// new ones go before "classes:". JSON is written out again.
export function withTopLevel(text, key, value) {
  const doc = parse(text);
  if (isJSON(text)) return `${JSON.stringify({ ...doc, [key]: value }, null, 2)}\n`;
  const block = dump({ [key]: value }, { lineWidth: 120 });
  const nodes = index(text);
  const keys = [...nodes.entries()]
    .filter(([p]) => /^\/[^/]+$/.test(p))
    .map(([p, node]) => ({ name: p.slice(1), start: text.lastIndexOf('\n', node.at - 1) + 1 }));
  const i = keys.findIndex((k) => k.name === key);
  if (i === -1) {
    const classes = keys.find((k) => k.name === 'classes');
    const at = classes ? leadingCommentStart(text, classes.start) : text.length;
    const before = text.slice(0, at);
    return `${before}${before && !before.endsWith('\n') ? '\n' : ''}${block}${text.slice(at)}`;
  }
  const end = i + 1 < keys.length ? leadingCommentStart(text, keys[i + 1].start) : text.length;
  return text.slice(0, keys[i].start) + block + text.slice(end);
}

// leadingCommentStart moves a line start up over the comment and blank
// lines just above it, which belong to the key below.
function leadingCommentStart(text, start) {
  let at = start;
  while (at > 0) {
    const prev = text.lastIndexOf('\n', at - 2) + 1;
    const line = text.slice(prev, at - 1).trim();
    if (line !== '' && !line.startsWith('#')) break;
    at = prev;
  }
  return at;
}
