// The agents view (#/agents, #/agents/new, #/agents/<id>). Admins edit an
// agent (model from GET /v1/models, instructions, tools as checkboxes from
// GET /v1/tools and which of them wait for a person), save a draft, try it
// in a side chat pinned to that draft (agentVersion on every run), publish
// it, and roll back from the version list, which diffs any two versions
// field by field. Members read the same agents and versions with no control
// that changes them (the server refuses them anyway).

import { api, stream, ApiError } from './api.js';
import { h, $ } from './dom.js';
import { t, dateTime } from './i18n.js';
import { RunView, toolLabel } from './run.js';
import { loadAgents, remember, agentLabel, defaultAgentId } from './agents.js';

// The fields of a definition, in the order the diff lists them.
const FIELDS = ['name', 'description', 'model', 'instructions', 'tools', 'confirm', 'knowledge', 'engine',
  'maxIterations', 'temperature', 'starters', 'metadata'];
const LISTS = new Set(['tools', 'confirm', 'knowledge', 'starters']);
const TEXTS = new Set(['name', 'description', 'instructions', 'model', 'engine']);

export class AgentsView {
  /** @param {{me: () => any, onChanged?: () => void}} opt */
  constructor(opt) {
    this.opt = opt;
    this.id = ''; // '' the list, 'new' a new agent, else the agent's id
    this.seq = 0;
    this.agent = null;
    this.versions = [];
    this.models = [];
    this.tools = [];
    this.compare = null; // [from, to] versions of the diff
    this.trial = null; // the side chat: {conversationId, version, abort}
  }

  admin() {
    return this.opt.me()?.role === 'admin';
  }

  say(text, isError = false) {
    const s = $('agents-status');
    s.textContent = text;
    s.classList.toggle('error', isError);
  }

  fail(e) {
    this.say(e instanceof ApiError ? e.message : t('error.generic', { message: e.message }), true);
  }

  /** show draws the list (id ''), a new agent's form ('new') or an agent. */
  async show(id) {
    const seq = ++this.seq;
    if (id !== this.id) this.endTrial();
    this.id = id;
    this.say('');
    $('agents-body').replaceChildren(h('p', { class: 'muted' }, t('agents.loading')));
    if (!id) {
      const list = await loadAgents();
      if (seq !== this.seq) return;
      $('agents-title').textContent = t('agents.title');
      this.drawList(list);
      return;
    }
    const needs = [this.models.length ? null : api('/v1/models').then((r) => (this.models = r.models)),
      this.tools.length ? null : api('/v1/tools').then((r) => (this.tools = r.tools))];
    if (id === 'new') {
      await Promise.all(needs);
      if (seq !== this.seq) return;
      this.agent = null;
      this.versions = [];
      this.draw();
      return;
    }
    const [agent, versions] = await Promise.all([api(`/v1/agents/${encodeURIComponent(id)}`), this.readVersions(id), ...needs]);
    if (seq !== this.seq) return;
    this.agent = agent;
    this.versions = versions;
    remember(agent);
    this.draw();
  }

  async readVersions(id) {
    const out = [];
    let cursor = '';
    for (let i = 0; i < 10; i++) {
      const q = new URLSearchParams({ limit: '100' });
      if (cursor) q.set('cursor', cursor);
      const page = await api(`/v1/agents/${encodeURIComponent(id)}/versions?${q}`);
      out.push(...page.versions);
      if (!page.hasMore) break;
      cursor = page.nextCursor;
    }
    return out;
  }

  hide() {
    this.endTrial();
    this.id = '';
    ++this.seq;
  }

  /** redraw draws the view again (the language changed). */
  redraw() {
    if (!this.id) this.show('').catch((e) => this.fail(e));
    else if (this.id === 'new' || this.agent) this.draw();
  }

  // --- the list -----------------------------------------------------------------

