// Small helpers to build the DOM and format numbers.

const SVG_NS = 'http://www.w3.org/2000/svg';

function build(node, attrs, children) {
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'text') node.textContent = value;
    else if (name === 'on') for (const [type, fn] of Object.entries(value)) node.addEventListener(type, fn);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

// h builds an HTML element: h('td', {class: 'num'}, 'text', child...).
// The attribute "text" sets the text content, "on" adds event listeners.
export function h(tag, attrs = {}, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// svg builds an SVG element, like h.
export function svg(tag, attrs = {}, ...children) {
  return build(document.createElementNS(SVG_NS, tag), attrs, children);
}

// byId returns the element with the id, which the page must have.
export function byId(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`the page has no #${id}`);
  return el;
}

// replace puts the children in place of the element's content.
export function replace(el, ...children) {
  el.replaceChildren(...children.flat().filter((c) => c !== null && c !== undefined && c !== false));
}

const formats = new Map();

// num formats a number for people: grouped thousands, at most `digits`
// decimals; "–" for null.
export function num(value, digits = 0) {
  if (value === null || value === undefined || Number.isNaN(value)) return '–';
  if (!formats.has(digits)) {
    formats.set(digits, new Intl.NumberFormat('en-US', { maximumFractionDigits: digits }));
  }
  return formats.get(digits).format(value);
}

// debounce calls fn once calls have stopped for `ms` milliseconds.
export function debounce(fn, ms) {
  let timer;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}

// setFieldError shows a message in the element that describes an input
// (aria-describedby) and marks the input invalid; an empty message clears
// it.
export function setFieldError(input, message) {
  const out = document.getElementById(input.getAttribute('aria-describedby') || '');
  if (out) out.textContent = message || '';
  if (message) input.setAttribute('aria-invalid', 'true');
  else input.removeAttribute('aria-invalid');
}
