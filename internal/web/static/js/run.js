// RunView draws one run from its native events (the live stream, a replayed
// stream, a timeline, or frames made from stored messages). It updates the
// DOM in place, one segment per reasoning block, retrieval, tool call and
// answer, in the order they first appear, so typing in a tool card (a reason,
// edited arguments) is never wiped by the next token.

import { h, pretty, clip } from './dom.js';

const STATUS_TEXT = {
  pending: 'pending',
  running: 'running',
  awaiting_input: 'waiting for you',
  succeeded: 'succeeded',
  failed: 'failed',
};

export class RunView {
  /**
   * @param {{interactive?: boolean, onDecide?: (c: {confirmationId: string, decision: string,
   *   args?: object, reason?: string}) => Promise<void>, timelineHref?: (runId: string) => string}} opt
   */
  constructor(opt = {}) {
    this.opt = opt;
    this.el = h('div', { class: 'run' });
    this.segments = new Map();
    this.runId = '';
    this.status = '';
    this.foot = null;
    this.retrievals = 0;
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
        this.status = 'running';
        break;
      case 'agent.reasoning': {
        const s = this.segment(`r:${data.messageId}`, () => {
          const text = h('p');
          const el = h('details', { class: 'reasoning' }, h('summary', {}, 'Reasoning'), text);
          return { el, text };
        });
        s.text.append(data.delta);
        break;
      }
      case 'agent.delta': {
        this.answer(data.messageId).el.append(data.delta);
        break;
      }
      case 'agent.message': {
        if (data.role && data.role !== 'assistant') break;
        const s = this.answer(data.messageId);
        s.el.textContent = data.content;
        s.el.classList.toggle('partial', Boolean(data.partial));
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
        this.footer().error.textContent = data.message || data.code || 'error';
        break;
      case 'agent.end':
        this.end(data.status, data.error);
        break;
      default:
        break;
    }
  }

  answer(messageId) {
    return this.segment(`t:${messageId}`, () => ({ el: h('div', { class: 'msg answer streaming', 'data-message-id': messageId }) }));
  }

  retrieval(data) {
    const n = this.retrievals++;
    this.segment(`ret:${n}`, () => ({
      el: h('section', { class: 'retrieval', 'aria-label': 'Retrieved' },
        h('h3', {}, `Retrieved ${data.hits?.length ?? 0} for “${clip(data.query, 60)}”`),
        (data.hits ?? []).map((hit) => h('div', { class: 'hit' },
          h('div', {}, hit.content),
          h('div', { class: 'muted' }, `${hit.source ?? ''}${hit.score !== undefined ? ` · score ${Number(hit.score).toFixed(2)}` : ''}`)))),
    }));
  }

  tool(data) {
    const s = this.segment(`tool:${data.toolCallId}`, () => {
      const badge = h('span', { class: 'badge' });
      const input = h('pre', { class: 'tool-input' });
      const result = h('div', { class: 'tool-result' });
      const el = h('section', { class: 'tool', 'data-tool-call-id': data.toolCallId, 'aria-label': `Tool ${data.name}` },
        h('div', { class: 'tool-head' }, h('h3', {}, data.name), badge),
        h('details', { class: 'tool-args' }, h('summary', {}, 'Arguments'), input),
        result);
      return { el, badge, input, result, actions: null, status: '' };
    });
    if (s.status === data.status && data.status === 'awaiting_input') return; // tool.awaiting_input repeats tool.state
    s.status = data.status;
    s.el.dataset.status = data.status;
    s.badge.className = `badge ${data.status}`;
    s.badge.textContent = STATUS_TEXT[data.status] ?? data.status;
    if (data.input !== undefined) s.input.textContent = pretty(data.input);
    s.result.replaceChildren();
    if (data.status === 'succeeded') {
      s.result.append(h('pre', { class: 'tool-output' }, data.content || pretty(data.output)));
    } else if (data.status === 'failed') {
      s.result.append(h('p', { class: 'error' }, data.denied ? `Rejected${data.error ? `: ${data.error}` : ''}` : data.error || data.content || 'failed'));
    }
    if (data.status === 'awaiting_input' && this.opt.interactive && data.confirmationId) {
      if (!s.actions) {
        s.actions = this.actions(data);
        s.el.append(s.actions);
      }
    } else if (s.actions) {
      s.actions.remove();
      s.actions = null;
    }
  }

