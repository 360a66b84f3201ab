// The usage view (#/usage): what a month's runs spent, from GET /v1/usage,
// against the limits in force, from GET /v1/usage/limits.
//
// Everyone sees their own month: tokens and cost so far, and each token or
// cost budget as a meter (used of max, and when it resets). An admin sees
// the whole tenant's month instead, by day (charts of tokens and cost,
// every day of the month, days without runs at zero), by agent, by model
// and by user (tables with cost), and can pick another month. A member's
// tables are of their own runs (the server refuses them anyone else's).
// Each table can be saved as CSV (GET /v1/usage?format=csv), for finance.

import { api, download, ApiError } from './api.js';
import { h, $ } from './dom.js';
import { t, locale, dateTime } from './i18n.js';
import { chartCard } from './charts.js';
import { agentName, ensureAgents } from './agents.js';

// The kinds of limit, as people read them (literal keys: the strings test
// finds them).
const KIND = {
  runs_per_minute: () => t('usage.kind.runsPerMinute'),
  tokens_per_day: () => t('usage.kind.tokensPerDay'),
  tokens_per_month: () => t('usage.kind.tokensPerMonth'),
  cost_per_month: () => t('usage.kind.costPerMonth'),
};
const SCOPE = {
  tenant: () => t('usage.scope.tenant'),
  user: () => t('usage.scope.user'),
  agent: () => t('usage.scope.agent'),
};

/** monthOf is a "YYYY-MM" month's first day and the next month's, UTC. */
function monthOf(ym) {
  const [y, m] = ym.split('-').map(Number);
  return [new Date(Date.UTC(y, m - 1, 1)), new Date(Date.UTC(y, m, 1))];
}

/** thisMonth is the current UTC month as "YYYY-MM". */
function thisMonth() {
  return new Date().toISOString().slice(0, 7);
}

const day = (d) => d.toISOString().slice(0, 10);

export class UsageView {
  /** @param {{me: () => any}} opt */
  constructor(opt) {
    this.opt = opt;
    this.month = thisMonth();
    this.seq = 0;
    this.data = null; // what show read: {total, limits, byDay, byAgent, byModel, byUser}
  }

  admin() {
    return this.opt.me()?.role === 'admin';
  }

  say(text, isError = false) {
    const s = $('usage-status');
    s.textContent = text;
    s.classList.toggle('error', isError);
  }

  fail(e) {
    this.say(e instanceof ApiError ? e.message : t('error.generic', { message: e.message }), true);
  }

  /** show reads the month's usage and draws it. */
  async show() {
    const seq = ++this.seq;
    this.say('');
    $('usage-title').textContent = t('usage.title');
    if (!this.data) $('usage-body').replaceChildren(h('p', { class: 'muted' }, t('usage.loading')));
    const [from, to] = monthOf(this.month);
    const range = { from: day(from), to: day(to) };
    const admin = this.admin();
    const groups = ['day', 'agent', 'model', ...(admin ? ['user'] : [])];
    const [limits, ...reports] = await Promise.all([
      this.month === thisMonth() ? api('/v1/usage/limits').then((r) => r.limits) : Promise.resolve(null),
      api(`/v1/usage?${new URLSearchParams(range)}`),
      ...groups.map((g) => readGroups(range, g)),
    ]);
    const [total, ...grouped] = reports;
    const data = { total: total.total, limits, range: [from, to], query: range };
    groups.forEach((g, i) => (data[g] = grouped[i]));
    if (data.agent) await ensureAgents(data.agent.map((g) => g.key)).catch(() => {});
    if (seq !== this.seq) return;
    this.data = data;
    this.draw();
  }

  hide() {
    ++this.seq;
    this.data = null; // read again when shown: another person may sign in meanwhile
  }

  /** redraw draws the view again (the language changed). */
  redraw() {
    if (this.data) this.draw();
    else this.show().catch((e) => this.fail(e));
  }