  drawList(list) {
    const items = list.map((a) => h('li', { class: 'agent-card', 'data-agent-id': a.id },
      h('a', { href: `#/agents/${encodeURIComponent(a.id)}`, class: 'agent-card-name' }, a.name),
      a.id === defaultAgentId() ? h('span', { class: 'agent-default' }, t('agents.isDefault')) : null,
      h('span', { class: 'badge' }, t('agents.published', { version: a.version })),
      a.latestVersion > a.version ? h('span', { class: 'badge awaiting_input' }, t('agents.draftOf', { version: a.latestVersion })) : null,
      a.description ? h('p', { class: 'muted agent-card-desc' }, a.description) : null,
      h('p', { class: 'muted small' }, t('agents.modelIs', { model: a.model }))));
    $('agents-body').replaceChildren(
      h('div', { class: 'agents-list' },
        this.admin() ? h('a', { class: 'button primary new-agent', href: '#/agents/new' }, t('agents.new')) : h('p', { class: 'muted' }, t('agents.readOnly')),
        list.length ? h('ul', { class: 'agent-cards' }, items) : h('p', { class: 'muted' }, t('agents.none'))));
  }

  // --- one agent --------------------------------------------------------------------

  latest() {
    return this.versions[0] ?? null;
  }

  draw() {
    $('agents-title').textContent = this.agent ? this.agent.name : t('agents.new');
    const admin = this.admin();
    const def = this.latest()?.definition ?? { name: '', model: 'default' };
    const main = h('div', { class: 'agent-main' },
      h('a', { class: 'back-link', href: '#/agents' }, h('span', { 'aria-hidden': 'true' }, '←'), h('span', {}, t('agents.back'))),
      this.agent ? this.stateLine() : null,
      admin ? this.form(def) : this.readOnly(def),
      this.agent ? this.versionList() : null,
      this.agent ? this.diffView() : null);
    const parts = [main];
    if (admin && this.agent) parts.push(this.trialPanel());
    $('agents-body').replaceChildren(h('div', { class: `agent-page${parts.length > 1 ? ' with-trial' : ''}` }, parts));
  }

  stateLine() {
    const a = this.agent;
    return h('p', { class: 'agent-state' },
      h('span', { class: 'badge succeeded' }, t('agents.published', { version: a.version })),
      a.latestVersion > a.version ? h('span', { class: 'badge awaiting_input' }, t('agents.draftOf', { version: a.latestVersion })) : null,
      a.archivedAt ? h('span', { class: 'badge failed' }, t('agents.archived')) : null);
  }

