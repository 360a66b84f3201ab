// RunView draws one run from its native events (the live stream, a replayed
// stream, a timeline, or frames made from stored messages by
// framesFromMessages). It updates the DOM in place, one segment per
// retrieval, reasoning block, tool call and answer, in the order they first
// appear, so typing in an approval card (a reason, edited arguments) is
// never wiped by the next token, and a run drawn from history is the run
// that was drawn live.

import { h, pretty, clip } from './dom.js';
import { t, dateTime } from './i18n.js';
import { MarkdownView, copyButton } from './markdown.js';
import { chartData, chartFailure, chartCard } from './charts.js';

const BADGE = {
  pending: 'tool.pending',
  running: 'tool.running',
  awaiting_input: 'tool.awaiting',
  succeeded: 'tool.succeeded',
  failed: 'tool.failed',
};

let approvals = 0; // numbers the approval cards' titles, for unique ids

/** toolLabel is a tool's name for people (the built-in ones are translated). */
export function toolLabel(name) {
  const key = `toolname.${name}`;
  const s = t(key);
  return s === key ? name : s;
}

export class RunView {
  /**
   * @param {{interactive?: boolean,
   *   onDecide?: (c: {confirmationId: string, decision: string, args?: object, reason?: string}) => Promise<void>,
   *   onRegenerate?: (runId: string, failed: boolean) => void,
   *   onPage?: (messageId: string, back: boolean) => void,
   *   onFeedback?: (messageId: string, f: {rating: string, comment?: string} | null) => Promise<object | null>,
   *   timelineHref?: (runId: string) => string,
   *   agentLabel?: (agentId: string, version: number) => string}} opt
   */
  constructor(opt = {}) {
    this.opt = opt;
    this.el = h('article', { class: 'run', 'aria-label': t('run.label') });
    this.segments = new Map();
    this.runId = '';
    this.engine = '';
    this.status = '';
    this.error = '';
    this.foot = null;
    this.retrievals = 0;
    this.agentId = '';
    this.agentVersion = 0;
    this.versions = null; // {ids, current}: the answer's versions (its siblings in the tree)
    this.rating = null; // {messageId, rating, comment}: the owner's feedback on the answer
    this.interrupted = false; // a newer input stopped the run (multitaskStrategy interrupt)
  }

  /**
   * setVersions names the versions of this answer (the ids of its siblings
   * in the conversation's tree, itself included) so the foot pages between
   * them; one version draws no pager.
   */
  setVersions(ids, current) {
    this.versions = ids?.length > 1 ? { ids, current } : null;
    if (this.foot) this.drawVersions();
  }

  /** setFeedback shows the owner's stored rating of the answer message. */
  setFeedback(messageId, f) {
    this.rating = f ? { messageId, rating: f.rating, comment: f.comment ?? '' } : null;
    if (this.foot) this.drawFeedback();
  }

  /** setAgent shows which agent (and version) answered, when opt.agentLabel names it. */
  setAgent(id, version) {
    this.agentId = id || '';
    this.agentVersion = version || 0;
    const label = this.opt.agentLabel?.(this.agentId, this.agentVersion) ?? '';
    if (label) this.footer().agent.textContent = label;
    else if (this.foot) this.foot.agent.textContent = '';
    this.el.dataset.agentId = this.agentId;
    if (this.agentVersion) this.el.dataset.agentVersion = String(this.agentVersion);
  }

  segment(key, make) {
    let s = this.segments.get(key);
    if (!s) {
      s = make();
      this.segments.set(key, s);
      if (this.foot) this.el.insertBefore(s.el, this.foot);
      else this.el.append(s.el);
    }
    return s;
  }

  /** apply draws one native frame {event, data}. */
  apply({ event, data }) {
    switch (event) {
      case 'agent.start':
        this.runId = data.runId;
        this.engine = data.engine || this.engine;
        this.el.dataset.runId = data.runId;
        this.status = 'running';
        if (data.agentId) this.setAgent(data.agentId, data.agentVersion);
        break;
      case 'agent.reasoning': {
        const s = this.segment(`r:${data.messageId}`, () => {
          const text = h('div', { class: 'reasoning-text' });
          const el = h('details', { class: 'reasoning' }, h('summary', {}, t('run.reasoning')), text);
          return { el, text };
        });
        s.text.append(data.delta);
        break;
      }
      case 'agent.delta': {
        const s = this.answer(data.messageId);
        s.raw += data.delta;
        s.md.set(s.raw);
        break;
      }
      case 'agent.message': {
        if (data.role && data.role !== 'assistant') break;
        const s = this.answer(data.messageId);
        s.raw = data.content ?? '';
        s.md.set(s.raw);
        s.md.flush();
        s.el.classList.toggle('partial', Boolean(data.partial));
        if (data.interrupted) this.interrupted = true;
        s.el.classList.remove('streaming');
        break;
      }
      case 'tool.state':
      case 'tool.awaiting_input':
        this.tool(data);
        break;
      case 'retrieval':
        this.retrieval(data);
        break;
      case 'error':
        this.error = data.message || data.code || t('run.error');
        this.footer().error.textContent = this.error;
        break;
      case 'agent.end':
        this.end(data.status, data.error);
        break;
      default:
        break;
    }
  }