  draw() {
    const d = this.data;
    const admin = this.admin();
    const currency = d.total.currency || [...(d.model ?? [])].find((g) => g.currency)?.currency || '';
    const money = (v) => cost(v, currency);
    const picker = h('input', { type: 'month', id: 'usage-month', value: this.month, max: thisMonth(), required: true });
    picker.addEventListener('change', () => {
      if (!/^\d{4}-\d{2}$/.test(picker.value)) return;
      this.month = picker.value;
      this.show().catch((e) => this.fail(e));
    });
    const head = h('div', { class: 'usage-head' },
      h('p', { class: 'muted usage-whose' }, admin ? t('usage.whoseTenant', { tenant: this.opt.me()?.tenant ?? '' }) : t('usage.whoseOwn')),
      h('label', { class: 'usage-month', for: 'usage-month' }, h('span', {}, t('usage.month')), picker));
    const totals = h('dl', { class: 'usage-totals' },
      stat(t('usage.tokens'), num(d.total.totalTokens), 'usage-tokens'),
      stat(t('usage.input'), num(d.total.inputTokens)),
      stat(t('usage.output'), num(d.total.outputTokens)),
      stat(t('usage.cost'), money(d.total.cost), 'usage-cost'),
      stat(t('usage.runs'), num(d.total.runs), 'usage-runs'));
    const parts = [head, totals];
    if (d.total.estimated) parts.push(h('p', { class: 'muted small' }, t('usage.estimated')));
    if (d.limits) parts.push(this.limitsSection(d.limits, currency));

    // By day: every day of the month up to today, days without runs at zero.
    const [from, to] = d.range;
    const today = new Date();
    const byKey = new Map((d.day ?? []).map((g) => [g.key, g]));
    const days = [];
    for (let x = new Date(from); x < to && x <= today; x = new Date(x.getTime() + 86_400_000)) days.push(day(x));
    const label = (k) => dateTime(new Date(`${k}T00:00:00Z`), { month: 'short', day: 'numeric', timeZone: 'UTC' });
    const series = (f) => days.map((k) => (byKey.has(k) ? f(byKey.get(k)) : 0));
    // Without a price (no run priced), a chart of cost would be all zeros.
    const priced = Boolean(currency) || d.total.cost > 0;
    parts.push(h('section', { class: 'usage-section usage-days', 'aria-labelledby': 'usage-days-title' },
      h('h3', { id: 'usage-days-title' }, t('usage.byDay')),
      days.length ? h('div', { class: 'usage-charts' },
        chartCard({ type: 'bar', title: t('usage.tokensPerDay'), labels: days.map(label), points: false, yFormat: compact,
          datasets: [{ label: t('usage.tokens'), data: series((g) => g.totalTokens) }] }),
        priced ? chartCard({ type: 'bar', title: currency ? t('usage.costPerDayIn', { currency }) : t('usage.costPerDay'), labels: days.map(label),
          points: false, yFormat: axisCost,
          datasets: [{ label: t('usage.cost'), data: series((g) => g.cost) }] }) : null) : h('p', { class: 'muted' }, t('usage.none')),
      days.length && !priced ? h('p', { class: 'muted small usage-unpriced' }, t('usage.unpriced')) : null));

    parts.push(this.table('agent', t('usage.byAgent'), t('usage.agent'), d.agent, (g) => agentName(g.key), money));
    parts.push(this.table('model', t('usage.byModel'), t('usage.model'), d.model, (g) => (g.provider ? `${g.key} · ${g.provider}` : g.key), money));
    if (admin) parts.push(this.table('user', t('usage.byUser'), t('usage.user'), d.user, (g) => g.key, money));
    $('usage-body').replaceChildren(h('div', { class: 'usage-page' }, parts));
  }

  limitsSection(limits, currency) {
    const rows = limits.map((l) => {
      const name = `${(SCOPE[l.scope] ?? (() => l.scope))()} · ${(KIND[l.kind] ?? (() => l.kind))()}`;
      const resets = t('usage.resets', { when: dateTime(new Date(l.resetsAt)) });
      const isCost = l.kind === 'cost_per_month';
      const fmt = (v) => (isCost ? cost(v, currency) : num(v));
      if (l.kind === 'runs_per_minute') {
        return h('li', { class: 'usage-limit', 'data-kind': l.kind, 'data-scope': l.scope },
          h('span', { class: 'usage-limit-name' }, name),
          h('span', { class: 'usage-limit-value' }, t('usage.runsPerMinute', { max: num(l.max) })));
      }
      const share = l.max > 0 ? Math.min(1, l.used / l.max) : 0;
      const id = `limit-${l.scope}-${l.kind}`;
      return h('li', { class: `usage-limit${share >= 1 ? ' over' : ''}`, 'data-kind': l.kind, 'data-scope': l.scope },
        h('span', { class: 'usage-limit-name', id }, name),
        h('meter', { min: 0, max: l.max, value: Math.min(l.used, l.max), low: l.max * 0.75, high: l.max * 0.9, optimum: 0, 'aria-labelledby': id }),
        h('span', { class: 'usage-limit-value' }, t('usage.usedOf', { used: fmt(l.used), max: fmt(l.max), percent: pct(l.max > 0 ? l.used / l.max : 0) })),
        h('span', { class: 'muted small' }, resets));
    });
    return h('section', { class: 'usage-section usage-limits', 'aria-labelledby': 'usage-limits-title' },
      h('h3', { id: 'usage-limits-title' }, t('usage.limits')),
      rows.length ? h('ul', { class: 'usage-limit-list' }, rows) : h('p', { class: 'muted' }, t('usage.noLimits')));
  }

