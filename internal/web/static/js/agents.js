// The tenant's agents as the chat sees them: the list a new chat picks from
// (name, description, starters), and the label that says which agent, and
// which of its versions, answered a run. The editor for admins is
// agent-editor.js.

import { api } from './api.js';
import { h } from './dom.js';
import { t } from './i18n.js';

/** BUILT_IN is the id of the server's own agent (no versions, not editable). */
export const BUILT_IN = 'default';

const known = new Map(); // id -> agent resource, the listed ones and any read since
let listed = []; // the tenant's agents that are not archived, newest first
let defaultId = BUILT_IN;
let enabled = true; // false when the server runs without agents

/**
 * loadAgents reads the tenant's agents (at most 500) and which one a new
 * conversation gets by default. A server without agents answers none.
 */
export async function loadAgents() {
  const out = [];
  let cursor = '';
  try {
    for (let i = 0; i < 5; i++) {
      const q = new URLSearchParams({ limit: '100' });
      if (cursor) q.set('cursor', cursor);
      const page = await api(`/v1/agents?${q}`);
      out.push(...page.agents);
      defaultId = page.defaultAgentId || BUILT_IN;
      if (!page.hasMore) break;
      cursor = page.nextCursor;
    }
    enabled = true;
  } catch (e) {
    if (e?.status !== 404) throw e;
    enabled = false;
  }
  listed = out;
  for (const a of out) known.set(a.id, a);
  return out;
}

/** agents is the list loadAgents read. */
export const agents = () => listed;

/** agentsEnabled: the server serves agents. */
export const agentsEnabled = () => enabled;

/** defaultAgentId is the agent a new conversation that names none is bound to. */
export const defaultAgentId = () => defaultId;

/** remember keeps an agent read elsewhere (the editor) for the labels. */
export function remember(a) {
  if (a?.id) known.set(a.id, a);
}

/** agentById is a known agent, or null. */
export const agentById = (id) => known.get(id) ?? null;

/**
 * ensureAgents reads the agents of ids that are not known yet (an archived
 * agent is not listed), so their names can be shown.
 */
export async function ensureAgents(ids) {
  const missing = [...new Set(ids)].filter((id) => id && id !== BUILT_IN && !known.has(id));
  await Promise.all(missing.slice(0, 20).map((id) => api(`/v1/agents/${encodeURIComponent(id)}`).then(remember, () => {})));
}

/** agentName is an agent's name for people. */
export function agentName(id) {
  if (!id || id === BUILT_IN) return t('agents.builtin');
  return known.get(id)?.name || t('agents.unknown');
}

/**
 * agentLabel says which agent answered: its name and version ("Support ·
 * v3"), or its name alone when the version is not known. Runs of the
 * built-in agent (and runs before agents) get none: they are the server's
 * own, as every run was before agents.
 */
export function agentLabel(id, version) {
  if (!id || id === BUILT_IN) return '';
  if (!version) return t('agents.answeredBy', { name: agentName(id) });
  return t('agents.answeredByVersion', { name: agentName(id), version });
}

/**
 * picker draws the choice of agent for a new chat: the tenant's agents and
 * the built-in one as radio buttons, each with its description; onPick is
 * called with the chosen id. Nothing (null) when the tenant has no agents of
 * its own: then there is nothing to choose.
 */
export function picker(selected, onPick) {
  if (!listed.length) return null;
  const choices = [{ id: BUILT_IN, name: t('agents.builtin'), description: t('agents.builtinText') }, ...listed];
  return h('fieldset', { class: 'agent-picker' },
    h('legend', {}, t('agents.pick')),
    h('div', { class: 'agent-options' }, choices.map((a) => {
      const id = `pick-${a.id}`;
      const input = h('input', { type: 'radio', name: 'agent', id, value: a.id, checked: a.id === selected,
        'aria-describedby': a.description ? `${id}-desc` : false });
      input.addEventListener('change', () => input.checked && onPick(a.id));
      return h('label', { class: 'agent-option', for: id, 'data-agent-id': a.id },
        input,
        h('span', { class: 'agent-option-text' },
          h('span', { class: 'agent-option-name' }, a.id === BUILT_IN ? t('agents.builtin') : a.name,
            a.id === defaultId ? h('span', { class: 'agent-default' }, t('agents.isDefault')) : null),
          a.description ? h('span', { class: 'agent-option-desc muted', id: `${id}-desc` }, a.description) : null));
    })));
}

/** starters are the suggested first messages of an agent (none for the built-in one). */
export function starters(id) {
  if (!id || id === BUILT_IN) return [];
  return known.get(id)?.starters ?? [];
}
