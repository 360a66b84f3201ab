// A real CopilotKit app against agentchat, in Debian's chromium: the
// CopilotKit runtime (@copilotkit/runtime, Node) with an AG-UI HttpAgent
// pointed at agentchat's POST /api/v1/agent/runs, forwarding the person's
// bearer token, and a React page with CopilotChat built by Vite
// (copilotkit/: its own package.json and lock, installed by `npm ci` there;
// nothing is downloaded at test time). On the embedded default (SQLite,
// the offline scripted model):
//   - a chat streams;
//   - a server tool call renders (useRenderTool) with its result;
//   - a confirmation shows through useInterrupt, and approving it runs the
//     tool exactly once;
//   - the agent calls a frontend tool (useFrontendTool), and its result
//     continues the run;
//   - shared state the page sets (useAgent, agent.setState) reaches the
//     agent, and the agent's update_state comes back to the page.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAgentchat, launch, guard, shot, json, WAIT } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const TOKEN = 'browser-copilotkit-token';

let server; // agentchat
let app; // the CopilotKit runtime and page
let chromium;
// What the runtime's @ag-ui/client 0.0.59 (in this process) warns or
// complains about: it must be nothing.
const complaints = [];
const originals = { warn: console.warn, error: console.error };

before(async () => {
  if (!existsSync(join(here, 'copilotkit', 'node_modules'))) {
    throw new Error('the CopilotKit app is not installed: cd test/browser/copilotkit && npm ci');
  }
  // The runtime's own telemetry stays off: nothing leaves the machine.
  process.env.COPILOTKIT_TELEMETRY_DISABLED = 'true';
  process.env.DO_NOT_TRACK = '1';
  const { buildPage, startApp } = await import('./copilotkit/server.mjs');
  // .ci/run builds the page beside the Go tests (the build is a minute of
  // CPU that would otherwise be the browser suite's longest wait) and says
  // so; anywhere else the test builds it from the sources it sees.
  if (process.env.AGENTCHAT_COPILOTKIT_BUILT !== '1') await buildPage();
  else if (!existsSync(join(here, 'copilotkit', 'dist', 'index.html'))) {
    throw new Error('AGENTCHAT_COPILOTKIT_BUILT=1 but copilotkit/dist/ has no page');
  }
  console.warn = (...a) => complaints.push(['warn', ...a].join(' '));
  console.error = (...a) => complaints.push(['error', ...a].join(' '));
  server = await startAgentchat({
    AGENTCHAT_TOKENS: `${TOKEN}:acme:ann`,
    AGENTCHAT_TOOL_CONFIRM: 'get_current_time=always',
    AGENTCHAT_SCRIPTED_TOKEN_DELAY: '20ms',
  });
  app = await startApp({ agentchat: server.url });
  chromium = await launch();
});

after(async () => {
  Object.assign(console, originals);
  await chromium?.close();
  await app?.close();
  await server?.stop();
});

async function openApp() {
  const page = await chromium.browser.newPage({ viewport: { width: 1280, height: 900 } });
  const g = guard(page, [app.url]);
  await page.goto(`${app.url}/?token=${TOKEN}`);
  return { page, g };
}

async function send(page, text) {
  const input = page.locator('textarea').first();
  await input.waitFor({ timeout: WAIT });
  await input.fill(text);
  await input.press('Enter');
}

