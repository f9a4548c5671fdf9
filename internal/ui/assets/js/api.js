// Calls to planner's API. Errors come back as ApiError, holding the
// RFC 9457 problem's detail and its errors[] ({location, message, value}).
// When the server wants a bearer token (401), the page asks for one, keeps
// it in sessionStorage and retries once.

import { byId } from './dom.js';

const TOKEN_KEY = 'planner.token';

// ApiError is a refused or failed API call.
export class ApiError extends Error {
  constructor(status, detail, errors = []) {
    super(detail || `the server answered ${status}`);
    this.status = status;
    this.errors = errors;
  }
}

// token is the bearer token of this tab, '' when none.
export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

// authHeaders are the headers that carry the token, if any.
export function authHeaders() {
  const t = token();
  return t ? { Authorization: `Bearer ${t}` } : {};
}

// askToken shows the token dialog and resolves to true when a token was
// given.
export function askToken(reason = '') {
  const dialog = byId('token-dialog');
  const input = byId('token-input');
  input.value = token();
  if (reason) dialog.querySelector('p').textContent = reason;
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      if (dialog.returnValue === 'save' && input.value.trim()) {
        sessionStorage.setItem(TOKEN_KEY, input.value.trim());
        resolve(true);
        return;
      }
      if (dialog.returnValue === 'forget') sessionStorage.removeItem(TOKEN_KEY);
      resolve(false);
    }, { once: true });
    dialog.returnValue = '';
    dialog.showModal();
  });
}

async function problemOf(resp) {
  let body = null;
  try {
    body = await resp.json();
  } catch {
    // not JSON: the status says it all
  }
  const detail = body && (body.detail || body.title);
  return new ApiError(resp.status, detail || `${resp.status} ${resp.statusText}`, (body && body.errors) || []);
}

// call sends one API request with a JSON body (or none) and returns the
// decoded answer and the response.
export async function call(method, path, body, retried = false) {
  const headers = { Accept: 'application/json', ...authHeaders() };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let resp;
  try {
    resp = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (err) {
    throw new ApiError(0, `the server cannot be reached (${err.message})`);
  }
  if (resp.status === 401 && !retried) {
    const given = await askToken(token()
      ? 'The server refused this token. Give another one.'
      : 'This server needs a bearer token for its API. The page keeps it in this tab only (session storage).');
    if (given) return call(method, path, body, true);
  }
  if (!resp.ok) throw await problemOf(resp);
  const answer = await resp.text();
  return { data: answer ? JSON.parse(answer) : null, resp };
}

// post sends a JSON body and returns the decoded answer.
export async function post(path, body) {
  return (await call('POST', path, body)).data;
}

// text fetches a file of the page itself (examples), which needs no token.
export async function text(path) {
  const resp = await fetch(path);
  if (!resp.ok) throw new ApiError(resp.status, `${path}: ${resp.status} ${resp.statusText}`);
  return resp.text();
}
