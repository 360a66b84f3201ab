// agentchat console: sign-in, conversations, live runs, tool approval,
// pending confirmations and the run timeline, in English or Chinese. Plain
// modules, no framework: the server embeds these files as they are.
//
// Routes live in the URL fragment and hold ids only (never the token):
// #/ a new chat, #/c/<conversationId>, #/c/<id>/r/<runId> (that run),
// #/c/<id>/confirm/<confirmationId> (that approval card),
// #/runs/<runId>/timeline.
//
// A live run is mirrored into sessionStorage (its events so far, with token
// deltas merged, and the id of the last one), so a reload redraws it and
// reattaches with Last-Event-ID: nothing is drawn twice, nothing is missed.

import { api, stream, token, setToken, providers, ApiError } from './api.js';
import * as oidc from './oidc.js';
import { h, $ } from './dom.js';
import { t, lang, setLang, apply as applyLang, dateTime } from './i18n.js';
import { RunView, framesFromMessages, toolLabel, versionPager } from './run.js';
import { TimelineView } from './timeline.js';
import { loadAgents, agents, agentsEnabled, defaultAgentId, picker, starters, agentLabel, agentName, ensureAgents, BUILT_IN } from './agents.js';
import { AgentsView } from './agent-editor.js';
import * as attachments from './attach.js';
import { UsageView } from './usage.js';

const LIVE_PREFIX = 'agentchat.live.';
const PENDING_EVERY_MS = 2000;
const phone = window.matchMedia('(max-width: 720px)');
const mac = /Mac|iPhone|iPad/.test(navigator.platform || navigator.userAgent);

const state = {
  me: null,
  conversations: [],
  nextCursor: '',
  allLoaded: false,
  loadingAll: null, // the reading of all pages, while it goes on
  search: '',
  currentId: '', // the open conversation ('' for a new chat)
  live: null, // the run this tab follows: {runId, conversationId, view, abort, lastEventId, frames}
  // Inputs sent while a run answers (queued behind it, or interrupting
  // it), oldest first: each is a live run whose stream is open but whose
  // frames wait in its buffer until it becomes state.live (see promote).
  waiting: [],
  pendingTimer: null,
  pending: [],
  attachedElsewhere: new Set(), // runs attached because a confirmation showed up for them
  openSeq: 0, // guards against a slow conversation load drawing over a newer one
  stick: true, // the thread follows new text (the reader is at its end)
  agentId: '', // the agent a new chat is started with (the picker's choice)
};

const timeline = new TimelineView();
const tray = new attachments.Tray({ tray: $('attach-tray') });
const agentsView = new AgentsView({ me: () => state.me, onChanged: () => refreshAgents().catch(fail) });
const usageView = new UsageView({ me: () => state.me });

// --- status line ---------------------------------------------------------------

function say(text, isError = false) {
  const s = $('status');
  s.textContent = text;
  s.classList.toggle('error', isError);
}

function fail(e) {
  say(e instanceof ApiError ? e.message : t('error.generic', { message: e.message }), true);
  if (e instanceof ApiError && e.status === 401) signOut(t('signin.expired'));
}

// --- sign-in -------------------------------------------------------------------

async function signIn(tok) {
  const me = await api('/v1/me', { token: tok });
  setToken(tok);
  state.me = me;
  drawWho();
  $('who').hidden = false;
  $('new-chat-top').hidden = false;
  $('signin').hidden = true;
  $('app').hidden = false;
  document.body.classList.add('signed-in');
  await refreshAgents().catch(() => {});
  state.agentId = defaultAgentId();
  await loadConversations(true);
  startPendingPoll();
  await route({ initial: true });
}

// refreshAgents reads the tenant's agents again (after an edit, or at
// sign-in): the Agents link shows when the server serves agents.
async function refreshAgents() {
  await loadAgents();
  $('agents-link').hidden = !agentsEnabled();
  if (state.agentId !== BUILT_IN && !agents().some((a) => a.id === state.agentId)) state.agentId = defaultAgentId();
}

function drawWho() {
  if (state.me) $('who').textContent = t('who', { user: state.me.user, tenant: state.me.tenant });
}

function signOut(message = '') {
  detach();
  setToken('');
  clearInterval(state.pendingTimer);
  state.me = null;
  document.body.classList.remove('signed-in');
  $('who').hidden = true;
  $('new-chat-top').hidden = true;
  $('app').hidden = true;
  $('signin').hidden = false;
  $('signin-error').textContent = message;
  $('signin-error').hidden = !message;
  $('token').value = '';
  $('token').focus();
}

// --- conversations ---------------------------------------------------------------

async function loadConversations(reset) {
  const q = new URLSearchParams({ limit: '20' });
  if (!reset && state.nextCursor) q.set('cursor', state.nextCursor);
  const page = await api(`/v1/conversations?${q}`);
  state.conversations = reset ? page.conversations : [...state.conversations, ...page.conversations];
  state.nextCursor = page.nextCursor ?? '';
  state.allLoaded = !page.hasMore;
  $('more-conversations').hidden = !page.hasMore;
  drawConversations();
  if (state.search.trim() && !state.allLoaded) await loadAll();
}

// loadAll reads the remaining pages (for a search by title, which the API
// does not do), at most 2000 conversations, once however often it is asked.
function loadAll() {
  state.loadingAll ??= (async () => {
    try {
      for (let i = 0; i < 20 && !state.allLoaded; i++) {
        const q = new URLSearchParams({ limit: '100' });
        if (state.nextCursor) q.set('cursor', state.nextCursor);
        const page = await api(`/v1/conversations?${q}`);
        const known = new Set(state.conversations.map((c) => c.id));
        state.conversations = [...state.conversations, ...page.conversations.filter((c) => !known.has(c.id))];
        state.nextCursor = page.nextCursor ?? '';
        state.allLoaded = !page.hasMore;
      }
    } finally {
      state.loadingAll = null;
    }
    $('more-conversations').hidden = state.allLoaded;
    drawConversations();
  })();
  return state.loadingAll;
}

const title = (c) => c.title || t('conv.untitled');

function dayLabel(d) {
  const start = (x) => new Date(x.getFullYear(), x.getMonth(), x.getDate()).getTime();
  const days = Math.round((start(new Date()) - start(d)) / 86_400_000);
  if (days === 0) return t('day.today');
  if (days === 1) return t('day.yesterday');
  const opts = { weekday: 'short', month: 'short', day: 'numeric' };
  if (d.getFullYear() !== new Date().getFullYear()) opts.year = 'numeric';
  return dateTime(d, opts);
}

function drawConversations() {
  const q = state.search.trim().toLocaleLowerCase();
  const shown = q ? state.conversations.filter((c) => title(c).toLocaleLowerCase().includes(q)) : state.conversations;
  const groups = [];
  for (const c of shown) {
    const label = dayLabel(new Date(c.updatedAt || c.createdAt));
    if (groups.at(-1)?.label !== label) groups.push({ label, items: [] });
    groups.at(-1).items.push(c);
  }
  $('conversations').replaceChildren(...groups.map((g, i) => h('div', { class: 'conv-group' },
    h('h3', { class: 'conv-day', id: `day-${i}` }, g.label),
    h('ul', { 'aria-labelledby': `day-${i}` }, g.items.map(convItem)))));
  $('no-results').hidden = !(q && !shown.length);
  $('no-results').textContent = t('search.none', { q: state.search.trim() });
}