  answer(messageId) {
    return this.segment(`t:${messageId}`, () => {
      const el = h('div', { class: 'msg answer streaming', 'data-message-id': messageId });
      return { el, md: new MarkdownView(el), raw: '' };
    });
  }

  retrieval(data) {
    const n = this.retrievals++;
    const hits = data.hits ?? [];
    this.segment(`ret:${n}`, () => ({
      el: h('details', { class: 'retrieval' },
        h('summary', {}, t('retrieval.title', { n: hits.length, query: clip(data.query, 60) })),
        h('ol', { class: 'hits' }, hits.map((hit) => h('li', { class: 'hit' },
          h('div', { class: 'hit-source' }, hit.source ?? '',
            hit.score !== undefined ? h('span', { class: 'muted' }, ` · ${t('retrieval.score', { score: Number(hit.score).toFixed(2) })}`) : null),
          h('div', { class: 'hit-text' }, hit.content))))),
    }));
  }

  tool(data) {
    const s = this.segment(`tool:${data.toolCallId}`, () => {
      const badge = h('span', { class: 'badge' });
      const input = h('div', { class: 'tool-input' });
      const args = h('details', { class: 'tool-args' }, h('summary', {}, t('tool.arguments')), input);
      const result = h('div', { class: 'tool-result' });
      const note = h('p', { class: 'tool-note muted' });
      note.hidden = true;
      const el = h('section', { class: 'tool', 'data-tool-call-id': data.toolCallId, 'aria-label': t('tool.label', { name: data.name }) },
        h('div', { class: 'tool-head' },
          h('span', { class: 'tool-icon', 'aria-hidden': 'true' }, '⚙'),
          h('h3', {}, toolLabel(data.name), toolLabel(data.name) !== data.name ? h('code', { class: 'tool-code' }, data.name) : null),
          badge),
        args, result, note);
      return { el, badge, input, args, result, note, actions: null, status: '', inputJSON: null, confirmed: false };
    });
    if (s.status === data.status && data.status === 'awaiting_input') return; // tool.awaiting_input repeats tool.state
    s.status = data.status;
    s.el.dataset.status = data.status;
    const denied = data.status === 'failed' && data.denied;
    s.el.classList.toggle('denied', Boolean(denied));
    s.badge.className = `badge ${denied ? 'rejected' : data.status}`;
    s.badge.textContent = denied ? t('tool.rejected') : t(BADGE[data.status] ?? data.status);
    const input = data.input ?? data.args;
    if (input !== undefined) {
      s.inputJSON = input;
      s.input.replaceChildren(formatArgs(input));
    }
    if (data.status === 'awaiting_input' || data.confirmationId || data.confirmed) s.confirmed = true;
    s.args.open = data.status === 'awaiting_input';
    s.result.replaceChildren();
    if (data.status === 'succeeded') {
      const chart = chartData(data.output);
      const text = data.content || pretty(data.output);
      if (chart) s.result.append(chartCard(chart)); // its table holds the numbers; the tool's sentence says no more
      else if (chartFailure(data.output)) s.result.append(h('p', { class: 'error' }, t('chart.unavailable')), h('pre', { class: 'tool-output' }, text));
      else if (text) s.result.append(h('pre', { class: 'tool-output' }, text));
    } else if (data.status === 'failed') {
      s.el.classList.add('failed');
      s.result.append(h('p', { class: 'tool-error', role: denied ? null : 'note' }, denied ? data.content || data.error || '' : data.error || data.content || t('tool.failed')));
    }
    const approved = s.confirmed && data.status === 'succeeded';
    s.note.hidden = !approved;
    s.note.textContent = approved ? t('tool.approvedNote') : '';
    if (data.status === 'awaiting_input' && data.confirmationId) {
      if (this.opt.interactive) s.el.id = `confirm-${data.confirmationId}`; // the pending list's link (a replay may show the same card)
      if (!s.actions) {
        s.actions = this.approval(data, s);
        s.el.append(s.actions);
      }
    } else if (s.actions) {
      s.actions.remove();
      s.actions = null;
      s.editor?.remove();
      s.editor = null;
      s.input.hidden = false;
      s.el.removeAttribute('id');
    }
  }

