// A page on another origin using @ag-ui/client's HttpAgent against
// agentchat's single endpoint: a chat whose tool waits for approval (the run
// ends with an interrupt), then the approval sent back as `resume`.
// The test gives it window.AGENTCHAT = {url, token, threadId} before it loads.
import { HttpAgent } from '@ag-ui/client';

const cfg = window.AGENTCHAT;
const $ = (id) => document.getElementById(id);
const agent = new HttpAgent({
  url: `${cfg.url}/api/v1/agent/runs`,
  headers: { Authorization: `Bearer ${cfg.token}` },
  threadId: cfg.threadId,
});

function log(text) {
  const li = document.createElement('li');
  li.textContent = text;
  $('events').append(li);
}

async function run(params) {
  $('status').textContent = 'running';
  try {
    await agent.runAgent(params, { onEvent: ({ event }) => log(event.type) });
  } catch (e) {
    $('status').textContent = `error: ${e.message}`;
    return;
  }
  const interrupt = agent.pendingInterrupts?.[0];
  const answer = agent.messages.filter((m) => m.role === 'assistant' && m.content).at(-1)?.content ?? '';
  $('answer').textContent = answer;
  $('approve').hidden = !interrupt;
  $('approve').dataset.interruptId = interrupt?.id ?? '';
  $('status').textContent = interrupt ? 'interrupted' : 'done';
}

$('form').addEventListener('submit', (e) => {
  e.preventDefault();
  agent.addMessage({ id: crypto.randomUUID(), role: 'user', content: $('input').value });
  run({ runId: crypto.randomUUID() });
});
$('approve').addEventListener('click', () => {
  const interruptId = $('approve').dataset.interruptId;
  $('approve').hidden = true;
  run({ runId: crypto.randomUUID(), resume: [{ interruptId, status: 'resolved', payload: { approved: true } }] });
});