function convItem(c) {
  const open = h('a', { class: 'open', href: `#/c/${c.id}`, 'aria-current': c.id === state.currentId ? 'page' : false }, title(c));
  const more = h('button', { type: 'button', class: 'more icon', 'aria-haspopup': 'menu', 'aria-expanded': 'false',
    'aria-label': t('conv.actions', { title: title(c) }), title: t('conv.actionsShort') }, h('span', { 'aria-hidden': 'true' }, '⋯'));
  const li = h('li', { class: 'conv', 'data-id': c.id }, open, more);
  more.addEventListener('click', () => openMenu(more, li, c));
  return li;
}

// The "⋯" menu of a conversation: Rename, Delete. Arrow keys move, Escape
// closes and returns to its button.
const menu = { button: null, li: null, conv: null };

function openMenu(button, li, c) {
  if (menu.button === button) {
    closeMenu(true);
    return;
  }
  closeMenu(false);
  Object.assign(menu, { button, li, conv: c });
  const m = $('conv-menu');
  m.hidden = false;
  m.setAttribute('aria-label', t('conv.actions', { title: title(c) }));
  const r = button.getBoundingClientRect();
  const top = Math.min(r.bottom + 4, window.innerHeight - m.offsetHeight - 8);
  m.style.top = `${Math.max(8, top)}px`;
  m.style.left = `${Math.max(8, Math.min(r.right - m.offsetWidth, window.innerWidth - m.offsetWidth - 8))}px`;
  button.setAttribute('aria-expanded', 'true');
  m.querySelector('[role=menuitem]').focus();
}

function closeMenu(refocus) {
  if (!menu.button) return;
  $('conv-menu').hidden = true;
  menu.button.setAttribute('aria-expanded', 'false');
  if (refocus) menu.button.focus();
  menu.button = null;
}

function wireMenu() {
  const m = $('conv-menu');
  const items = () => [...m.querySelectorAll('[role=menuitem]')];
  m.addEventListener('keydown', (e) => {
    const list = items();
    const i = list.indexOf(document.activeElement);
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      list[(i + (e.key === 'ArrowDown' ? 1 : list.length - 1)) % list.length].focus();
    } else if (e.key === 'Home' || e.key === 'End') {
      e.preventDefault();
      list[e.key === 'Home' ? 0 : list.length - 1].focus();
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      closeMenu(true);
    } else if (e.key === 'Tab') {
      closeMenu(false);
    }
  });
  $('menu-rename').addEventListener('click', () => {
    const { li, conv } = menu;
    closeMenu(false);
    startRename(li, conv);
  });
  $('menu-delete').addEventListener('click', () => {
    const { conv } = menu;
    closeMenu(true);
    confirmDelete(conv);
  });
  document.addEventListener('pointerdown', (e) => {
    if (menu.button && !m.contains(e.target) && !menu.button.contains(e.target)) closeMenu(false);
  });
  window.addEventListener('resize', () => closeMenu(false));
}

function startRename(li, c) {
  const input = h('input', { type: 'text', value: c.title || '', 'aria-label': t('conv.newTitle'), maxlength: 200 });
  const save = async () => {
    const updated = await api(`/v1/conversations/${c.id}`, { method: 'PATCH', body: { title: input.value } });
    Object.assign(c, updated);
    if (c.id === state.currentId) $('chat-title').textContent = title(updated);
    await loadConversations(true);
    say(t('conv.renamed', { title: title(updated) }));
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') save().catch(fail);
    if (e.key === 'Escape') {
      e.stopPropagation();
      drawConversations();
    }
  });
  li.replaceChildren(h('div', { class: 'rename' }, input,
    h('button', { type: 'button', class: 'small primary', onclick: () => save().catch(fail) }, t('conv.save')),
    h('button', { type: 'button', class: 'small', onclick: () => drawConversations() }, t('dialog.cancel'))));
  input.focus();
  input.select();
}

function confirmDelete(c) {
  const d = $('confirm-delete');
  $('confirm-delete-text').textContent = t('conv.deleteText', { title: title(c) });
  d.onclose = () => {
    if (d.returnValue === 'ok') remove(c).catch(fail);
  };
  d.returnValue = '';
  d.showModal();
  $('confirm-delete-cancel').focus();
}

async function remove(c) {
  await api(`/v1/conversations/${c.id}`, { method: 'DELETE' });
  if (c.id === state.currentId) go('#/');
  await loadConversations(true);
  say(t('conv.deleted', { title: title(c) }));
}

// --- the drawer (phone) ----------------------------------------------------------

function setDrawer(open) {
  const sidebar = $('sidebar');
  const wasOpen = sidebar.classList.contains('open');
  sidebar.classList.toggle('open', open);
  $('nav-toggle').setAttribute('aria-expanded', String(open));
  $('scrim').hidden = !open;
  const modal = open && phone.matches;
  for (const id of ['chat', 'timeline', 'agents', 'usage']) $(id).inert = modal;
  document.querySelector('header.top').inert = modal;
  if (open) $('new-chat').focus();
  else if (wasOpen && phone.matches) $('nav-toggle').focus();
}

// --- routing -----------------------------------------------------------------------

function go(hash) {
  if (location.hash === hash) route().catch(fail);
  else location.hash = hash;
}

// route shows the view of the location's hash. A change of route closes the
// phone's drawer; the first one, at sign-in, does not: it comes after the
// agents and conversations have loaded, and a drawer opened meanwhile was
// opened by the person, who is using it.
async function route({ initial = false } = {}) {
  if (!state.me) return;
  if (location.hash && !location.hash.startsWith('#/')) return; // not a route
  if (!initial && $('sidebar').classList.contains('open')) setDrawer(false);
  // The usage view (usage.js) takes the page as the agents view does.
  const us = location.hash === '#/usage';
  $('usage').hidden = !us;
  if (us) $('usage-link').setAttribute('aria-current', 'page');
  else $('usage-link').removeAttribute('aria-current');
  if (us) {
    detach();
    timeline.stopPlay();
    agentsView.hide();
    state.currentId = '';
    drawConversations();
    for (const id of ['chat', 'timeline', 'agents']) $(id).hidden = true;
    $('agents-link').removeAttribute('aria-current');
    await usageView.show();
    $('usage-title').focus?.();
    return;
  }
  usageView.hide();
  const ag = /^#\/agents(?:\/([^/]+))?$/.exec(location.hash);
  $('agents').hidden = !ag;
  if (ag) $('agents-link').setAttribute('aria-current', 'page');
  else $('agents-link').removeAttribute('aria-current');
  if (ag) {
    detach();
    timeline.stopPlay();
    state.currentId = '';
    drawConversations();
    $('chat').hidden = true;
    $('timeline').hidden = true;
    await agentsView.show(ag[1] ? decodeURIComponent(ag[1]) : '');
    $('agents-title').focus?.();
    return;
  }
  agentsView.hide();
  const m = /^#\/runs\/([^/]+)\/timeline$/.exec(location.hash);
  if (m) {
    $('chat').hidden = true;
    $('timeline').hidden = false;
    await timeline.show(decodeURIComponent(m[1]));
    $('timeline-title').focus?.();
    return;
  }
  timeline.stopPlay();
  $('timeline').hidden = true;
  $('chat').hidden = false;
  const c = /^#\/c\/([^/]+)(?:\/(r|confirm)\/([^/]+))?$/.exec(location.hash);
  await openConversation(c ? decodeURIComponent(c[1]) : '');
  if (c?.[2]) reveal(c[2] === 'r' ? `.run[data-run-id="${CSS.escape(c[3])}"]` : `#confirm-${CSS.escape(c[3])}`);
}