  // approval is the card's decision part: what waits and why, then the
  // reason and the buttons, Approve and Reject side by side. Outside an
  // interactive view (a timeline replay) it only says that the call waits.
  approval(data, s) {
    const name = data.name;
    const facts = h('dl', { class: 'approval-facts' },
      h('dt', {}, t('approval.tool')), h('dd', {}, toolLabel(name), toolLabel(name) !== name ? h('code', {}, ` ${name}`) : null),
      h('dt', {}, t('approval.agent')), h('dd', {}, this.engine ? `agentchat · ${this.engine}` : 'agentchat'),
      h('dt', {}, t('approval.why')), h('dd', {}, t('approval.whyText', { tool: toolLabel(name) })),
      data.expiresAt ? [h('dt', {}, t('approval.expires')), h('dd', {}, h('time', { datetime: data.expiresAt }, dateTime(new Date(data.expiresAt))))] : null);
    const titleId = `approval-${++approvals}`;
    const box = h('div', { class: 'approval', role: 'group', 'aria-labelledby': titleId },
      h('p', { class: 'approval-title', id: titleId }, t('approval.title')),
      facts);
    if (!this.opt.interactive) return box;

    const reasonId = `reason-${data.confirmationId}`;
    const reason = h('input', { type: 'text', id: reasonId, maxlength: 2000, autocomplete: 'off', placeholder: t('approval.reasonHint') });
    const editor = h('textarea', { class: 'args-editor', 'aria-label': t('approval.argsFor', { name }), spellcheck: 'false', rows: 6 });
    editor.value = pretty(s.inputJSON ?? data.input ?? {});
    editor.hidden = true;
    s.input.after(editor);
    const problem = h('p', { class: 'error', role: 'alert' });
    const wait = h('p', { class: 'muted', role: 'status' });
    const buttons = [];
    const editing = () => !editor.hidden;
    const decide = async (decision) => {
      problem.textContent = '';
      const c = { confirmationId: data.confirmationId, decision };
      if (reason.value.trim()) c.reason = reason.value.trim();
      if (decision === 'approve' && editing()) {
        try {
          c.args = JSON.parse(editor.value);
        } catch {
          problem.textContent = t('approval.badJSON');
          editor.focus();
          return;
        }
        if (!c.args || typeof c.args !== 'object' || Array.isArray(c.args)) {
          problem.textContent = t('approval.notObject');
          editor.focus();
          return;
        }
      }
      buttons.forEach((b) => (b.disabled = true));
      try {
        await this.opt.onDecide(c);
        wait.textContent = decision === 'approve' ? t('approval.approved') : t('approval.rejected');
      } catch (e) {
        problem.textContent = e.message;
        buttons.forEach((b) => (b.disabled = false));
      }
    };
    const approve = h('button', { type: 'button', class: 'primary approve', onclick: () => decide('approve') }, t('approval.approve'));
    const reject = h('button', { type: 'button', class: 'danger reject', onclick: () => decide('reject') }, t('approval.reject'));
    const edit = h('button', { type: 'button', class: 'ghost', 'aria-expanded': 'false', onclick: () => {
      editor.hidden = !editor.hidden;
      s.input.hidden = !editor.hidden;
      s.args.open = true;
      edit.setAttribute('aria-expanded', String(editing()));
      edit.textContent = editing() ? t('approval.cancelEdit') : t('approval.edit');
      approve.textContent = editing() ? t('approval.approveEdited') : t('approval.approve');
      if (editing()) editor.focus();
    } }, t('approval.edit'));
    buttons.push(approve, reject, edit);
    s.editor = editor;
    box.append(
      h('div', { class: 'approval-reason' }, h('label', { for: reasonId }, t('approval.reason')), reason),
      h('div', { class: 'approval-buttons' }, approve, reject, edit),
      problem, wait);
    return box;
  }