  /** table draws groups (by agent, model or user), the costliest first. */
  table(kind, title, keyHead, groups, name, money) {
    const sorted = [...(groups ?? [])].sort((a, b) => b.cost - a.cost || b.totalTokens - a.totalTokens || a.key.localeCompare(b.key));
    const id = `usage-${kind}-title`;
    const csv = h('button', { type: 'button', class: 'ghost small usage-csv', 'aria-label': t('usage.csvOf', { what: title }) }, t('usage.csv'));
    csv.addEventListener('click', () => {
      const q = new URLSearchParams({ ...this.data.query, groupBy: kind, format: 'csv' });
      download(`/v1/usage?${q}`, `usage-${this.month}-by-${kind}.csv`).catch((e) => this.fail(e));
    });
    return h('section', { class: `usage-section usage-by-${kind}`, 'aria-labelledby': id },
      h('div', { class: 'usage-section-head' }, h('h3', { id }, title), sorted.length ? csv : null),
      sorted.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'usage-table' },
        h('thead', {}, h('tr', {},
          h('th', { scope: 'col' }, keyHead),
          h('th', { scope: 'col' }, t('usage.runs')),
          h('th', { scope: 'col' }, t('usage.input')),
          h('th', { scope: 'col' }, t('usage.output')),
          h('th', { scope: 'col' }, t('usage.tokens')),
          h('th', { scope: 'col' }, t('usage.cost')))),
        h('tbody', {}, sorted.map((g) => h('tr', { 'data-key': g.key },
          h('th', { scope: 'row' }, name(g)),
          h('td', {}, num(g.runs)),
          h('td', {}, num(g.inputTokens)),
          h('td', {}, num(g.outputTokens)),
          h('td', {}, num(g.totalTokens)),
          h('td', {}, money(g.cost))))))) : h('p', { class: 'muted' }, t('usage.none')));
  }
}

/**
 * runUsage says what one run spent, for the timeline's summary: its tokens
 * (input and output) and, when priced, its cost. run.usage is the run
 * resource's (cost in nano-units); '' for a run that used nothing.
 */
export function runUsage(u) {
  const tokens = (u?.inputTokens ?? 0) + (u?.outputTokens ?? 0);
  if (!tokens && !u?.cost) return '';
  const text = t('usage.runTokens', { tokens: num(tokens), input: num(u.inputTokens ?? 0), output: num(u.outputTokens ?? 0) });
  return u.cost ? `${text} · ${cost(u.cost / 1e9, u.currency && u.currency !== 'mixed' ? u.currency : '')}` : text;
}

/** readGroups reads every page of one grouping (at most 10 pages of 100). */
async function readGroups(range, groupBy) {
  const out = [];
  let cursor = '';
  for (let i = 0; i < 10; i++) {
    const q = new URLSearchParams({ ...range, groupBy, limit: '100' });
    if (cursor) q.set('cursor', cursor);
    const page = await api(`/v1/usage?${q}`);
    out.push(...page.groups);
    if (!page.hasMore) break;
    cursor = page.nextCursor;
  }
  return out;
}

function stat(label, value, cls = '') {
  return h('div', { class: `usage-stat ${cls}`.trim() }, h('dt', {}, label), h('dd', {}, value));
}

const num = (v) => new Intl.NumberFormat(locale()).format(v ?? 0);

// An axis's numbers: short (1.5K, 2M), and costs with as many digits as
// their steps need (0.0005, not 0.001 twice).
const compact = (v) => new Intl.NumberFormat(locale(), { notation: 'compact', maximumFractionDigits: 1 }).format(v);
const axisCost = (v) => new Intl.NumberFormat(locale(), { maximumSignificantDigits: 3 }).format(v);

const pct = (share) => new Intl.NumberFormat(locale(), { style: 'percent', maximumFractionDigits: 0 }).format(share);

/** cost formats an amount in currency (a number alone when there is none). */
function cost(v, currency) {
  const digits = v > 0 && v < 0.01 ? 4 : 2;
  if (currency) {
    try {
      return new Intl.NumberFormat(locale(), { style: 'currency', currency, minimumFractionDigits: digits, maximumFractionDigits: digits }).format(v ?? 0);
    } catch {
      // not an ISO 4217 code: the number and the code
    }
  }
  const n = new Intl.NumberFormat(locale(), { minimumFractionDigits: digits, maximumFractionDigits: digits }).format(v ?? 0);
  return currency ? `${n} ${currency}` : n;
}