// reveal scrolls to an element of the conversation (it may appear only once
// a live run's stream has been replayed), highlights it and moves focus there.
function reveal(selector) {
  const found = (el) => {
    el.scrollIntoView({ block: 'center' });
    el.classList.add('flash');
    setTimeout(() => el.classList.remove('flash'), 2000);
    const target = el.querySelector('.approval') ?? el;
    target.tabIndex = -1;
    target.focus({ preventScroll: true });
  };
  const el = $('messages').querySelector(selector);
  if (el) return found(el);
  const obs = new MutationObserver(() => {
    const x = $('messages').querySelector(selector);
    if (x) {
      obs.disconnect();
      found(x);
    }
  });
  obs.observe($('messages'), { childList: true, subtree: true });
  setTimeout(() => obs.disconnect(), 15_000);
}

// --- a conversation ------------------------------------------------------------------

function timelineHref(runId) {
  return `#/runs/${runId}/timeline`;
}

function newRunView() {
  return new RunView({ interactive: true, onDecide: decide, timelineHref, agentLabel, onRegenerate: (id) => regenerate(id).catch(fail),
    onPage: (id, back) => showVersion(id, back).catch(fail), onFeedback: rate });
}

// welcome is a new chat: the choice of agent (when the tenant has agents of
// its own), and suggested first messages (the chosen agent's starters, else
// examples of what the built-in agent does).
function welcome() {
  const builtIn = ['example.time', 'example.think', 'example.chart', 'example.feishu'];
  const list = h('ul', { class: 'examples' });
  const text = h('p', { class: 'muted' });
  const drawExamples = () => {
    const own = starters(state.agentId);
    list.setAttribute('aria-label', own.length ? t('agents.starters', { name: agentName(state.agentId) }) : t('welcome.examples'));
    text.textContent = own.length ? t('agents.starters', { name: agentName(state.agentId) }) : t('welcome.text');
    list.replaceChildren(...(own.length ? own : builtIn.map((k) => t(k))).map((text) => h('li', {},
      h('button', { type: 'button', class: 'example', onclick: () => {
        $('composer-input').value = text;
        $('composer').requestSubmit();
      } }, text))));
  };
  drawExamples();
  const pick = picker(state.agentId, (id) => {
    state.agentId = id;
    drawExamples();
  });
  return h('div', { class: 'welcome' },
    h('p', { class: 'welcome-title' }, t('welcome.title')),
    pick, text, list);
}

// drawChatAgent names the agent of the open conversation under its title.
function drawChatAgent(conv) {
  const id = conv?.agentId;
  const el = $('chat-agent');
  el.hidden = !id || id === BUILT_IN;
  el.textContent = el.hidden ? '' : t('agents.chatAgent', { name: agentName(id) });
}

// retried is the run this tab just followed that answered the last question
// again (a Retry, a Regenerate, an edit's answer).
async function openConversation(id, { force = false, focus = null, retried = '' } = {}) {
  const seq = ++state.openSeq;
  const followed = state.live?.conversationId ?? state.waiting[0]?.conversationId;
  if (followed !== undefined && (followed !== id || force)) detach();
  state.currentId = id;
  drawConversations();
  say('');
  const box = $('messages');
  if (!id) {
    $('chat-title').textContent = t('chat.new');
    drawChatAgent(null);
    box.replaceChildren(welcome());
    return;
  }
  if ((state.live ?? state.waiting[0])?.conversationId === id) return; // already drawn and following
  const [conv, messages] = await Promise.all([api(`/v1/conversations/${id}`), allMessages(id)]);
  // The run going on (conv.activeRunId), also when another tab or a client
  // of the API started it, is read and attached to like this tab's own.
  if (seq !== state.openSeq) return;
  $('chat-title').textContent = title(conv);
  const groups = groupByRun(messages);
  const turns = turnsOf(groups);
  // A run that answered the last question again and stored nothing (a
  // Retry that failed again) leaves the question with the run before it on
  // the branch: the question is drawn with the newer run, as it was shown
  // live, not with the one it replaced. (A reload has no such run to name:
  // the server keeps nothing on the branch of a run that failed before it
  // answered, so it draws the older one.)
  if (retried && turns.at(-1) && !turns.at(-1).rest.length) turns.at(-1).runId = retried;
  // A conversation bound to an agent of the tenant's: each run says which
  // version answered, so the newest runs' resources are read (the run
  // resource names it; stored messages do not).
  const bound = conv.agentId && conv.agentId !== BUILT_IN;
  const recent = new Set(bound ? groups.filter((g) => g.runId).slice(-100).map((g) => g.runId) : []);
  // Runs whose stored messages do not say how they ended (no complete
  // answer, a failed tool) and the newest run, which may still be going: read
  // their status. The others answered, so they succeeded.
  const lastRunId = [...messages].reverse().find((m) => m.runId)?.runId;
  // A regenerate going on has stored nothing yet on the branch: this tab's
  // mirror of it names it.
  const mirrored = mirroredRuns(id);
  // Inputs this tab queued whose runs have not started (a run stores its
  // question as it starts): they have no run to read yet.
  // Run ids sort by time: the queue's order.
  const queued = mirrored.filter((r) => loadLive(r)?.queued && r !== conv.activeRunId && !messages.some((m) => m.runId === r)).sort();
  const ask = [...new Set([...groups.filter((g) => g.runId && (recent.has(g.runId) || g.runId === lastRunId || unclear(g))).map((g) => g.runId),
    ...(retried ? [retried] : []),
    ...mirrored.filter((r) => !queued.includes(r)),
    ...(conv.activeRunId ? [conv.activeRunId] : [])])];
  const runs = new Map();
  for (let i = 0; i < ask.length; i += 8) {
    const got = await Promise.all(ask.slice(i, i + 8).map((r) => api(`/v1/agent/runs/${r}`).catch(() => null)));
    got.forEach((r) => r && runs.set(r.id, r));
  }
  await ensureAgents([conv.agentId, ...[...runs.values()].map((r) => r.agentId)]).catch(() => {});
  if (seq !== state.openSeq) return;
  drawChatAgent(conv);
  const active = [conv.activeRunId, lastRunId, ...mirrored].map((r) => runs.get(r)).find((r) => r && ['queued', 'running', 'awaiting_input'].includes(r.status)) ?? null;
  // The inputs still queued are drawn at the end, marked, and followed.
  forgetFinished(id, new Set([active?.id, ...queued]));
  const nodes = [];
  for (const turn of turns) {
    for (const m of turn.users) nodes.push(attachments.withFiles(userBubble(m.content, turn.userRunId, m.id), attachments.filesOf(m.parts)), userTools(m));
    // The active run draws itself (attach), also when it answers a question
    // again and has stored nothing yet.
    if (active && (turn.runId === active.id || (turn === turns.at(-1) && !turn.rest.length))) continue;
    if (!turn.runId && !turn.rest.length) continue;
    const view = newRunView();
    view.opt.interactive = false;
    for (const f of framesFromMessages(turn.runId, turn.rest)) view.apply(f);
    const run = runs.get(turn.runId);
    if (run?.agentId) view.setAgent(run.agentId, run.agentVersion);
    else if (bound && turn.runId) view.setAgent(conv.agentId, 0);
    if (turn.anchor) view.setVersions(turn.anchor.siblingIds, turn.anchor.id);
    const answer = turn.rest.findLast((x) => x.role === 'assistant' && x.feedback);
    if (answer) view.setFeedback(answer.id, answer.feedback);
    view.end(run ? run.status : turn.runId ? 'succeeded' : '', run?.error ?? null);
    nodes.push(view.el);
  }
  box.replaceChildren(...nodes);
  markLatest();
  if (focus) focusPager(focus);
  else scrollDown();
  if (active) attach(active.id, id).catch(fail);
  for (const r of queued) followQueued(r, id, loadLive(r)).catch(fail);
}