  form(def) {
    const field = (id, label, input, hint) => h('div', { class: 'field' },
      h('label', { for: id }, label), input, hint ? h('p', { class: 'muted small', id: `${id}-hint` }, hint) : null);
    const name = h('input', { id: 'agent-name', name: 'name', type: 'text', required: true, maxlength: 100, value: def.name ?? '', autocomplete: 'off' });
    const description = h('textarea', { id: 'agent-description', name: 'description', rows: 2, maxlength: 2000 });
    description.value = def.description ?? '';
    const model = h('select', { id: 'agent-model', name: 'model' }, this.models.map((m) => h('option', { value: m.name, selected: m.name === def.model },
      m.model && m.model !== m.name ? `${m.name} (${m.provider} · ${m.model})` : `${m.name} (${m.provider})`)));
    if (def.model && !this.models.some((m) => m.name === def.model)) {
      model.append(h('option', { value: def.model, selected: true }, t('agents.modelGone', { model: def.model })));
    }
    const instructions = h('textarea', { id: 'agent-instructions', name: 'instructions', rows: 8, maxlength: 4000, 'aria-describedby': 'agent-instructions-hint' });
    instructions.value = def.instructions ?? '';
    const starters = h('textarea', { id: 'agent-starters', name: 'starters', rows: 3, 'aria-describedby': 'agent-starters-hint' });
    starters.value = (def.starters ?? []).join('\n');
    const error = h('p', { id: 'agent-error', class: 'error', role: 'alert' });
    error.hidden = true;
    const buttons = [];
    if (this.agent) {
      buttons.push(h('button', { type: 'submit', class: 'primary', id: 'agent-save' }, t('agents.saveDraft')));
      const a = this.agent;
      const publish = h('button', { type: 'button', id: 'agent-publish', disabled: a.latestVersion === a.version || Boolean(a.archivedAt),
        onclick: () => this.publish(a.latestVersion).catch((e) => this.fail(e)) },
      a.latestVersion > a.version ? t('agents.publishN', { version: a.latestVersion }) : t('agents.upToDate'));
      buttons.push(publish);
    } else {
      buttons.push(h('button', { type: 'submit', class: 'primary', id: 'agent-create' }, t('agents.create')));
    }
    const form = h('form', { class: 'agent-form card', id: 'agent-form', novalidate: true },
      field('agent-name', t('agents.f.name'), name),
      field('agent-description', t('agents.f.description'), description),
      field('agent-model', t('agents.f.model'), model),
      field('agent-instructions', t('agents.f.instructions'), instructions, t('agents.f.instructionsHint')),
      this.toolsField(def),
      field('agent-starters', t('agents.f.starters'), starters, t('agents.f.startersHint')),
      error,
      h('div', { class: 'agent-buttons' }, buttons));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.save(form).catch((err) => this.fieldError(form, err));
    });
    return form;
  }

  toolsField(def) {
    const serverDefault = def.tools === undefined || def.tools === null;
    const chosen = new Set(def.tools ?? []);
    const confirm = new Set(def.confirm ?? []);
    const all = h('input', { type: 'checkbox', id: 'agent-tools-default', checked: serverDefault });
    const rows = this.tools.map((tool) => {
      const always = tool.confirm === 'always';
      const label = toolLabel(tool.name);
      const use = h('input', { type: 'checkbox', class: 'tool-use', 'data-tool': tool.name, checked: serverDefault || chosen.has(tool.name),
        disabled: serverDefault, 'aria-label': t('agents.f.useTool', { tool: label }) });
      const ask = h('input', { type: 'checkbox', class: 'tool-confirm', 'data-tool': tool.name, checked: always || confirm.has(tool.name),
        disabled: always, 'aria-label': t('agents.f.confirmTool', { tool: label }), title: always ? t('agents.f.alwaysConfirm') : false });
      return h('tr', { 'data-tool': tool.name },
        h('th', { scope: 'row' }, h('span', { class: 'tool-name' }, label), label !== tool.name ? h('code', { class: 'tool-code' }, tool.name) : null,
          tool.description ? h('span', { class: 'tool-desc muted' }, tool.description) : null),
        h('td', {}, use),
        h('td', {}, ask, always ? h('span', { class: 'muted small' }, ` ${t('agents.f.always')}`) : null));
    });
    all.addEventListener('change', () => {
      for (const c of document.querySelectorAll('#agent-form .tool-use')) {
        c.disabled = all.checked;
        if (all.checked) c.checked = true;
      }
    });
    return h('fieldset', { class: 'field agent-tools' },
      h('legend', {}, t('agents.f.tools')),
      h('label', { class: 'check', for: 'agent-tools-default' }, all, t('agents.f.defaultTools')),
      h('div', { class: 'table-wrap' }, h('table', { class: 'tools-table' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, t('agents.f.tool')), h('th', { scope: 'col' }, t('agents.f.use')), h('th', { scope: 'col' }, t('agents.f.confirm')))),
        h('tbody', {}, rows))));
  }

  /** definition is what the form says, as the API takes it. */
  definition(form) {
    const v = (n) => form.elements[n].value;
    const serverDefault = $('agent-tools-default').checked;
    const tools = serverDefault ? null : [...form.querySelectorAll('.tool-use:checked')].map((c) => c.dataset.tool);
    const confirm = [...form.querySelectorAll('.tool-confirm:checked:not(:disabled)')].map((c) => c.dataset.tool);
    const starters = v('starters').split('\n').map((s) => s.trim()).filter(Boolean);
    return { name: v('name').trim(), description: v('description'), model: v('model'), instructions: v('instructions'), tools, confirm, starters };
  }

  async save(form) {
    this.clearErrors(form);
    const body = this.definition(form);
    if (!this.agent) {
      if (body.tools === null) delete body.tools;
      const a = await api('/v1/agents', { method: 'POST', body });
      remember(a);
      this.opt.onChanged?.();
      this.say(t('agents.created', { name: a.name }));
      location.hash = `#/agents/${encodeURIComponent(a.id)}`;
      return;
    }
    const before = this.agent.latestVersion;
    const a = await api(`/v1/agents/${encodeURIComponent(this.agent.id)}?draft=true`, { method: 'PATCH', body });
    await this.reload(a);
    this.say(a.latestVersion === before ? t('agents.unchanged') : t('agents.savedDraft', { version: a.latestVersion }));
    $('agent-publish')?.focus();
  }

  async publish(version) {
    const prev = this.agent.version;
    const a = await api(`/v1/agents/${encodeURIComponent(this.agent.id)}/publish`, { method: 'POST', body: { version } });
    await this.reload(a);
    this.say(version < prev ? t('agents.rolledBack', { version }) : t('agents.publishedN', { version }));
  }

  async reload(a) {
    this.agent = a;
    remember(a);
    this.versions = await this.readVersions(a.id);
    this.compare = null;
    this.draw();
    this.opt.onChanged?.();
  }

  clearErrors(form) {
    $('agent-error').hidden = true;
    for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  }

  // fieldError shows a refusal next to the form, and marks and focuses the
  // field it names (error.field: "name", "tools[1]", "confirm.send_webhook").
  fieldError(form, err) {
    if (!(err instanceof ApiError)) return this.fail(err);
    const box = $('agent-error');
    box.textContent = err.message;
    box.hidden = false;
    const field = String(err.body?.field ?? '');
    const base = field.split(/[.[]/)[0];
    const target = { name: 'agent-name', description: 'agent-description', model: 'agent-model', instructions: 'agent-instructions',
      starters: 'agent-starters', tools: 'agent-tools-default', confirm: 'agent-tools-default' }[base];
    const el = target && $(target);
    if (el) {
      el.setAttribute('aria-invalid', 'true');
      el.focus();
    }
  }

  readOnly(def) {
    const row = (k, v) => [h('dt', {}, t(`agents.f.${k}`)), h('dd', {}, v)];
    const list = (xs) => (xs.length ? h('ul', {}, xs.map((x) => h('li', {}, x))) : t('agents.none'));
    return h('dl', { class: 'agent-readonly card' },
      row('name', def.name),
      row('description', def.description || '—'),
      row('model', def.model),
      row('instructions', def.instructions ? h('pre', {}, def.instructions) : '—'),
      row('tools', def.tools ? list(def.tools.map(toolLabel)) : t('agents.f.defaultTools')),
      row('starters', list(def.starters ?? [])));
  }

  // --- versions and their diff -------------------------------------------------------

  versionList() {
    const admin = this.admin();
    const a = this.agent;
    const items = this.versions.map((v) => {
      let action = null;
      if (admin && !v.published && !a.archivedAt) {
        const back = v.version < a.version;
        action = h('button', { type: 'button', class: `small${back ? ' rollback' : ' publish'}`,
          onclick: () => this.publish(v.version).catch((e) => this.fail(e)) },
        back ? t('agents.rollbackTo', { version: v.version }) : t('agents.publishN', { version: v.version }));
      }
      const changes = v.changes?.length ? t('agents.changed', { fields: v.changes.map(fieldName).join(', ') }) : t('agents.firstVersion');
      return h('li', { class: `version${v.published ? ' published' : ''}`, 'data-version': v.version },
        h('span', { class: 'version-n' }, t('agents.vN', { version: v.version })),
        v.published ? h('span', { class: 'badge succeeded' }, t('agents.live')) : !v.publishedAt ? h('span', { class: 'badge awaiting_input' }, t('agents.draft')) : null,
        h('span', { class: 'muted small' }, t('agents.madeBy', { user: v.createdBy, at: dateTime(new Date(v.createdAt)) })),
        h('span', { class: 'version-changes small' }, changes),
        h('span', { class: 'version-actions' },
          v.version > 1 ? h('button', { type: 'button', class: 'small ghost show-diff', onclick: () => this.showDiff(v.version - 1, v.version) },
            t('agents.showChanges')) : null,
          action));
    });
    return h('section', { class: 'agent-versions', 'aria-labelledby': 'versions-title' },
      h('h3', { id: 'versions-title' }, t('agents.versions')),
      h('ol', { class: 'version-list', reversed: true }, items));
  }

  defaultCompare() {
    const a = this.agent;
    const to = a.latestVersion;
    let from = a.latestVersion > a.version ? a.version : a.latestVersion - 1;
    if (from < 1) from = to;
    return [from, to];
  }

  showDiff(from, to) {
    this.compare = [from, to];
    const old = document.querySelector('.agent-diff');
    const fresh = this.diffView();
    old?.replaceWith(fresh);
    fresh.querySelector('h3')?.focus();
  }

  diffView() {
    const [from, to] = this.compare ?? this.defaultCompare();
    const pick = (id, value, label) => h('label', { for: id }, label, ' ',
      h('select', { id, onchange: () => this.showDiff(Number($('diff-from').value), Number($('diff-to').value)) },
        this.versions.map((v) => h('option', { value: v.version, selected: v.version === value }, t('agents.vN', { version: v.version })))));
    const a = this.versions.find((v) => v.version === from)?.definition ?? {};
    const b = this.versions.find((v) => v.version === to)?.definition ?? {};
    const changed = FIELDS.filter((f) => JSON.stringify(a[f] ?? null) !== JSON.stringify(b[f] ?? null));
    return h('section', { class: 'agent-diff', 'aria-labelledby': 'diff-title' },
      h('h3', { id: 'diff-title', tabindex: '-1' }, t('agents.diffTitle')),
      h('div', { class: 'diff-pick' }, pick('diff-from', from, t('agents.diffFrom')), pick('diff-to', to, t('agents.diffTo'))),
      changed.length
        ? h('dl', { class: 'diff-fields' }, changed.map((f) => [h('dt', {}, fieldName(f)), h('dd', {}, diffField(f, a[f], b[f]))]))
        : h('p', { class: 'muted' }, from === to ? t('agents.diffSame') : t('agents.diffNone')));
  }

  // --- the side chat, pinned to the latest version --------------------------------------

  trialPanel() {
    const version = this.agent.latestVersion;
    if (this.trial && this.trial.version !== version) this.endTrial();
    this.trial ??= { conversationId: '', version, abort: null, nodes: [] };
    const draft = version > this.agent.version;
    const box = h('div', { id: 'try-messages', class: 'try-messages', role: 'region', tabindex: '0', 'aria-label': t('agents.tryMessages') }, this.trial.nodes);
    const input = h('textarea', { id: 'try-input', rows: 2, required: true, placeholder: t('agents.tryPlaceholder') });
    const send = h('button', { type: 'submit', class: 'primary', id: 'try-send' }, t('composer.send'));
    const form = h('form', { class: 'try-composer' },
      h('label', { for: 'try-input', class: 'visually-hidden' }, t('composer.label')), input,
      h('div', { class: 'try-buttons' }, send,
        h('button', { type: 'button', class: 'ghost small', onclick: () => {
          this.endTrial();
          this.draw();
          $('try-input')?.focus();
        } }, t('agents.tryReset'))));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const text = input.value.trim();
      if (!text) return;
      input.value = '';
      this.trySend(text).catch((err) => this.fail(err));
    });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
    return h('aside', { class: 'agent-try card', 'aria-labelledby': 'try-title' },
      h('h3', { id: 'try-title' }, draft ? t('agents.tryDraft', { version }) : t('agents.tryVersion', { version })),
      h('p', { class: 'muted small' }, t('agents.tryText', { version })),
      box, form);
  }

  endTrial() {
    this.trial?.abort?.abort();
    this.trial = null;
  }

  async trySend(text) {
    const trial = this.trial;
    if (!trial || trial.abort) {
      this.say(t('status.busy'), true);
      return;
    }
    const agent = this.agent;
    const user = h('div', { class: 'msg user' }, text);
    const view = new RunView({ interactive: true, agentLabel, onDecide: (c) => decide(c) });
    trial.nodes.push(user, view.el);
    const box = $('try-messages');
    box.append(user, view.el);
    box.scrollTop = box.scrollHeight;
    trial.abort = new AbortController();
    const body = { input: text, agentId: agent.id, agentVersion: trial.version };
    if (trial.conversationId) body.conversationId = trial.conversationId;
    else body.title = t('agents.tryTitle', { name: agent.name, version: trial.version });
    try {
      await stream('/v1/agent/chat', {
        method: 'POST', body, signal: trial.abort.signal,
        onOpen: (res) => (trial.conversationId ||= res.headers.get('X-Conversation-ID') || ''),
        onEvent: (f) => {
          if (f.event === 'ping') return;
          if (f.event === 'conversation.created') trial.conversationId ||= f.data.conversationId;
          view.apply(f);
          const now = $('try-messages');
          if (now) now.scrollTop = now.scrollHeight;
        },
      });
    } catch (e) {
      if (trial.abort?.signal.aborted) return;
      view.el.remove();
      trial.nodes.splice(trial.nodes.indexOf(view.el), 1);
      throw e;
    } finally {
      trial.abort = null;
    }
    this.opt.onChanged?.();
  }
}

