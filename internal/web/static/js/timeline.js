// The run timeline (seed 000 CHAT-080): the events of GET
// /v1/agent/runs/{runId}/timeline on a time axis, consecutive token deltas
// of one message merged into one row with its duration, and a step-by-step
// replay that redraws the run as it stood after each step.

import { api } from './api.js';
import { h, $, clip } from './dom.js';
import { RunView } from './run.js';

const KIND = {
  'agent.reasoning': 'reasoning-ev',
  'tool.state': 'tool-ev',
  'tool.awaiting_input': 'tool-ev',
  error: 'error-ev',
};

function summary(name, d, merged) {
  switch (name) {
    case 'conversation.created':
      return d.title ? `“${clip(d.title, 60)}”` : 'new conversation';
    case 'agent.start':
      return d.engine ? `engine ${d.engine}` : 'run started';
    case 'agent.delta':
    case 'agent.reasoning':
      return `${merged.count} token${merged.count === 1 ? '' : 's'}: ${clip(merged.text, 70)}`;
    case 'agent.message':
      return `${d.partial ? '(partial) ' : ''}${clip(d.content, 80)}`;
    case 'tool.state':
      return `${d.name} → ${d.status}${d.error ? `: ${clip(d.error, 50)}` : ''}`;
    case 'tool.awaiting_input':
      return `${d.name} waits for a person`;
    case 'retrieval':
      return `${d.hits?.length ?? 0} hits for “${clip(d.query, 40)}”`;
    case 'context.patch':
      return 'shared state changed';
    case 'error':
      return clip(d.message || d.code, 80);
    case 'agent.end':
      return `${d.status}${d.error?.message ? `: ${clip(d.error.message, 60)}` : ''}`;
    default:
      return '';
  }
}

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
      prev.name = 'tool.awaiting_input';
      continue;
    }
    out.push({ name: ev.event, seq: ev.seq, start: at, end: at, count: 1, text: ev.payload?.delta ?? '',
      messageId: ev.payload?.messageId, payload: ev.payload ?? {}, events: [ev] });
  }
  return out;
}

function ms(n) {
  if (!Number.isFinite(n)) return '';
  return n >= 10_000 ? `${(n / 1000).toFixed(1)} s` : `${Math.round(n)} ms`;
}

export class TimelineView {
  constructor() {
    this.step = 0;
    this.rows = [];
    this.timer = null;
    $('tl-reset').addEventListener('click', () => this.go(0));
    $('tl-prev').addEventListener('click', () => this.go(this.step - 1));
    $('tl-next').addEventListener('click', () => this.go(this.step + 1));
    $('tl-all').addEventListener('click', () => this.go(this.rows.length));
    $('tl-play').addEventListener('click', () => this.togglePlay());
  }

  async show(runId) {
    this.stopPlay();
    $('timeline-events').replaceChildren();
    $('timeline-replay').replaceChildren();
    $('timeline-summary').textContent = 'Loading…';
    const tl = await api(`/v1/agent/runs/${encodeURIComponent(runId)}/timeline`);
    $('timeline-back').href = `#/c/${tl.conversationId}`;
    this.rows = rows(tl.events);
    const t0 = Date.parse(tl.startedAt);
    const tEnd = tl.endedAt ? Date.parse(tl.endedAt) : Math.max(t0, ...this.rows.map((r) => r.end));
    const total = Math.max(1, tEnd - t0);
    $('timeline-title').textContent = `Run timeline`;
    $('timeline-summary').textContent =
      `${tl.status} · ${tl.events.length} events in ${this.rows.length} steps · ${ms(tEnd - t0)} · run ${runId}`;
    let prevEnd = t0;
    const list = this.rows.map((r, i) => {
      const bar = h('span', { class: 'tl-bar' });
      bar.style.left = `${(100 * (r.start - t0)) / total}%`;
      bar.style.width = `${(100 * (r.end - r.start)) / total}%`;
      const gap = r.start - prevEnd;
      prevEnd = r.end;
      const dur = r.end > r.start ? ` (${ms(r.end - r.start)})` : '';
      const li = h('li', { class: 'tl-row', 'data-event': r.name, 'data-step': i + 1 },
        h('span', { class: 'tl-at', title: 'since the run started' }, `+${ms(r.start - t0)}`),
        h('span', { class: 'tl-gap', title: 'since the previous step ended' }, i === 0 ? '' : `Δ ${ms(gap)}`),
        h('span', { class: 'tl-main' },
          h('span', { class: `tl-name ${KIND[r.name] ?? ''}` }, r.name),
          h('span', { class: 'muted' }, dur),
          h('span', { class: 'tl-summary' }, summary(r.name, r.payload, r)),
          h('span', { class: 'tl-axis', 'aria-hidden': 'true' }, bar)));
      return li;
    });
    $('timeline-events').replaceChildren(...list);
    this.go(this.rows.length);
  }

  /** go shows the run as it stood after step n (0: before anything). */
  go(n) {
    n = Math.max(0, Math.min(this.rows.length, n));
    this.step = n;
    const view = new RunView({ interactive: false });
    for (const r of this.rows.slice(0, n)) for (const ev of r.events) view.apply({ event: ev.event, data: ev.payload ?? {} });
    $('timeline-replay').replaceChildren(view.el);
    [...$('timeline-events').children].forEach((li, i) => {
      li.classList.toggle('future', i >= n);
      li.classList.toggle('current', i === n - 1);
    });
    $('tl-position').textContent = `step ${n} of ${this.rows.length}`;
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
    $('tl-play').textContent = 'Pause';
    this.timer = setInterval(() => this.go(this.step + 1), 350);
  }

  stopPlay() {
    clearInterval(this.timer);
    this.timer = null;
    $('tl-play').textContent = 'Play';
  }
}
