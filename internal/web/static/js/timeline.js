// The run timeline (seed 000 CHAT-080), for people: the user's message
// first, then each step of GET /v1/agent/runs/{runId}/timeline with a name
// (not an event name), when it happened and how long it took, in aligned
// columns and on a time axis. Consecutive token deltas of one message are
// one step ("Writing the answer"); a tool's result says how long the tool
// ran; failures stand out. A step-by-step replay redraws the run as it
// stood after each step, and a link leads back to the run in its
// conversation.

import { api } from './api.js';
import { h, $, clip } from './dom.js';
import { t, dateTime } from './i18n.js';
import { RunView, toolLabel } from './run.js';
import { agentLabel, ensureAgents } from './agents.js';
import { runUsage } from './usage.js';

/** rows groups the timeline's events: runs of deltas of one message become one row. */
export function rows(events) {
  const out = [];
  for (const ev of events) {
    const at = Date.parse(ev.at);
    const prev = out[out.length - 1];
    const mergeable = ev.event === 'agent.delta' || ev.event === 'agent.reasoning';
    if (mergeable && prev && prev.name === ev.event && prev.messageId === ev.payload?.messageId) {
      prev.end = at;
      prev.count++;
      prev.text += ev.payload.delta ?? '';
      prev.events.push(ev);
      continue;
    }
    if (ev.event === 'tool.awaiting_input' && prev?.name === 'tool.state' && prev.seq === ev.seq) {
      prev.events.push(ev); // the same step, named twice
      continue;
    }
    out.push({ name: ev.event, seq: ev.seq, start: at, end: at, count: 1, text: ev.payload?.delta ?? '',
      messageId: ev.payload?.messageId, payload: ev.payload ?? {}, events: [ev] });
  }
  return out;
}

/** ms formats a duration: "840 ms", "1.17 s", "12.4 s", "3 min 5 s". */
export function ms(n) {
  if (!Number.isFinite(n) || n < 0) return '';
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 10_000) return `${(n / 1000).toFixed(2)} s`;
  if (n < 60_000) return `${(n / 1000).toFixed(1)} s`;
  return `${Math.floor(n / 60_000)} min ${Math.round((n % 60_000) / 1000)} s`;
}

// step names a row for people and says what it did; failed marks a
// failure to highlight.
function step(r, toolStarts) {
  const d = r.payload;
  switch (r.name) {
    case 'conversation.created':
      return { name: t('tl.created'), text: d.title ? `“${clip(d.title, 80)}”` : '' };
    case 'agent.start':
      return { name: t('tl.start'), text: d.engine ? t('tl.engine', { engine: d.engine }) : '' };
    case 'retrieval':
      return { name: t('tl.retrieval'), text: t('retrieval.title', { n: d.hits?.length ?? 0, query: clip(d.query, 50) }) };
    case 'agent.reasoning':
      return { name: t('tl.reasoning'), text: `${t('tl.tokens', { n: r.count })} · ${clip(r.text, 90)}` };
    case 'agent.delta':
      return { name: t('tl.writing'), text: `${t('tl.tokens', { n: r.count })} · ${clip(r.text, 90)}` };
    case 'agent.message':
      return { name: d.partial ? t('tl.partial') : t('tl.message'), text: clip(d.content, 100) };
    case 'tool.state': {
      const tool = toolLabel(d.name);
      switch (d.status) {
        case 'pending':
          return { name: t('tl.toolCall', { tool }), text: clip(JSON.stringify(d.input ?? {}), 90), tool: 'start' };
        case 'running':
          return { name: t('tl.toolRun', { tool }), text: '', tool: 'start' };
        case 'awaiting_input':
          return { name: t('tl.toolWait', { tool }), text: t('tl.toolWaitText'), wait: true };
        case 'succeeded': {
          const took = toolStarts.get(d.toolCallId);
          return { name: t('tl.toolDone', { tool }), text: clip(d.content, 90), took: took === undefined ? undefined : r.start - took };
        }
        case 'failed': {
          const took = toolStarts.get(d.toolCallId);
          return { name: d.denied ? t('tl.toolRejected', { tool }) : t('tl.toolFailed', { tool }),
            text: d.error || d.content || '', failed: true, took: took === undefined ? undefined : r.start - took };
        }
        default:
          return { name: tool, text: d.status };
      }
    }
    case 'tool.awaiting_input':
      return { name: t('tl.toolWait', { tool: toolLabel(d.name) }), text: t('tl.toolWaitText'), wait: true };
    case 'context.patch':
      return { name: t('tl.patch'), text: '' };
    case 'error':
      return { name: t('tl.error'), text: d.message || d.code || '', failed: true };
    case 'agent.end':
      return { name: t(`tl.end.${d.status}`) === `tl.end.${d.status}` ? d.status : t(`tl.end.${d.status}`),
        text: d.error?.message ?? '', failed: d.status === 'failed' };
    default:
      return { name: r.name, text: '' };
  }
}

export class TimelineView {
  constructor() {
    this.step = 0;
    this.rows = [];
    this.timer = null;
    this.runId = '';
    $('tl-reset').addEventListener('click', () => this.go(0));
    $('tl-prev').addEventListener('click', () => this.go(this.step - 1));
    $('tl-next').addEventListener('click', () => this.go(this.step + 1));
    $('tl-all').addEventListener('click', () => this.go(this.rows.length));
    $('tl-play').addEventListener('click', () => this.togglePlay());
  }