async function decide(c) {
  const body = { decision: c.decision };
  if (c.args) body.args = c.args;
  if (c.reason) body.reason = c.reason;
  await api(`/v1/agent/confirmations/${c.confirmationId}`, { method: 'POST', body });
}

function fieldName(f) {
  const key = `agents.f.${f}`;
  const s = t(key);
  return s === key ? f : s;
}

function shown(f, v) {
  if (v === undefined || v === null) return f === 'tools' ? t('agents.f.defaultTools') : t('agents.unset');
  if (typeof v === 'string') return v;
  return JSON.stringify(v);
}

// diffField shows how one field changed: text line by line, a list item by
// item, anything else as before → after. Removed is <del>, added <ins>, so
// the change reads without colour too.
function diffField(f, a, b) {
  if (LISTS.has(f) && Array.isArray(a) && Array.isArray(b)) {
    const gone = a.filter((x) => !b.includes(x));
    const added = b.filter((x) => !a.includes(x));
    const label = (x) => (f === 'tools' || f === 'confirm' ? toolLabel(x) : x);
    return h('ul', { class: 'diff-list' },
      gone.map((x) => h('li', {}, h('del', {}, label(x)))),
      added.map((x) => h('li', {}, h('ins', {}, label(x)))),
      !gone.length && !added.length ? h('li', { class: 'muted' }, t('agents.diffOrder')) : null);
  }
  if (TEXTS.has(f) && typeof a === 'string' && typeof b === 'string' && (a.includes('\n') || b.includes('\n'))) {
    return h('pre', { class: 'diff-lines' }, lineDiff(a.split('\n'), b.split('\n')).map(([op, line]) =>
      op === '-' ? h('del', {}, `- ${line}\n`) : op === '+' ? h('ins', {}, `+ ${line}\n`) : h('span', {}, `  ${line}\n`)));
  }
  return h('p', { class: 'diff-value' }, h('del', {}, shown(f, a)), h('span', { 'aria-hidden': 'true' }, ' → '), h('ins', {}, shown(f, b)));
}

/**
 * lineDiff is the shortest edit between two lists of lines (a longest
 * common subsequence), as [op, line] with op "-", "+" or " ". Instructions
 * are at most 4000 characters, so the quadratic table stays small.
 */
export function lineDiff(a, b) {
  const n = a.length;
  const m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      out.push([' ', a[i]]);
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push(['-', a[i++]]);
    else out.push(['+', b[j++]]);
  }
  while (i < n) out.push(['-', a[i++]]);
  while (j < m) out.push(['+', b[j++]]);
  return out;
}
