// Paths into a scenario, in the three spellings the page meets:
// segments (["classes", 0, "output_tokens", "p95"]), API error locations
// ("body.scenario.classes[0].output_tokens.p95") and JSON Pointers
// ("/classes/0/output_tokens/p95").

// fromLocation returns the segments of an error location below prefix
// ("body.scenario"), or null when the location is elsewhere.
export function fromLocation(location, prefix) {
  if (location !== prefix && !location.startsWith(`${prefix}.`) && !location.startsWith(`${prefix}[`)) return null;
  const rest = location.slice(prefix.length);
  const segments = [];
  for (const m of rest.matchAll(/\.([^.[\]]+)|\[(\d+)\]/g)) {
    segments.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  }
  return segments;
}

// fromPointer returns the segments of a JSON Pointer (RFC 6901); null when
// it is not one.
export function fromPointer(pointer) {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) return null;
  return pointer.slice(1).split('/').map((s) => {
    const token = s.replaceAll('~1', '/').replaceAll('~0', '~');
    return /^(0|[1-9]\d*)$/.test(token) ? Number(token) : token;
  });
}

// toPointer spells segments as a JSON Pointer.
export function toPointer(segments) {
  return segments.map((s) => `/${String(s).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('');
}

// display spells segments as the API's error paths do:
// classes[0].output_tokens.p95.
export function display(segments) {
  return segments.map((s, i) => (typeof s === 'number' ? `[${s}]` : `${i ? '.' : ''}${s}`)).join('');
}

// getAt returns the value at the segments of a document, undefined when
// absent.
export function getAt(doc, segments) {
  let cur = doc;
  for (const s of segments) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = cur[s];
  }
  return cur;
}

// withValue returns a copy of the document with the value at the
// segments; the parent must exist.
export function withValue(doc, segments, value) {
  const copy = structuredClone(doc);
  const parent = getAt(copy, segments.slice(0, -1));
  if (parent === null || typeof parent !== 'object') throw new Error(`no object at ${toPointer(segments.slice(0, -1)) || '/'}`);
  parent[segments.at(-1)] = value;
  return copy;
}