  actions(data) {
    const name = data.name;
    const reason = h('input', { type: 'text', maxlength: 2000, autocomplete: 'off' });
    const reasonId = `reason-${data.confirmationId}`;
    reason.id = reasonId;
    const args = h('textarea', { 'aria-label': `Arguments for ${name}`, spellcheck: 'false' });
    args.value = pretty(data.input ?? {});
    const editor = h('div', { class: 'row' }, args);
    editor.hidden = true;
    const problem = h('p', { class: 'error', role: 'alert' });
    const buttons = [];
    const decide = async (decision, withArgs) => {
      problem.textContent = '';
      const c = { confirmationId: data.confirmationId, decision };
      if (decision === 'reject' && reason.value.trim()) c.reason = reason.value.trim();
      if (withArgs) {
        try {
          c.args = JSON.parse(args.value);
        } catch {
          problem.textContent = 'The arguments are not valid JSON.';
          args.focus();
          return;
        }
        if (!c.args || typeof c.args !== 'object' || Array.isArray(c.args)) {
          problem.textContent = 'The arguments must be a JSON object.';
          return;
        }
      }
      buttons.forEach((b) => (b.disabled = true));
      try {
        await this.opt.onDecide(c);
        problem.textContent = '';
        wait.textContent = decision === 'approve' ? 'Approved; the run continues…' : 'Rejected; the run continues…';
      } catch (e) {
        problem.textContent = e.message;
        buttons.forEach((b) => (b.disabled = false));
      }
    };
    const wait = h('p', { class: 'muted', role: 'status' });
    const approve = h('button', { type: 'button', class: 'primary', onclick: () => decide('approve', !editor.hidden) }, 'Approve');
    const edit = h('button', { type: 'button', 'aria-expanded': 'false', onclick: () => {
      editor.hidden = !editor.hidden;
      edit.setAttribute('aria-expanded', String(!editor.hidden));
      approve.textContent = editor.hidden ? 'Approve' : 'Approve with these arguments';
      if (!editor.hidden) args.focus();
    } }, 'Edit arguments');
    const reject = h('button', { type: 'button', class: 'danger', onclick: () => decide('reject', false) }, 'Reject');
    buttons.push(approve, edit, reject);
    return h('div', { class: 'tool-actions' },
      h('p', {}, data.message || `Allow ${name} to run with these arguments?`),
      h('div', { class: 'row' }, approve, edit),
      editor,
      h('div', { class: 'row' }, h('label', { for: reasonId }, 'Reason (optional)'), reason, reject),
      problem, wait);
  }

  footer() {
    if (!this.foot) {
      const status = h('span', { class: 'run-status' });
      const error = h('span', { class: 'error' });
      const link = h('a', {});
      link.hidden = true;
      this.foot = h('div', { class: 'run-foot' }, status, error, link);
      this.foot.status = status;
      this.foot.error = error;
      this.foot.link = link;
      this.el.append(this.foot);
    }
    return this.foot;
  }

  /** end marks the run finished (or, from stored messages, just links its timeline). */
  end(status, error) {
    this.status = status || this.status;
    for (const s of this.segments.values()) s.el.classList?.remove('streaming');
    const f = this.footer();
    if (status) {
      f.status.className = `run-status ${status}`;
      f.status.textContent = status === 'succeeded' ? '' : status === 'cancelled' ? 'Stopped' : status;
    }
    if (error?.message) f.error.textContent = error.message;
    if (this.runId && this.opt.timelineHref) {
      f.link.href = this.opt.timelineHref(this.runId);
      f.link.textContent = 'Timeline';
      f.link.hidden = false;
    }
  }

  /** text is the answer text drawn so far (all answer segments). */
  text() {
    return [...this.segments.entries()].filter(([k]) => k.startsWith('t:')).map(([, s]) => s.el.textContent).join('\n');
  }
}

/**
 * framesFromMessages turns one run's stored messages (assistant and tool,
 * oldest first) into the native frames a RunView draws, so history and live
 * runs look the same.
 */
export function framesFromMessages(runId, messages) {
  const frames = [{ event: 'agent.start', data: { runId } }];
  for (const m of messages) {
    const meta = m.metadata ?? {};
    if (m.role === 'assistant') {
      for (const call of meta.toolCalls ?? []) {
        frames.push({ event: 'tool.state', data: { toolCallId: call.id, name: call.name, status: 'pending', input: call.arguments } });
      }
      if (m.content) frames.push({ event: 'agent.message', data: { messageId: m.id, role: 'assistant', content: m.content } });
    } else if (m.role === 'tool') {
      const ok = meta.status === 'success' || meta.status === 'partial';
      frames.push({ event: 'tool.state', data: {
        toolCallId: meta.tool_call_id, name: meta.tool_name, input: meta.tool_call_args,
        status: ok ? 'succeeded' : 'failed', content: m.content, output: meta.tool_agent_output,
        error: ok ? undefined : meta.result || m.content,
      } });
    }
  }
  return frames;
}