// followQueued draws an input this tab queued before a reload (its mirror
// says what it asked) and follows its run's stream, which says nothing
// until the run starts and ends at once when the input leaves the queue
// without a run (cancelled, dropped); its end draws the conversation again
// from the history. An input that has left the queue already (404) is
// dropped from the view.
async function followQueued(runId, conversationId, saved) {
  const bubble = userBubble(saved.queued.input);
  const tools = userTools({});
  $('messages').append(bubble, tools);
  const live = { runId, conversationId, view: newRunView(), abort: new AbortController(), lastEventId: '', frames: [],
    bubble, tools, input: saved.queued.input, strategy: saved.queued.strategy, waiting: true, buffer: [], started: false, only: runId, redraw: true };
  markWaiting(live, saved.queued.strategy || 'enqueue');
  state.waiting.push(live);
  setRunning();
  try {
    await follow(live, `/v1/agent/runs/${runId}/events`, {});
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 404)) throw e;
    dropWaiting(live);
  }
}

// turnsOf joins the active branch's runs into turns: a question (the user
// messages) and the run that answers it. A regenerated answer's run adds no
// user message, so it follows its question's run, whose own answer is on
// another branch (or was never stored: a failed run retried); such a
// question takes the later run. (A conversation stored before the tree
// repeated the question for a regenerate: migrated, the repeat is a second
// version of the question, with its pager.)
function turnsOf(groups) {
  const turns = [];
  for (const g of groups) {
    const users = g.messages.filter((x) => x.role === 'user');
    const rest = g.messages.filter((x) => x.role !== 'user');
    const prev = turns.at(-1);
    if (!users.length && prev?.users.length && !prev.rest.length) {
      Object.assign(prev, { runId: g.runId, rest, anchor: rest[0] });
      continue;
    }
    turns.push({ users, userRunId: g.runId, runId: g.runId, rest, anchor: rest[0] });
  }
  return turns;
}

// focusPager brings the pager of a version just shown into view, with
// focus on the button that was pressed (or its other one, now at an end).
function focusPager({ messageId, back }) {
  const p = $('messages').querySelector(`.versions[data-message-id="${CSS.escape(messageId)}"]`);
  if (!p) return scrollDown();
  p.scrollIntoView({ block: 'nearest' });
  const [prev, next] = p.querySelectorAll('button');
  ((back && !prev.disabled) || next.disabled ? prev : next).focus({ preventScroll: true });
}

// unclear: a run's messages end without a complete answer, or hold a failed tool.
function unclear(g) {
  const rest = g.messages.filter((m) => m.role !== 'user');
  const last = rest.at(-1);
  const complete = last?.role === 'assistant' && !last.metadata?.toolCalls?.length && !last.metadata?.partial;
  return !complete || rest.some((m) => m.role === 'tool' && !['success', 'partial'].includes(m.metadata?.status));
}

async function allMessages(id) {
  const out = [];
  let cursor = '';
  for (let i = 0; i < 50; i++) {
    const q = new URLSearchParams({ limit: '100' });
    if (cursor) q.set('cursor', cursor);
    const page = await api(`/v1/conversations/${id}/messages?${q}`);
    out.push(...page.messages);
    if (!page.hasMore) break;
    cursor = page.nextCursor;
  }
  return out;
}

function groupByRun(messages) {
  const groups = [];
  for (const m of messages) {
    const last = groups[groups.length - 1];
    if (last && last.runId === (m.runId ?? '') && !(m.role === 'user' && last.messages.some((x) => x.role !== 'user'))) {
      last.messages.push(m);
    } else {
      groups.push({ runId: m.runId ?? '', messages: [m] });
    }
  }
  return groups;
}

function userBubble(text, runId = '', messageId = '') {
  return h('div', { class: 'msg user', 'data-run-id': runId || false, 'data-message-id': messageId || false }, text);
}

// userTools is the row under a question: its versions (edits) and Edit,
// which waits for the message's id when the question was just sent.
function userTools(m) {
  const edit = h('button', { type: 'button', class: 'ghost small edit', 'aria-label': t('msg.editLabel'), title: t('msg.editLabel'),
    onclick: (e) => startEdit(e.currentTarget.closest('.msg-tools')) }, t('msg.edit'));
  edit.hidden = !m.id;
  const pager = m.siblingIds?.length > 1 ? versionPager(m.siblingIds, m.id, (id, back) => showVersion(id, back).catch(fail)) : null;
  return h('div', { class: 'msg-tools', 'data-message-id': m.id || false }, pager, edit);
}

// named gives a just-sent question its stored id (agent.start's
// userMessageId), which Edit needs.
function named(bubble, id) {
  if (!bubble || !id) return;
  bubble.dataset.messageId = id;
  const tools = bubble.nextElementSibling;
  if (tools?.classList.contains('msg-tools')) {
    tools.dataset.messageId = id;
    tools.querySelector('.edit').hidden = false;
  }
}

function scrollDown() {
  const box = $('messages');
  box.scrollTop = box.scrollHeight;
  state.stick = true;
  // Items drawn for the first time may change their height once laid out.
  requestAnimationFrame(() => state.stick && (box.scrollTop = box.scrollHeight));
}

// markLatest keeps Regenerate (or Retry) on the newest answer only, and on
// none while a run is going; while one goes, no question can be edited and
// no other version shown either.
function markLatest() {
  const box = $('messages');
  const busy = Boolean(state.live) || state.waiting.length > 0;
  const runs = [...box.querySelectorAll(':scope > .run')];
  runs.forEach((r, i) => r.querySelectorAll('.regenerate').forEach((b) => (b.hidden = busy || i !== runs.length - 1)));
  for (const b of box.querySelectorAll('.msg-tools .edit, .versions button')) b.disabled = busy || b.dataset.edge === 'true';
}

// --- live runs ---------------------------------------------------------------------

function saveLive(live) {
  try {
    sessionStorage.setItem(LIVE_PREFIX + live.runId, JSON.stringify({ conversationId: live.conversationId, lastEventId: live.lastEventId, frames: live.frames, steering: live.steering,
      queued: live.waiting && !live.started ? { input: live.input, strategy: live.strategy } : undefined }));
  } catch {
    // storage full: a reload then replays the run from its start instead
  }
}

function loadLive(runId) {
  try {
    return JSON.parse(sessionStorage.getItem(LIVE_PREFIX + runId) || 'null');
  } catch {
    return null;
  }
}

function forgetLive(runId) {
  sessionStorage.removeItem(LIVE_PREFIX + runId);
}

// mirroredRuns are the runs of a conversation this tab mirrors.
function mirroredRuns(conversationId) {
  return Object.keys(sessionStorage).filter((k) => k.startsWith(LIVE_PREFIX)).map((k) => k.slice(LIVE_PREFIX.length))
    .filter((r) => loadLive(r)?.conversationId === conversationId);
}

// forgetFinished drops the mirrors of a conversation's runs that have ended
// while this tab was elsewhere.
function forgetFinished(conversationId, keep) {
  for (const key of Object.keys(sessionStorage)) {
    if (!key.startsWith(LIVE_PREFIX) || keep.has(key.slice(LIVE_PREFIX.length))) continue;
    if (loadLive(key.slice(LIVE_PREFIX.length))?.conversationId === conversationId) sessionStorage.removeItem(key);
  }
}

