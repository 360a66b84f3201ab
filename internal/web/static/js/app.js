// agentchat console: sign-in, conversations, live runs, tool approval,
// pending confirmations and the run timeline. Plain modules, no framework:
// the server embeds these files as they are.
//
// Routes live in the URL fragment and hold ids only (never the token):
// #/c/<conversationId>, #/runs/<runId>/timeline, #/ for a new chat.
//
// A live run is mirrored into sessionStorage (its events so far, with token
// deltas merged, and the id of the last one), so a reload redraws it and
// reattaches with Last-Event-ID: nothing is drawn twice, nothing is missed.

import { api, stream, token, setToken, ApiError } from './api.js';
import { h, $ } from './dom.js';
import { RunView, framesFromMessages } from './run.js';
import { TimelineView } from './timeline.js';

const LIVE_PREFIX = 'agentchat.live.';
const PENDING_EVERY_MS = 2000;

const state = {
  me: null,
  conversations: [],
  nextCursor: '',
  currentId: '', // the open conversation ('' for a new chat)
  live: null, // the run this tab follows: {runId, conversationId, view, abort, lastEventId, frames}
  pendingTimer: null,
  attachedElsewhere: new Set(), // runs attached because a confirmation showed up for them
  openSeq: 0, // guards against a slow conversation load drawing over a newer one
};

const timeline = new TimelineView();

// --- status line ---------------------------------------------------------------

function say(text, isError = false) {
  const s = $('status');
  s.textContent = text;
  s.classList.toggle('error', isError);
}

function fail(e) {
  say(e instanceof ApiError ? e.message : `Something went wrong: ${e.message}`, true);
  if (e instanceof ApiError && e.status === 401) signOut('Your token is no longer accepted; sign in again.');
}

// --- sign-in -------------------------------------------------------------------

async function signIn(tok) {
  const me = await api('/v1/me', { token: tok });
  setToken(tok);
  state.me = me;
  $('who').textContent = `${me.user} · tenant ${me.tenant}`;
  $('who').hidden = false;
  $('sign-out').hidden = false;
  $('signin').hidden = true;
  $('app').hidden = false;
  document.body.classList.add('signed-in');
  await loadConversations(true);
  startPendingPoll();
  await route();
}

function signOut(message = '') {
  detach();
  setToken('');
  clearInterval(state.pendingTimer);
  state.me = null;
  document.body.classList.remove('signed-in');
  $('who').hidden = true;
  $('sign-out').hidden = true;
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
  $('more-conversations').hidden = !page.hasMore;
  drawConversations();
}

function drawConversations() {
  const items = state.conversations.map((c) => {
    const title = c.title || 'Untitled';
    const open = h('button', { type: 'button', class: 'open', title, 'aria-current': c.id === state.currentId ? 'page' : false,
      onclick: () => go(`#/c/${c.id}`) }, title);
    const rename = h('button', { type: 'button', class: 'small', 'aria-label': `Rename ${title}`, onclick: () => startRename(li, c) }, 'Rename');
    const del = h('button', { type: 'button', class: 'small danger', 'aria-label': `Delete ${title}` }, 'Delete');
    del.addEventListener('click', () => {
      if (del.dataset.armed !== 'yes') {
        del.dataset.armed = 'yes';
        del.textContent = 'Confirm delete';
        return;
      }
      remove(c).catch(fail);
    });
    const li = h('li', { class: 'conv', 'data-id': c.id }, open, rename, del);
    return li;
  });
  $('conversations').replaceChildren(...items);
}

function startRename(li, c) {
  const input = h('input', { type: 'text', value: c.title || '', 'aria-label': 'New title', maxlength: 200 });
  const save = async () => {
    const updated = await api(`/v1/conversations/${c.id}`, { method: 'PATCH', body: { title: input.value } });
    Object.assign(c, updated);
    if (c.id === state.currentId) $('chat-title').textContent = updated.title || 'Untitled';
    await loadConversations(true);
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') save().catch(fail);
    if (e.key === 'Escape') drawConversations();
  });
  li.replaceChildren(input,
    h('button', { type: 'button', class: 'small', onclick: () => save().catch(fail) }, 'Save'),
    h('button', { type: 'button', class: 'small', onclick: () => drawConversations() }, 'Cancel'));
  input.focus();
  input.select();
}

async function remove(c) {
  await api(`/v1/conversations/${c.id}`, { method: 'DELETE' });
  if (c.id === state.currentId) go('#/');
  await loadConversations(true);
  say(`Deleted “${c.title || 'Untitled'}”.`);
}

// --- routing -----------------------------------------------------------------------

function go(hash) {
  if (location.hash === hash) route().catch(fail);
  else location.hash = hash;
}

