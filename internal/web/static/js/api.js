// The API client: every call is a fetch with the bearer token in the
// Authorization header. Streams are fetch + a ReadableStream SSE parser,
// because EventSource cannot send headers and the token must never be put
// in a URL (URLs end up in logs, history and Referer headers).

const TOKEN_KEY = 'agentchat.token';

/** The token of this tab (sessionStorage: gone when the tab closes). */
export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || '';
}

export function setToken(t) {
  if (t) sessionStorage.setItem(TOKEN_KEY, t);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** ApiError is a JSON error answer: {error: {code, message}}. */
export class ApiError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

function headers(extra = {}, tok = token()) {
  const h = { Authorization: `Bearer ${tok}`, ...extra };
  return h;
}

async function failure(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    // not JSON: keep the status
  }
  const e = body?.error ?? {};
  return new ApiError(res.status, e.code ?? `http_${res.status}`, e.message ?? `the server answered ${res.status}`, e);
}

/**
 * api calls a JSON endpoint and returns its decoded answer (null for 204).
 * @param {string} path
 * @param {{method?: string, body?: any, token?: string, signal?: AbortSignal}} [opt]
 */
export async function api(path, opt = {}) {
  const init = { method: opt.method ?? 'GET', headers: headers({}, opt.token ?? token()), signal: opt.signal };
  if (opt.body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(opt.body);
  }
  const res = await fetch(path, init);
  if (!res.ok) throw await failure(res);
  if (res.status === 204) return null;
  return res.json();
}

/**
 * stream opens an SSE endpoint and calls onEvent({id, event, data}) for each
 * native frame (pings included, so a caller can tell the line is alive). It
 * resolves when the server ends the stream, and rejects with an ApiError when
 * the server refuses it.
 * @param {string} path
 * @param {{method?: string, body?: any, lastEventId?: string, signal?: AbortSignal,
 *          onEvent: (f: {id: string, event: string, data: any}) => void,
 *          onOpen?: (res: Response) => void}} opt
 */
export async function stream(path, opt) {
  const h = headers({ Accept: 'text/event-stream' });
  if (opt.lastEventId) h['Last-Event-ID'] = opt.lastEventId;
  const init = { method: opt.method ?? 'GET', headers: h, signal: opt.signal };
  if (opt.body !== undefined) {
    h['Content-Type'] = 'application/json';
    init.body = JSON.stringify(opt.body);
  }
  const res = await fetch(path, init);
  if (!res.ok) throw await failure(res);
  opt.onOpen?.(res);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = sseParser(opt.onEvent);
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parser(value);
  }
}

/**
 * sseParser returns a function that takes text chunks and calls emit once per
 * complete frame, following the HTML SSE rules: fields per line, data lines
 * joined by "\n", a blank line dispatches, comments ignored. The data of
 * agentchat's native frames is the JSON envelope {event, id, data}.
 */
export function sseParser(emit) {
  let buf = '';
  let data = [];
  let event = '';
  let id = '';
  const dispatch = () => {
    if (data.length) {
      let env = null;
      try {
        env = JSON.parse(data.join('\n'));
      } catch {
        env = null;
      }
      if (env) emit({ id: id || env.id || '', event: event || env.event, data: env.data ?? {} });
    }
    data = [];
    event = '';
    id = '';
  };
  return (chunk) => {
    buf += chunk;
    const lines = buf.split(/\r\n|\r|\n/);
    buf = lines.pop();
    for (const line of lines) {
      if (line === '') {
        dispatch();
        continue;
      }
      if (line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      let value = i < 0 ? '' : line.slice(i + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'event') event = value;
      else if (field === 'id') id = value;
    }
  };
}

/** providers lists the OpenID providers the console may sign in with (no token needed). */
export async function providers() {
  const res = await fetch('/v1/auth/providers');
  if (!res.ok) throw await failure(res);
  return (await res.json()).providers;
}

/**
 * upload stores a file (POST /v1/files, its bytes as the raw body, its name
 * in the query) and returns the file's record {id, name, mediaType, size, …}.
 * @param {File} file
 */
export async function upload(file) {
  const name = file.name || 'pasted';
  const res = await fetch(`/v1/files?${new URLSearchParams({ filename: name })}`, {
    method: 'POST',
    headers: headers({ 'Content-Type': file.type || 'application/octet-stream' }),
    body: file,
  });
  if (!res.ok) throw await failure(res);
  return res.json();
}

/** fileBlob reads a stored file's bytes, with the token in the header (never in the URL). */
export async function fileBlob(id) {
  const res = await fetch(`/v1/files/${encodeURIComponent(id)}/content`, { headers: headers() });
  if (!res.ok) throw await failure(res);
  return res.blob();
}

/**
 * download reads a file the API answers (the usage CSV, say) with the
 * token in the header, and hands it to the browser to save as name (an
 * object URL on this origin: the token is never put in a URL).
 */
export async function download(path, name) {
  const res = await fetch(path, { headers: headers() });
  if (!res.ok) throw await failure(res);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  // The browser has read the URL once the click is handled.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