// record keeps a frame in the live run's mirror, merging token deltas into
// the previous frame of the same message so the mirror stays small.
function record(live, f) {
  if (f.event === 'ping') return;
  if (f.id) live.lastEventId = f.id;
  const prev = live.frames[live.frames.length - 1];
  if ((f.event === 'agent.delta' || f.event === 'agent.reasoning') && prev?.event === f.event && prev.data.messageId === f.data.messageId) {
    prev.data = { ...prev.data, delta: prev.data.delta + f.data.delta };
  } else {
    live.frames.push({ event: f.event, data: f.data });
  }
  if (live.runId) saveLive(live);
}

// setRunning shows the composer's buttons for what goes on: Send when
// nothing does; while a run answers (or inputs wait for their turn), Queue
// (Enter) and Interrupt, and Stop for the run that answers.
function setRunning() {
  const busy = Boolean(state.live) || state.waiting.length > 0;
  $('stop').hidden = !state.live;
  $('send').hidden = busy;
  $('send').disabled = busy;
  $('queue').hidden = !busy;
  $('interrupt').hidden = !busy;
  $('rollback').hidden = !busy;
  $('composer').classList.toggle('busy', busy);
  autoGrow(); // the message box's width changes with the buttons beside it
  const hint = $('composer-hint');
  if (busy) delete hint.dataset.i18n; // it names the platform's key: drawn here, also on a language change
  else hint.dataset.i18n = 'composer.hint';
  hint.textContent = busy ? t('composer.hintBusy', { mod: mac ? '⌘' : 'Ctrl' }) : t('composer.hint');
  markLatest();
}

function detach() {
  for (const w of state.waiting) w.abort.abort();
  state.waiting = [];
  if (state.live) {
    state.live.abort.abort();
    state.live = null;
  }
  setRunning();
}

// follow reads a run's frames into its view until the stream ends.
async function follow(live, path, init) {
  live.ended = false;
  const onEvent = (f) => {
    if (live.only && f.data?.runId !== live.only) return;
    if (live.waiting) {
      live.buffer.push(f);
      if (f.event === 'agent.start') {
        live.started = true;
        if (!state.live) promote();
      }
      return;
    }
    if (state.live !== live) return;
    draw(live, f);
  };
  try {
    await stream(path, { ...init, signal: live.abort.signal, onEvent });
  } catch (e) {
    if (live.abort.signal.aborted && !(live.only && live.ended)) return;
    if (!live.abort.signal.aborted) throw e;
  }
  if (live.waiting) {
    // An input that ends before its run starts left the queue without a
    // run (cancelled elsewhere, or dropped by the server): nothing of it
    // is stored, so it leaves the view.
    if (!live.started && live.buffer.some((f) => f.event === 'agent.end')) {
      dropWaiting(live);
      say(t('status.queueDropped'));
      return;
    }
    live.streamDone = true; // its end is drawn when its turn comes
    return;
  }
  return settle(live);
}

// draw applies one frame of the run this tab follows.
function draw(live, f) {
  if (f.event === 'conversation.created' && !live.conversationId) { // a new chat's, not a replayed run's
    live.conversationId = f.data.conversationId;
    state.currentId = f.data.conversationId;
    history.replaceState(null, '', `#/c/${f.data.conversationId}`);
    $('chat-title').textContent = f.data.title || t('conv.untitled');
    drawChatAgent({ agentId: live.agentId });
    loadConversations(true).catch(fail);
  }
  if (f.event === 'agent.start' && !live.runId) {
    live.runId = f.data.runId;
    if (live.stopAsked) stop().catch(fail);
  }
  record(live, f);
  if (f.event === 'ping') return;
  live.view.apply(f);
  if (f.event === 'agent.start' && live.bubble) {
    live.bubble.dataset.runId = f.data.runId;
    named(live.bubble, f.data.userMessageId);
    if (live.bubble.classList.contains('waiting')) {
      unmarkWaiting(live.bubble);
      say(t('status.thinking'));
    }
  }
  if (f.event === 'tool.awaiting_input') say(t('status.waiting', { tool: toolLabel(f.data.name) }));
  if (f.event === 'tool.state' && f.data.status === 'running') say('');
  if (f.event === 'agent.delta' && $('status').textContent === t('status.thinking')) say('');
  if (f.event === 'agent.end') {
    live.ended = true;
    if (f.data.error?.code === 'run_interrupted') say('');
    else if (f.data.status === 'cancelled') say(t('status.stopped'));
    else if (f.data.status === 'failed') say(t('status.failed'), true);
    else say('');
  }
  if (state.stick) scrollDown();
  // A queued input followed on the conversation's stream (after a
  // reload) ends with its run's end.
  if (live.only && f.event === 'agent.end') live.abort.abort();
}

// settle is what follows the end of the stream of the run this tab
// follows: a resume when the run has not ended (a server restart), else the
// next waiting input's turn, or the history drawn again after an edit or a
// regenerate.
async function settle(live) {
  if (state.live !== live) return;
  if (!live.ended) {
    // The server ended the stream without agent.end (a restart): resume.
    return follow(live, `/v1/agent/runs/${live.runId}/events`, { lastEventId: live.lastEventId });
  }
  forgetLive(live.runId);
  state.live = null;
  setRunning();
  loadConversations(true).catch(fail);
  if (promote()) return;
  if (state.waiting.length) return; // the next input's run has not started yet
  // After inputs sent while runs answered (which the server may have
  // started in another order than they were sent, when an interrupt met a
  // queue), or a run this tab did not start (it may be a regenerate or an
  // edit, whose versions the history shows), the thread is drawn again as
  // the server keeps it.
  if (live.redraw && state.currentId === live.conversationId) {
    await openConversation(live.conversationId, { force: true });
    return;
  }
  // An edit or a regenerate made a new version: the history draws its pager.
  if (live.steering && state.currentId === live.conversationId) await openConversation(live.conversationId, { force: true, retried: live.runId });
}

// promote makes the waiting input whose run has started (the server starts
// them in order, an interrupting one at once) the run this tab follows:
// its view takes its place under its question, the frames it buffered are
// drawn, and its end, when it came already, is settled.
function promote() {
  if (state.live) return false;
  const next = state.waiting.find((w) => w.started);
  if (!next) return false;
  state.waiting = state.waiting.filter((w) => w !== next);
  next.waiting = false;
  state.live = next;
  if (next.replaces && interrupted(next.replaces)) for (const n of turnNodes(next.replaces)) n.remove();
  (next.tools ?? next.bubble).after(next.view.el);
  setRunning();
  for (const f of next.buffer.splice(0)) draw(next, f);
  if (state.stick) scrollDown();
  if (next.streamDone) settle(next).catch(fail);
  return true;
}

// turnNodes are what the thread shows of the turn of a live run: its
// answer and, when the run stored it, its question with the row under it.
function turnNodes(live) {
  const nodes = [live.view.el];
  const tools = live.view.el.previousElementSibling;
  const question = tools?.classList.contains('msg-tools') ? tools.previousElementSibling : null;
  if (live.runId && question?.classList.contains('user') && question.dataset.runId === live.runId) nodes.push(tools, question);
  return nodes;
}

// interrupted: a live run ended because a newer input interrupted it.
function interrupted(live) {
  return live.frames.some((f) => f.event === 'agent.end' && f.data.error?.code === 'run_interrupted');
}