test('CopilotKit: chat, a tool call, a confirmation through useInterrupt, a frontend tool, shared state', async () => {
  const { page, g } = await openApp();
  try {
    // A chat streams: the offline model quotes the message back, word by
    // word (20ms apart). The page records every text of the answer it shows
    // before the whole one: an answer that arrived whole would leave none.
    await page.evaluate(() => {
      window.partial = new Set();
      new MutationObserver(() => {
        const text = document.body.innerText;
        const at = text.indexOf('offline demo model');
        if (at >= 0 && !text.includes('to use a real model.')) window.partial.add(text.slice(at));
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await send(page, 'Hello from CopilotKit');
    await page.getByText(/to use a real model\./).first().waitFor({ timeout: WAIT });
    assert.ok(await page.getByText(/Hello from CopilotKit/).count() >= 2, 'the question and the answer quoting it');
    const parts = await page.evaluate(() => window.partial.size);
    assert.ok(parts >= 1, 'the answer was never shown in part before the whole');

    // A server tool call renders, with its result, and the answer follows.
    // (No "*" in the sum: the chat renders Markdown, and a lone asterisk
    // would start emphasis.)
    await send(page, 'calculate 17+25');
    const calc = page.locator('[data-testid="tool-call"][data-tool="calculator"]');
    await calc.first().waitFor({ timeout: WAIT });
    await page.getByText('The result is 17+25 = 42.').first().waitFor({ timeout: WAIT });
    assert.equal(await calc.first().getAttribute('data-status'), 'complete');
    assert.equal(await calc.first().getByTestId('tool-result').textContent(), '17+25 = 42');

    // A confirmation: useInterrupt shows it; approving runs the tool once.
    await send(page, 'What time is it in Tokyo?');
    const card = page.getByTestId('approval');
    await card.waitFor({ timeout: WAIT });
    assert.equal(await page.getByTestId('approval-tool').textContent(), 'get_current_time');
    assert.match(await page.getByTestId('approval-args').textContent(), /Asia\/Tokyo/);
    const pending = await json(server.url, TOKEN, '/v1/agent/confirmations?status=pending');
    assert.equal(pending.confirmations.length, 1, JSON.stringify(pending));
    await shot(page, 'copilotkit-approval');
    await page.getByTestId('approve').click();
    await page.getByText(/current time in Asia\/Tokyo/i).first().waitFor({ timeout: WAIT });
    assert.equal(await card.count(), 0, 'the decided confirmation is gone');
    const decided = await json(server.url, TOKEN, '/v1/agent/confirmations');
    const c = decided.confirmations.find((x) => x.id === pending.confirmations[0].id);
    assert.equal(c.status, 'approved');
    const timeline = await json(server.url, TOKEN, `/v1/agent/runs/${c.runId}/timeline`);
    // The timeline shows each call's states (tool.state): it ran once, and
    // ended once.
    const states = (status) => timeline.events.filter((e) => e.event === 'tool.state' && e.payload.toolCallId === c.toolCallId && e.payload.status === status);
    assert.equal(states('running').length, 1, `the tool ran ${states('running').length} times`);
    assert.equal(states('succeeded').length, 1, JSON.stringify(timeline.events.map((e) => e.payload?.status ?? e.event)));

    // A frontend tool: the agent calls pick_colour, the page answers, the run goes on.
    await send(page, 'call pick_colour with "teal"');
    await page.getByText('colour: teal').waitFor({ timeout: WAIT });
    await page.getByText('The pick_colour tool returned: picked teal').first().waitFor({ timeout: WAIT });

    // Shared state: the page's state reaches the agent (the patch's "test"
    // fails unless the agent holds colour "red"), and the agent's change
    // comes back to the page.
    await page.getByTestId('share-state').click();
    await page.getByTestId('state').getByText('{"colour":"red","items":[]}').waitFor({ timeout: WAIT });
    await send(page, 'call update_state with “[{"op":"test","path":"/colour","value":"red"},{"op":"replace","path":"/colour","value":"teal"}]”');
    await page.getByTestId('state').getByText('{"colour":"teal","items":[]}').waitFor({ timeout: WAIT });
    const upd = page.locator('[data-testid="tool-call"][data-tool="update_state"]');
    await upd.first().getByTestId('tool-result').waitFor({ timeout: WAIT });
    assert.doesNotMatch(await upd.first().getByTestId('tool-result').textContent(), /^Error/);
    await page.getByText(/The update_state tool returned: The shared state is now: .*teal.*\}/).first().waitFor({ timeout: WAIT });
    await shot(page, 'copilotkit-chat');
    assert.deepEqual(g.problems, []);
    assert.deepEqual(complaints, [], 'the CopilotKit runtime logged warnings or errors');
  } finally {
    await page.close();
  }
});