  async show(runId) {
    this.stopPlay();
    this.runId = runId;
    $('timeline-events').replaceChildren();
    $('timeline-replay').replaceChildren();
    $('timeline-summary').textContent = t('tl.loading');
    const id = encodeURIComponent(runId);
    const [tl, run] = await Promise.all([api(`/v1/agent/runs/${id}/timeline`), api(`/v1/agent/runs/${id}`)]);
    await ensureAgents([tl.agentId]).catch(() => {});
    if (this.runId !== runId) return;
    const conv = tl.conversationId || run.conversationId;
    $('timeline-back').href = `#/c/${conv}/r/${runId}`;
    this.rows = rows(tl.events);
    const t0 = Date.parse(tl.startedAt);
    const tEnd = tl.endedAt ? Date.parse(tl.endedAt) : Math.max(t0, ...this.rows.map((r) => r.end));
    const total = Math.max(1, tEnd - t0);
    const status = t(`tl.end.${tl.status}`) === `tl.end.${tl.status}` ? tl.status : t(`tl.end.${tl.status}`);
    $('timeline-summary').replaceChildren(
      h('span', { class: `badge ${tl.status}` }, status),
      h('span', {}, t('tl.summary', { steps: this.rows.length, events: tl.events.length, total: ms(tEnd - t0), at: dateTime(new Date(t0)) })),
      agentLabel(tl.agentId, tl.agentVersion) ? h('span', { class: 'run-agent' }, agentLabel(tl.agentId, tl.agentVersion)) : null,
      runUsage(run.usage) ? h('span', { class: 'tl-usage' }, runUsage(run.usage)) : null,
      h('code', { class: 'muted run-id', title: t('tl.runId') }, runId));

    const toolStarts = new Map();
    const list = this.rows.map((r, i) => {
      const s = step(r, toolStarts);
      if (s.tool === 'start' && r.payload.toolCallId) toolStarts.set(r.payload.toolCallId, r.start);
      const dur = r.end > r.start ? r.end - r.start : s.took;
      const bar = h('span', { class: 'tl-bar' });
      bar.style.left = `${(100 * (r.start - t0)) / total}%`;
      bar.style.width = `${(100 * Math.max(0, (dur ?? 0))) / total}%`;
      if (s.took !== undefined) bar.style.left = `${(100 * (r.start - s.took - t0)) / total}%`;
      return h('li', { class: `tl-row${s.failed ? ' failed' : ''}${s.wait ? ' waiting' : ''}`, 'data-event': r.name, 'data-step': i + 1 },
        h('span', { class: 'tl-at', title: t('tl.sinceStart') }, `+${ms(r.start - t0)}`),
        h('span', { class: 'tl-dur', title: t('tl.duration') }, dur !== undefined && dur > 0 ? ms(dur) : ''),
        h('span', { class: 'tl-main' },
          h('span', { class: 'tl-name' }, s.failed ? h('span', { 'aria-hidden': 'true' }, '⚠ ') : null, s.name),
          h('code', { class: 'tl-event' }, r.name),
          s.text ? h('span', { class: 'tl-summary' }, s.text) : null,
          h('span', { class: 'tl-axis', 'aria-hidden': 'true' }, bar)));
    });
    const you = h('li', { class: 'tl-user' },
      h('span', { class: 'tl-at' }, dateTime(new Date(Date.parse(run.createdAt || tl.startedAt)), { timeStyle: 'medium' })),
      h('span', { class: 'tl-dur' }),
      h('span', { class: 'tl-main' }, h('span', { class: 'tl-name' }, t('tl.you')), h('span', { class: 'tl-user-text' }, run.input ?? '')));
    $('timeline-events').replaceChildren(you, ...list);
    this.go(this.rows.length);
  }

  /** go shows the run as it stood after step n (0: before anything). */
  go(n) {
    n = Math.max(0, Math.min(this.rows.length, n));
    this.step = n;
    const view = new RunView({ interactive: false });
    for (const r of this.rows.slice(0, n)) for (const ev of r.events) view.apply({ event: ev.event, data: ev.payload ?? {} });
    for (const s of view.segments.values()) s.md?.flush();
    $('timeline-replay').replaceChildren(view.el);
    [...$('timeline-events').querySelectorAll('.tl-row')].forEach((li, i) => {
      li.classList.toggle('future', i >= n);
      li.classList.toggle('current', i === n - 1);
      if (i === n - 1) li.setAttribute('aria-current', 'step');
      else li.removeAttribute('aria-current');
    });
    $('tl-position').textContent = t('tl.position', { n, total: this.rows.length });
    $('tl-prev').disabled = n === 0;
    $('tl-next').disabled = n === this.rows.length;
    if (n === this.rows.length) this.stopPlay();
  }

  togglePlay() {
    if (this.timer) {
      this.stopPlay();
      return;
    }
    if (this.step >= this.rows.length) this.go(0);
    $('tl-play').textContent = t('tl.pause');
    this.timer = setInterval(() => this.go(this.step + 1), 350);
  }

  stopPlay() {
    clearInterval(this.timer);
    this.timer = null;
    $('tl-play').textContent = t('tl.play');
  }
}