  footer() {
    if (!this.foot) {
      const agent = h('span', { class: 'run-agent' });
      const status = h('span', { class: 'run-status' });
      const error = h('span', { class: 'run-error error' });
      const versions = h('span', { class: 'run-versions' });
      const actions = h('span', { class: 'run-actions' });
      const feedback = h('span', { class: 'run-feedback' });
      const link = h('a', { class: 'timeline-link' });
      const note = h('div', { class: 'feedback-note' });
      link.hidden = true;
      this.foot = h('div', { class: 'run-foot' }, agent, status, error, versions, actions, feedback, link, note);
      Object.assign(this.foot, { agent, status, error, versions, actions, feedback, link, note });
      this.el.append(this.foot);
    }
    return this.foot;
  }

  /** end marks the run finished (status "" when drawn from history with no known end). */
  end(status, error) {
    this.status = status || this.status;
    for (const s of this.segments.values()) {
      s.el.classList?.remove('streaming');
      s.md?.flush();
    }
    const f = this.footer();
    if (error?.code === 'run_interrupted') this.interrupted = true;
    if (this.interrupted) {
      // Stopped by a newer input: what it had said stays, marked.
      this.el.classList.add('interrupted');
      f.status.className = 'run-status cancelled interrupted';
      f.status.textContent = t('run.interrupted');
      f.status.title = t('run.interruptedNote');
    } else if (status) {
      f.status.className = `run-status ${status}`;
      f.status.textContent = status === 'failed' ? t('run.failed') : status === 'cancelled' ? t('run.stopped') : '';
    }
    if (error?.message) this.error = error.message;
    f.error.textContent = status === 'succeeded' || this.interrupted ? '' : this.error;
    const partial = [...this.segments.values()].some((s) => s.md && s.el.classList.contains('partial'));
    f.actions.replaceChildren();
    if (partial && status !== 'cancelled') f.actions.append(h('span', { class: 'muted' }, t('run.partial')));
    if (this.text()) f.actions.append(copyButton(() => this.text(), 'answer.copy'));
    if (this.runId && this.opt.onRegenerate) {
      const failed = this.status === 'failed';
      f.actions.append(h('button', { type: 'button', class: `ghost small regenerate${failed ? ' retry' : ''}`,
        onclick: () => this.opt.onRegenerate(this.runId, failed) }, failed ? t('run.retry') : t('run.regenerate')));
    }
    if (this.runId && this.opt.timelineHref) {
      f.link.href = this.opt.timelineHref(this.runId);
      f.link.textContent = t('run.timeline');
      f.link.hidden = false;
    }
    this.drawVersions();
    this.drawFeedback();
  }

  drawVersions() {
    const v = this.versions;
    this.foot.versions.replaceChildren(v && this.opt.onPage ? versionPager(v.ids, v.current, this.opt.onPage) : '');
  }

  /** answerId is the id of the run's last answer message ('' before one). */
  answerId() {
    const keys = [...this.segments.keys()].filter((k) => k.startsWith('t:'));
    return keys.length ? keys.at(-1).slice(2) : '';
  }

  // drawFeedback draws thumbs up and down on a finished answer: pressing
  // one rates it (pressing it again withdraws the rating) and offers a
  // comment; a given comment is shown under the answer.
  drawFeedback(editing = false) {
    const f = this.foot;
    const id = this.answerId();
    f.feedback.replaceChildren();
    f.note.replaceChildren();
    if (!this.opt.onFeedback || !id || !['succeeded', 'cancelled', 'failed'].includes(this.status)) return;
    const r = this.rating?.messageId === id ? this.rating : null;
    const save = async (next) => {
      try {
        const got = await this.opt.onFeedback(id, next);
        this.rating = got ? { messageId: id, rating: got.rating, comment: got.comment ?? '' } : null;
        this.drawFeedback(Boolean(got) && next?.comment === undefined);
      } catch (e) {
        f.note.replaceChildren(h('p', { class: 'error', role: 'alert' }, e.message));
      }
    };
    for (const rating of ['up', 'down']) {
      const on = r?.rating === rating;
      f.feedback.append(h('button', { type: 'button', class: `ghost small icon thumb ${rating}`, 'aria-pressed': String(on),
        'aria-label': t(`feedback.${rating}`), title: t(`feedback.${rating}`),
        onclick: () => save(on ? null : { rating }) }));
    }
    if (r && editing) {
      const inputId = `comment-${id}`;
      const input = h('input', { type: 'text', id: inputId, maxlength: 2000, autocomplete: 'off', placeholder: t('feedback.commentHint'), value: r.comment });
      const form = h('form', { class: 'feedback-form', onsubmit: (e) => {
        e.preventDefault();
        save({ rating: r.rating, comment: input.value.trim() });
      } },
      h('label', { for: inputId }, t('feedback.comment')), input,
      h('button', { type: 'submit', class: 'small primary' }, t('feedback.save')),
      h('button', { type: 'button', class: 'small ghost', onclick: () => this.drawFeedback() }, t('feedback.close')));
      input.addEventListener('keydown', (e) => {
        if (e.key === 'Escape') {
          e.stopPropagation();
          this.drawFeedback();
        }
      });
      f.note.append(form);
      input.focus();
    } else if (r?.comment) {
      f.note.append(h('p', { class: 'feedback-comment muted' }, t('feedback.yours', { comment: r.comment })));
    }
  }