// markWaiting shows on the question of a waiting input that it waits for
// its turn: queued (with Cancel, once the server has given it its id), or
// interrupting (replacing) the answer before it.
function markWaiting(live, strategy) {
  const { bubble, tools } = live;
  bubble.classList.add('waiting');
  const label = { interrupt: 'msg.interrupting', rollback: 'msg.replacing' }[strategy] ?? 'msg.queued';
  const queued = label === 'msg.queued';
  const badge = h('span', { class: `msg-badge ${queued ? 'queued' : 'interrupting'}`, role: 'status',
    title: queued ? t('msg.queuedLabel') : null }, t(label));
  const cancel = queued ? h('button', { type: 'button', class: 'ghost small cancel-queued', 'aria-label': t('msg.cancelQueuedLabel'),
    title: t('msg.cancelQueuedLabel'), onclick: () => cancelQueued(live).catch(fail) }, t('msg.cancelQueued')) : null;
  if (cancel) cancel.hidden = !live.runId;
  tools.prepend(...[badge, cancel].filter(Boolean));
}

function unmarkWaiting(bubble) {
  bubble.classList.remove('waiting');
  const tools = bubble.nextElementSibling;
  if (tools?.classList.contains('msg-tools')) for (const n of tools.querySelectorAll('.msg-badge, .cancel-queued')) n.remove();
}

// cancelQueued takes a queued input out of the conversation's queue (its
// run never starts, nothing of it is stored) and out of the view. An input
// whose run started meanwhile is not taken: the cancel stopped its run,
// which ends as a cancelled run does.
async function cancelQueued(live) {
  if (!live.runId || live.started || !state.waiting.includes(live)) return;
  const button = live.tools.querySelector('.cancel-queued');
  button.disabled = true;
  try {
    await api(`/v1/agent/runs/${live.runId}/cancel`, { method: 'POST' });
  } catch (e) {
    // 404: it has left the queue already (another tab's cancel, a drop).
    if (!(e instanceof ApiError && e.status === 404)) {
      button.disabled = false;
      throw e;
    }
  }
  if (live.started) return;
  dropWaiting(live);
  say(t('status.queueCancelled'));
  $('composer-input').focus();
}

// dropWaiting takes a waiting input that will never run out of the view
// and stops following it. When nothing else goes on, the thread is drawn
// again as the server keeps it (a run that ended while this one waited
// left that to the last input).
function dropWaiting(live) {
  if (!state.waiting.includes(live)) return;
  state.waiting = state.waiting.filter((w) => w !== live);
  live.abort.abort();
  live.bubble.remove();
  live.tools.remove();
  forgetLive(live.runId);
  setRunning();
  if (!state.live && !state.waiting.length && state.currentId === live.conversationId) {
    openConversation(live.conversationId, { force: true }).catch(fail);
  }
}

// sendWaiting sends input while a run answers, following strategy:
// "enqueue" (its run starts when the runs before it end, in order),
// "interrupt" (the answering run stops, its answer kept and marked
// interrupted, and this one starts at once) or "rollback" (as interrupt,
// but the stopped turn leaves the conversation's branch: the new question
// takes the old one's place, which stays as its older version). Its
// question shows at the end of the thread, marked, until its run starts;
// a replaced turn leaves the view then.
async function sendWaiting(input, files, strategy) {
  const box = $('messages');
  const bubble = attachments.withFiles(userBubble(input), files);
  const tools = userTools({});
  box.append(bubble, tools);
  const live = { runId: '', conversationId: state.currentId, view: newRunView(), abort: new AbortController(), lastEventId: '', frames: [],
    bubble, tools, input, strategy, waiting: true, buffer: [], started: false, redraw: true,
    replaces: strategy === 'rollback' ? state.live : null };
  markWaiting(live, strategy);
  state.waiting.push(live);
  setRunning();
  scrollDown();
  say(strategy === 'enqueue' ? t('status.queued') : t('status.stopping'));
  const body = { conversationId: state.currentId, input, multitaskStrategy: strategy };
  if (files.length) body.attachments = files.map((f) => f.id);
  try {
    await follow(live, '/v1/agent/chat', {
      method: 'POST', body,
      onOpen: (res) => {
        live.runId = res.headers.get('X-Run-ID') || live.runId;
        if (live.runId && !live.started) saveLive(live);
        const cancel = tools.querySelector('.cancel-queued');
        if (cancel && live.runId) cancel.hidden = false;
      },
    });
  } catch (e) {
    if (state.waiting.includes(live)) {
      state.waiting = state.waiting.filter((w) => w !== live);
      bubble.remove();
      tools.remove();
      forgetLive(live.runId);
      setRunning();
    } else if (state.live === live) {
      state.live = null;
      setRunning();
    }
    throw e;
  }
}

// nearBottom: the reader is at the end of the thread, so new text scrolls it
// (state.stick); someone who scrolled up to read stays where they are.
function nearBottom() {
  const box = $('messages');
  return box.scrollHeight - box.scrollTop - box.clientHeight < 80;
}

async function send(input, files = [], strategy = '') {
  if (state.live || state.waiting.length) {
    if (strategy && state.currentId && (state.live?.conversationId ?? state.currentId) === state.currentId) return sendWaiting(input, files, strategy);
    say(t('status.busy'), true);
    return;
  }
  state.openSeq++; // a redraw still loading would wipe what is drawn now
  const box = $('messages');
  if (!state.currentId) box.replaceChildren();
  const bubble = attachments.withFiles(userBubble(input), files);
  box.append(bubble, userTools({}));
  const live = { runId: '', conversationId: state.currentId, view: newRunView(), abort: new AbortController(), lastEventId: '', frames: [], bubble };
  box.append(live.view.el);
  scrollDown();
  state.live = live;
  setRunning();
  say(t('status.thinking'));
  const body = { input };
  if (files.length) body.attachments = files.map((f) => f.id);
  if (state.currentId) body.conversationId = state.currentId;
  else if (state.agentId && (state.agentId !== BUILT_IN || defaultAgentId() !== BUILT_IN)) body.agentId = state.agentId;
  if (!state.currentId) live.agentId = body.agentId || defaultAgentId();
  await startLive(live, body, async () => live.view.el.remove());
}

// regenerate answers the question of run runId again (Retry on a failed
// run) with the native regenerate: the new answer is a sibling of the old
// one in the conversation's tree, which stays reachable from the new
// answer's pager. The question keeps its place; what followed the old
// answer leaves the view with it (it is on the old branch).
async function regenerate(runId) {
  if (state.live) {
    say(t('status.busy'), true);
    return;
  }
  const box = $('messages');
  const el = [...box.querySelectorAll(':scope > .run')].find((n) => n.dataset.runId === runId);
  const question = questionOf(el);
  if (!question) return;
  await steer({ conversationId: state.currentId, regenerate: { messageId: question } }, el);
}

// questionOf is the id of the question a drawn run answers.
function questionOf(el) {
  for (let n = el?.previousElementSibling; n; n = n.previousElementSibling) {
    if (n.classList.contains('user')) return n.dataset.messageId || '';
  }
  return '';
}