async function route() {
  if (!state.me) return;
  if (location.hash && !location.hash.startsWith('#/')) return; // not a route
  $('sidebar').classList.remove('open');
  $('nav-toggle').setAttribute('aria-expanded', 'false');
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
  const c = /^#\/c\/([^/]+)$/.exec(location.hash);
  await openConversation(c ? decodeURIComponent(c[1]) : '');
}

// --- a conversation ------------------------------------------------------------------

function timelineHref(runId) {
  return `#/runs/${runId}/timeline`;
}

function newRunView() {
  return new RunView({ interactive: true, onDecide: decide, timelineHref });
}

async function openConversation(id) {
  const seq = ++state.openSeq;
  if (state.live && state.live.conversationId !== id) detach();
  state.currentId = id;
  drawConversations();
  say('');
  const box = $('messages');
  if (!id) {
    $('chat-title').textContent = 'New chat';
    box.replaceChildren(h('p', { class: 'muted' }, 'Ask anything. Try “What time is it in Tokyo?”, “think about it”, or “Send a Feishu message saying \"hi\"” to see a tool wait for your approval.'));
    return;
  }
  if (state.live?.conversationId === id) return; // already drawn and following
  const [conv, messages] = await Promise.all([api(`/v1/conversations/${id}`), allMessages(id)]);
  if (seq !== state.openSeq) return;
  $('chat-title').textContent = conv.title || 'Untitled';
  // The newest run may still be going: draw it from its stream, not from
  // the messages it has stored so far.
  const lastRunId = [...messages].reverse().find((m) => m.runId)?.runId;
  let active = null;
  if (lastRunId) {
    const run = await api(`/v1/agent/runs/${lastRunId}`);
    if (['queued', 'running', 'awaiting_input'].includes(run.status)) active = run;
  }
  if (seq !== state.openSeq) return;
  forgetFinished(id, active?.id);
  const nodes = [];
  for (const group of groupByRun(messages)) {
    for (const m of group.messages.filter((x) => x.role === 'user')) nodes.push(userBubble(m.content));
    if (active && group.runId === active.id) continue;
    const rest = group.messages.filter((x) => x.role !== 'user');
    if (!group.runId && !rest.length) continue;
    const view = newRunView();
    view.opt.interactive = false;
    for (const f of framesFromMessages(group.runId, rest)) view.apply(f);
    view.end('', null);
    nodes.push(view.el);
  }
  box.replaceChildren(...nodes);
  scrollDown();
  if (active) attach(active.id, id).catch(fail);
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

function userBubble(text) {
  return h('div', { class: 'msg user' }, text);
}

function scrollDown() {
  const box = $('messages');
  box.scrollTop = box.scrollHeight;
}

// --- live runs ---------------------------------------------------------------------

function saveLive(live) {
  const frames = live.frames;
  try {
    sessionStorage.setItem(LIVE_PREFIX + live.runId, JSON.stringify({ conversationId: live.conversationId, lastEventId: live.lastEventId, frames }));
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

// forgetFinished drops the mirrors of a conversation's runs that have ended
// while this tab was elsewhere.
function forgetFinished(conversationId, activeRunId) {
  for (const key of Object.keys(sessionStorage)) {
    if (!key.startsWith(LIVE_PREFIX) || key === LIVE_PREFIX + activeRunId) continue;
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

function setRunning(on) {
  $('stop').hidden = !on;
  $('send').disabled = on;
}

function detach() {
  if (!state.live) return;
  state.live.abort.abort();
  state.live = null;
  setRunning(false);
}

// follow reads a run's frames into its view until the stream ends.
async function follow(live, path, init) {
  let ended = false;
  const onEvent = (f) => {
    if (state.live !== live) return;
    if (f.event === 'conversation.created') {
      live.conversationId = f.data.conversationId;
      state.currentId = f.data.conversationId;
      history.replaceState(null, '', `#/c/${f.data.conversationId}`);
      $('chat-title').textContent = f.data.title || 'Untitled';
      loadConversations(true).catch(fail);
    }
    if (f.event === 'agent.start' && !live.runId) live.runId = f.data.runId;
    record(live, f);
    if (f.event === 'ping') return;
    live.view.apply(f);
    if (f.event === 'tool.awaiting_input') say(`${f.data.name} is waiting for your approval.`);
    if (f.event === 'tool.state' && f.data.status === 'running') say('');
    if (f.event === 'agent.end') {
      ended = true;
      if (f.data.status === 'cancelled') say('Stopped. The partial answer is kept.');
      else if (f.data.status === 'failed') say('The run failed.', true);
      else say('');
    }
    scrollDown();
  };
  try {
    await stream(path, { ...init, signal: live.abort.signal, onEvent });
  } catch (e) {
    if (live.abort.signal.aborted) return;
    throw e;
  }
  if (state.live !== live) return;
  if (!ended) {
    // The server ended the stream without agent.end (a restart): resume.
    return follow(live, `/v1/agent/runs/${live.runId}/events`, { lastEventId: live.lastEventId });
  }
  forgetLive(live.runId);
  state.live = null;
  setRunning(false);
  loadConversations(true).catch(fail);
}

async function send(input) {
  if (state.live) {
    say('A run is in progress in this conversation; wait for it or stop it.', true);
    return;
  }
  const box = $('messages');
  if (!state.currentId) box.replaceChildren();
  box.append(userBubble(input));
  const live = { runId: '', conversationId: state.currentId, view: newRunView(), abort: new AbortController(), lastEventId: '', frames: [] };
  box.append(live.view.el);
  scrollDown();
  state.live = live;
  setRunning(true);
  say('Thinking…');
  const body = { input };
  if (state.currentId) body.conversationId = state.currentId;
  try {
    await follow(live, '/v1/agent/chat', {
      method: 'POST', body,
      onOpen: (res) => {
        live.runId = res.headers.get('X-Run-ID') || live.runId;
      },
    });
  } catch (e) {
    if (state.live === live) {
      state.live = null;
      setRunning(false);
      live.view.el.remove();
    }
    throw e;
  }
}

// attach follows a run that is already going: from the mirror of this tab
// when there is one (then only what came after its last event), else from
// the run's start.
async function attach(runId, conversationId) {
  if (state.live?.runId === runId) return;
  detach();
  const saved = loadLive(runId);
  const live = { runId, conversationId, view: newRunView(), abort: new AbortController(), lastEventId: '', frames: [] };
  if (saved) {
    live.frames = saved.frames;
    live.lastEventId = saved.lastEventId;
    for (const f of saved.frames) live.view.apply(f);
  }
  $('messages').append(live.view.el);
  scrollDown();
  state.live = live;
  setRunning(true);
  await follow(live, `/v1/agent/runs/${runId}/events`, { lastEventId: live.lastEventId });
}

async function stop() {
  const live = state.live;
  if (!live?.runId) return;
  $('stop').disabled = true;
  say('Stopping…'); // before the request: agent.end may arrive before its answer
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
  $('pending-empty').hidden = confirmations.length > 0;
  $('pending').replaceChildren(...confirmations.map(pendingItem));
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

function pendingItem(c) {
  const conv = state.conversations.find((x) => x.id === c.conversationId);
  const err = h('p', { class: 'error', role: 'alert' });
  const act = (decision) => async () => {
    try {
      await decide({ confirmationId: c.id, decision });
    } catch (e) {
      err.textContent = e.message;
    }
  };
  return h('li', { class: 'pending-item', 'data-confirmation-id': c.id },
    h('strong', {}, c.toolName),
    h('pre', {}, JSON.stringify(c.args)),
    h('a', { href: `#/c/${c.conversationId}` }, conv?.title || 'Open its conversation'),
    h('div', { class: 'row' },
      h('button', { type: 'button', class: 'primary', 'aria-label': `Approve ${c.toolName}`, onclick: act('approve') }, 'Approve'),
      h('button', { type: 'button', class: 'danger', 'aria-label': `Reject ${c.toolName}`, onclick: act('reject') }, 'Reject')),
    err);
}

// --- wiring ------------------------------------------------------------------------------

function wire() {
  $('signin-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const tok = $('token').value.trim();
    $('signin-error').hidden = true;
    signIn(tok).catch((err) => {
      $('signin-error').textContent = err instanceof ApiError && err.status === 401 ? 'That token was not accepted.' : err.message;
      $('signin-error').hidden = false;
    });
  });
  $('sign-out').addEventListener('click', () => signOut());
  $('skip').addEventListener('click', () => $('composer-input').focus());
  $('new-chat').addEventListener('click', () => {
    go('#/');
    $('composer-input').focus();
  });
  $('more-conversations').addEventListener('click', () => loadConversations(false).catch(fail));
  $('composer').addEventListener('submit', (e) => {
    e.preventDefault();
    const input = $('composer-input').value.trim();
    if (!input) return;
    $('composer-input').value = '';
    send(input).catch(fail);
  });
  $('composer-input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $('composer').requestSubmit();
    }
  });
  $('stop').addEventListener('click', () => stop().catch(fail));
  $('nav-toggle').addEventListener('click', () => {
    const open = $('sidebar').classList.toggle('open');
    $('nav-toggle').setAttribute('aria-expanded', String(open));
  });
  window.addEventListener('hashchange', () => route().catch(fail));
}

wire();
if (token()) {
  signIn(token()).catch(() => signOut('Sign in again: the saved token was not accepted.'));
} else {
  signOut();
}