  /** text is the Markdown of the answer so far (all answer segments). */
  text() {
    return [...this.segments.entries()].filter(([k]) => k.startsWith('t:')).map(([, s]) => s.raw).join('\n\n');
  }
}

/**
 * versionPager is "< 2 / 3 >" between the versions of a message (its
 * siblings in the conversation's tree, oldest first): onPage gets the id of
 * the version to show.
 */
export function versionPager(ids, current, onPage) {
  const i = Math.max(0, ids.indexOf(current));
  const step = (d, cls, label, glyph) => {
    const edge = i + d < 0 || i + d >= ids.length;
    return h('button', { type: 'button', class: `ghost small icon ${cls}`, 'aria-label': t(label), title: t(label),
      disabled: edge, 'data-edge': String(edge), onclick: () => onPage(ids[i + d], d < 0) }, h('span', { 'aria-hidden': 'true' }, glyph));
  };
  return h('span', { class: 'versions', role: 'group', 'aria-label': t('versions.position', { n: i + 1, total: ids.length }), 'data-message-id': current },
    step(-1, 'prev', 'versions.prev', '‹'),
    h('span', { class: 'versions-at' }, `${i + 1} / ${ids.length}`),
    step(1, 'next', 'versions.next', '›'));
}

// formatArgs shows a tool's arguments for people: an object as its keys and
// values (text as text, anything else as JSON), anything else as JSON.
function formatArgs(v) {
  if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length) {
    return h('dl', { class: 'args' }, Object.entries(v).map(([k, x]) => [
      h('dt', {}, k),
      h('dd', {}, typeof x === 'string' ? x : h('code', {}, JSON.stringify(x, null, 2))),
    ]));
  }
  return h('pre', {}, pretty(v) || '{}');
}

/**
 * framesFromMessages turns one run's stored messages (assistant and tool,
 * oldest first) into the native frames a RunView draws, so a run drawn from
 * history is the run that was drawn live: the turn's retrieval and each
 * model call's reasoning (kept on the assistant messages), the tool calls
 * with their arguments, results and errors verbatim, and the answers.
 */
export function framesFromMessages(runId, messages) {
  const frames = [{ event: 'agent.start', data: { runId } }];
  for (const m of messages) {
    const meta = m.metadata ?? {};
    if (m.role === 'assistant') {
      if (meta.retrieval) frames.push({ event: 'retrieval', data: meta.retrieval });
      if (meta.reasoning) frames.push({ event: 'agent.reasoning', data: { messageId: m.id, delta: meta.reasoning } });
      // Text streams before the calls of the same model call; an answer
      // (no calls) is announced even when empty, as it was live.
      if (m.content || !meta.toolCalls?.length) {
        frames.push({ event: 'agent.message', data: { messageId: m.id, role: 'assistant', content: m.content, partial: meta.partial, interrupted: meta.interrupted } });
      }
      for (const call of meta.toolCalls ?? []) {
        frames.push({ event: 'tool.state', data: { toolCallId: call.id, name: call.name, status: 'pending', input: call.arguments } });
      }
    } else if (m.role === 'tool') {
      const ok = meta.status === 'success' || meta.status === 'partial';
      frames.push({ event: 'tool.state', data: {
        toolCallId: meta.tool_call_id, name: meta.tool_name, input: meta.tool_call_args,
        status: ok ? 'succeeded' : 'failed', content: m.content, output: meta.tool_agent_output,
        error: ok ? undefined : meta.error || meta.result || m.content, denied: meta.denied, confirmed: Boolean(meta.confirmation_id),
      } });
    }
  }
  return frames;
}