// startEdit opens the question above tools in an editor; sending it asks
// the native edit, a new version of the question (its sibling in the tree)
// answered afresh, the old one reachable from the new one's pager.
function startEdit(tools) {
  if (state.live || !tools?.dataset.messageId) return;
  const bubble = tools.previousElementSibling;
  const id = tools.dataset.messageId;
  const input = h('textarea', { class: 'edit-input', rows: 3, 'aria-label': t('msg.editLabel') });
  input.value = bubble.textContent;
  const close = () => {
    form.remove();
    bubble.hidden = false;
    tools.hidden = false;
    tools.querySelector('.edit').focus();
  };
  const form = h('form', { class: 'msg-edit' }, input,
    h('div', { class: 'msg-edit-buttons' },
      h('button', { type: 'button', class: 'small', onclick: close }, t('msg.editCancel')),
      h('button', { type: 'submit', class: 'small primary' }, t('msg.editSend'))));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || state.live) return;
    const next = userBubble(text);
    bubble.before(next, userTools({}));
    steer({ conversationId: state.currentId, edit: { messageId: id, input: text } }, bubble, next).catch(fail);
  });
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      form.requestSubmit();
    } else if (e.key === 'Escape') {
      e.stopPropagation();
      close();
    }
  });
  bubble.hidden = true;
  tools.hidden = true;
  tools.after(form);
  input.focus();
  input.setSelectionRange(input.value.length, input.value.length);
}

// steer starts an edit or a regenerate (body) and follows its run in place
// of the drawn thread from el on (that branch leaves the view); bubble is
// an edit's new question. When the run ends, the history is drawn again
// with the new version's pager.
async function steer(body, el, bubble = null) {
  state.openSeq++;
  const box = $('messages');
  const nodes = [...box.children];
  const from = nodes.indexOf(el);
  if (from >= 0) for (const n of nodes.slice(from)) n.remove();
  const live = { runId: '', conversationId: state.currentId, view: newRunView(), abort: new AbortController(), lastEventId: '', frames: [], bubble, steering: true };
  box.append(live.view.el);
  scrollDown();
  state.live = live;
  setRunning();
  say(t('status.thinking'));
  await startLive(live, body, () => openConversation(live.conversationId, { force: true }).catch(() => {}));
}

// startLive starts the run body asks for and follows it as the tab's live
// run (a Stop pressed before the run had an id is sent once it has one).
// A start that fails leaves no live run; undo then takes back what was
// drawn for it.
async function startLive(live, body, undo) {
  try {
    await follow(live, '/v1/agent/chat', {
      method: 'POST', body,
      onOpen: (res) => {
        live.runId = res.headers.get('X-Run-ID') || live.runId;
        if (live.stopAsked && live.runId) stop().catch(fail);
      },
    });
  } catch (e) {
    if (state.live === live) {
      state.live = null;
      setRunning();
      await undo();
    }
    throw e;
  }
}

// showVersion switches the conversation to the branch through messageId
// (a version of a question or an answer) and draws that branch.
async function showVersion(messageId, back) {
  if (state.live) return;
  await api(`/v1/conversations/${state.currentId}/active`, { method: 'PUT', body: { messageId } });
  await openConversation(state.currentId, { force: true, focus: { messageId, back } });
}

// rate gives (or with null withdraws) the owner's feedback on an answer.
async function rate(messageId, f) {
  if (!f) {
    await api(`/v1/messages/${messageId}/feedback`, { method: 'DELETE' });
    return null;
  }
  return api(`/v1/messages/${messageId}/feedback`, { method: 'PUT', body: f });
}

// attach follows a run that is already going: from the mirror of this tab
// when there is one (then only what came after its last event), else from
// the run's start.
async function attach(runId, conversationId) {
  if (state.live?.runId === runId) return;
  detach();
  const saved = loadLive(runId);
  const live = { runId, conversationId, view: newRunView(), abort: new AbortController(), lastEventId: '', frames: [], redraw: !saved };
  if (saved) {
    live.steering = saved.steering;
    live.frames = saved.frames;
    live.lastEventId = saved.lastEventId;
    for (const f of saved.frames) live.view.apply(f);
  }
  $('messages').append(live.view.el);
  scrollDown();
  state.live = live;
  setRunning();
  await follow(live, `/v1/agent/runs/${runId}/events`, { lastEventId: live.lastEventId });
}

async function stop() {
  const live = state.live;
  if (!live) return;
  say(t('status.stopping')); // before the request: agent.end may arrive before its answer
  if (!live.runId) {
    live.stopAsked = true; // Stop pressed before the run's id arrived: stop it when it does
    return;
  }
  live.stopAsked = false;
  $('stop').disabled = true;
  try {
    await api(`/v1/agent/runs/${live.runId}/cancel`, { method: 'POST' });
  } finally {
    $('stop').disabled = false;
  }
}

async function decide(c) {
  const body = { decision: c.decision };
  if (c.args) body.args = c.args;
  if (c.reason) body.reason = c.reason;
  await api(`/v1/agent/confirmations/${c.confirmationId}`, { method: 'POST', body });
  refreshPending().catch(() => {});
}

// --- confirmations waiting anywhere ------------------------------------------------------

function startPendingPoll() {
  clearInterval(state.pendingTimer);
  refreshPending().catch(() => {});
  state.pendingTimer = setInterval(() => {
    if (document.visibilityState === 'visible' && state.me) refreshPending().catch(() => {});
  }, PENDING_EVERY_MS);
}

async function refreshPending() {
  const { confirmations } = await api('/v1/agent/confirmations?status=pending');
  state.pending = confirmations;
  drawPending();
  // A confirmation for the open conversation whose run this tab does not
  // follow (started in another tab, or by the API): follow it, so its card
  // shows here and moves on live.
  for (const c of confirmations) {
    if (c.conversationId === state.currentId && state.live?.runId !== c.runId && !state.attachedElsewhere.has(c.runId) && $('timeline').hidden) {
      state.attachedElsewhere.add(c.runId);
      openConversation(state.currentId).catch(fail);
      break;
    }
  }
}

function drawPending() {
  const list = state.pending;
  $('pending-section').hidden = list.length === 0;
  $('pending-title').textContent = t('pending.titleN', { n: list.length });
  $('pending').replaceChildren(...list.map((c) => {
    const conv = state.conversations.find((x) => x.id === c.conversationId);
    const args = c.args && typeof c.args === 'object' ? Object.values(c.args).filter((v) => typeof v === 'string').join(' · ') : '';
    return h('li', { class: 'pending-item', 'data-confirmation-id': c.id },
      h('a', { href: `#/c/${c.conversationId}/confirm/${c.id}` },
        h('span', { class: 'pending-tool' }, toolLabel(c.toolName)),
        h('span', { class: 'pending-conv' }, conv ? title(conv) : t('pending.open')),
        args ? h('span', { class: 'pending-args muted' }, args) : null));
  }));
}

// --- shortcuts and help ------------------------------------------------------------------

const SHORTCUTS = [
  { keys: [mac ? '⌘' : 'Ctrl', 'Shift', 'O'], what: 'help.newChat' },
  { keys: ['Shift', 'Esc'], what: 'help.focus' },
  { keys: ['/'], what: 'help.focus' },
  { keys: ['Enter'], what: 'help.queue' },
  { keys: [mac ? '⌘' : 'Ctrl', 'Enter'], what: 'help.interrupt' },
  { keys: ['Esc'], what: 'help.stop' },
  { keys: [mac ? '⌘' : 'Ctrl', 'K'], what: 'help.search' },
  { keys: [mac ? '⌘' : 'Ctrl', 'Shift', 'C'], what: 'help.copy' },
  { keys: ['?'], what: 'help.help' },
];

function drawHelp() {
  $('shortcut-rows').replaceChildren(...SHORTCUTS.map((s) => h('tr', {},
    h('td', {}, s.keys.map((k, i) => [i ? ' + ' : '', h('kbd', {}, k)])),
    h('td', {}, t(s.what)))));
}

function openHelp() {
  drawHelp();
  if (!$('help').open) $('help').showModal();
}

