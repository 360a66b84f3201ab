// Small DOM helpers. Text always goes in as text nodes (never innerHTML), so
// nothing the model or a user wrote can become markup.

/**
 * h creates an element: h('button', {class: 'x', onclick: fn}, 'text', child).
 * Attributes starting with "on" become listeners; false/null attributes are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** $ finds an element by id. */
export const $ = (id) => document.getElementById(id);

/** pretty formats JSON for display. */
export function pretty(v) {
  if (v === undefined || v === null || v === '') return '';
  if (typeof v === 'string') return v;
  try {
    return JSON.stringify(v, null, 2);
  } catch {
    return String(v);
  }
}

/** clip shortens a string for one-line summaries. */
export function clip(s, n = 90) {
  s = String(s ?? '').replace(/\s+/g, ' ').trim();
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}