function typing(el) {
  return el && (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName));
}

function onKey(e) {
  if (!state.me) return;
  const mod = mac ? e.metaKey : e.ctrlKey;
  const dialogOpen = $('help').open || $('confirm-delete').open;
  const key = e.key.toLowerCase();
  if (mod && e.shiftKey && key === 'o') {
    e.preventDefault();
    go('#/');
    $('composer-input').focus();
  } else if (mod && !e.shiftKey && key === 'k') {
    e.preventDefault();
    if (phone.matches) setDrawer(true);
    $('search').focus();
  } else if (mod && e.shiftKey && key === 'c') {
    const runs = [...$('messages').querySelectorAll(':scope > .run')];
    const copy = runs.at(-1)?.querySelector('.run-foot .copy');
    if (copy) {
      e.preventDefault();
      copy.click();
      say(t('answer.copied'));
    }
  } else if (e.shiftKey && e.key === 'Escape') {
    e.preventDefault();
    if (!$('chat').hidden) $('composer-input').focus();
  } else if (e.key === 'Escape' && !dialogOpen) {
    if ($('sidebar').classList.contains('open')) setDrawer(false);
    else if (state.live && !$('chat').hidden && !e.target.closest?.('.approval')) { // never cancel a decision by accident
      e.preventDefault();
      stop().catch(fail);
    }
  } else if (!typing(e.target) && !dialogOpen && !e.ctrlKey && !e.metaKey && !e.altKey) {
    if (e.key === '/') {
      e.preventDefault();
      if (!$('chat').hidden) $('composer-input').focus();
    } else if (e.key === '?') {
      e.preventDefault();
      openHelp();
    }
  } else if (mod && e.key === '/') {
    e.preventDefault();
    openHelp();
  }
}

// --- language ------------------------------------------------------------------------------

function onLanguage() {
  $('lang').value = lang();
  setRunning();
  drawWho();
  drawConversations();
  drawPending();
  tray.redraw();
  if ($('help').open) drawHelp();
  if (!state.me) return;
  // Views built in JavaScript are drawn again in the new language; a live
  // run is redrawn from its mirror and followed on.
  const tl = /^#\/runs\/([^/]+)\/timeline$/.exec(location.hash);
  if (tl) timeline.show(decodeURIComponent(tl[1])).catch(fail);
  else if (!$('agents').hidden) agentsView.redraw();
  else if (!$('usage').hidden) usageView.redraw();
  else openConversation(state.currentId, { force: true }).catch(fail);
}

// --- wiring ------------------------------------------------------------------------------

function autoGrow() {
  const el = $('composer-input');
  el.style.height = 'auto';
  el.style.height = `${Math.min(el.scrollHeight + 2, Math.round(window.innerHeight * 0.4))}px`;
}

function wire() {
  $('lang').value = lang();
  $('lang').addEventListener('change', (e) => setLang(e.target.value));
  window.addEventListener('langchange', onLanguage);
  $('signin-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const tok = $('token').value.trim();
    $('signin-error').hidden = true;
    signIn(tok).catch((err) => {
      $('signin-error').textContent = err instanceof ApiError && err.status === 401 ? t('signin.refused') : err.message;
      $('signin-error').hidden = false;
    });
  });
  $('sign-out').addEventListener('click', () => signOut());
  $('skip').addEventListener('click', () => $('composer-input').focus());
  const newChat = () => {
    go('#/');
    $('composer-input').focus();
  };
  $('new-chat').addEventListener('click', newChat);
  $('new-chat-top').addEventListener('click', newChat);
  $('more-conversations').addEventListener('click', () => loadConversations(false).catch(fail));
  $('search').addEventListener('input', (e) => {
    state.search = e.target.value;
    drawConversations();
    if (state.search.trim() && !state.allLoaded) loadAll().catch(fail);
  });
  $('search').addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && e.target.value) {
      e.stopPropagation();
      e.target.value = '';
      state.search = '';
      drawConversations();
    }
  });
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = $('composer-input').value.trim();
    if (tray.busy()) {
      say(t('attach.wait'), true);
      return;
    }
    const files = tray.ready();
    if (!input && !files.length) return;
    $('composer-input').value = '';
    autoGrow();
    if (files.length) tray.clear();
    // While a run answers, Enter (or Queue) queues; Interrupt interrupts;
    // Replace rolls the answering turn back.
    const strategy = { interrupt: 'interrupt', rollback: 'rollback' }[e.submitter?.id] ?? 'enqueue';
    send(input, files, strategy).catch(fail);
  });
  attachments.wire({ tray, button: $('attach'), picker: $('attach-input'), zone: $('chat'), input: $('composer-input') });
  $('composer-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      // Ctrl+Enter (⌘ on a Mac) interrupts the answer being written.
      const interrupt = (mac ? e.metaKey : e.ctrlKey) && !$('interrupt').hidden;
      $('composer').requestSubmit(interrupt ? $('interrupt') : null);
    }
  });
  $('composer-input').addEventListener('input', autoGrow);
  $('messages').addEventListener('scroll', () => (state.stick = nearBottom()), { passive: true });
  $('messages').addEventListener('chart-drawn', () => state.stick && scrollDown());
  $('stop').addEventListener('click', () => stop().catch(fail));
  $('nav-toggle').addEventListener('click', () => setDrawer(!$('sidebar').classList.contains('open')));
  $('nav-close').addEventListener('click', () => setDrawer(false));
  $('scrim').addEventListener('click', () => setDrawer(false));
  $('sidebar').addEventListener('click', (e) => {
    if (e.target.closest('a[href^="#/"]') && phone.matches) setDrawer(false);
  });
  phone.addEventListener('change', () => setDrawer(false));
  $('help-open').addEventListener('click', openHelp);
  $('help-close').addEventListener('click', () => $('help').close());
  $('confirm-delete-cancel').addEventListener('click', () => $('confirm-delete').close('cancel'));
  $('confirm-delete-ok').addEventListener('click', () => $('confirm-delete').close('ok'));
  document.addEventListener('keydown', onKey);
  wireMenu();
  window.addEventListener('hashchange', () => route().catch(fail));
}

// drawProviders offers "Sign in with <provider>" for each provider the
// server trusts with a console client id; none leaves the pasted token alone.
async function drawProviders() {
  let list = [];
  try {
    list = await providers();
  } catch {
    // an older server or a network hiccup: the pasted token still works
  }
  const box = $('signin-providers');
  box.replaceChildren(...list.map((p) => {
    const b = h('button', { type: 'button', class: 'primary', 'data-issuer': p.issuer }, t('signin.with', { name: p.name }));
    b.addEventListener('click', () => oidc.begin(p).catch((err) => signInFailed(p.name, err.message)));
    return b;
  }));
  box.hidden = list.length === 0;
  $('signin-or').hidden = list.length === 0;
}

function signInFailed(name, reason) {
  $('signin-error').textContent = t('signin.providerFailed', { name, reason });
  $('signin-error').hidden = false;
}

async function start() {
  drawProviders();
  window.addEventListener('langchange', () => drawProviders());
  let tok = null;
  try {
    tok = await oidc.complete();
  } catch (err) {
    signOut();
    signInFailed(err.provider ?? '', err.message);
    return;
  }
  if (tok) {
    signIn(tok).catch((err) => {
      signOut();
      signInFailed('', err instanceof ApiError ? err.message : t('signin.refused'));
    });
  } else if (token()) {
    signIn(token()).catch(() => signOut(t('signin.saved')));
  } else {
    signOut();
  }
}

applyLang();
wire();
start();
