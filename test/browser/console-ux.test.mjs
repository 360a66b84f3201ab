// The console as a chat product (issue 26), in Debian's chromium against the
// real binary: Markdown answers (highlighted, sanitised, re-rendered per
// frame), charts, the approval card, what a reload shows, retry and
// regenerate (sibling answers in the server's tree, paged between), the
// conversation list, the phone drawer, dark mode, keyboard
// shortcuts, the timeline, English and Chinese, an accessibility scan and
// screenshots of each view, and a 500-message conversation. Every test fails
// on any browser console error, uncaught exception or request to another
// host (lib.mjs's guard).
//
// Waits are bounded and wait for what the page shows, never for time.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startAgentchat, fakeFeishu, fakeModel, launch, guard, shot, json, axe, chatAPI, WAIT, SHOTS,
  MARKDOWN_CODE, SLOW_BEFORE_GATE } from './lib.mjs';

let server; // the offline model
let fast; // the offline model without pacing: the 500-message conversation
let gated; // a fake OpenAI-compatible model: Markdown answers
let model;
let feishu;
let chromium;

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

before(async () => {
  feishu = await fakeFeishu();
  server = await startAgentchat({ AGENTCHAT_SCRIPTED_TOKEN_DELAY: '10ms', AGENTCHAT_FEISHU_WEBHOOK_URL: feishu.url, AGENTCHAT_PING_INTERVAL: '1s' });
  fast = await startAgentchat({ AGENTCHAT_SCRIPTED_TOKEN_DELAY: '1us', AGENTCHAT_RETRIEVAL: 'off' });
  model = await fakeModel();
  gated = await startAgentchat({ AGENTCHAT_LLM: 'openai', OPENAI_BASE_URL: `${model.url}/v1`, OPENAI_API_KEY: 'sk-fake',
    AGENTCHAT_MODEL: 'fake', AGENTCHAT_LLM_RETRIES: '-1', AGENTCHAT_PING_INTERVAL: '1s' });
  chromium = await launch();
});

after(async () => {
  await chromium?.close();
  await server?.stop();
  await fast?.stop();
  await gated?.stop();
  await model?.close();
  await feishu?.close();
});

/**
 * open starts a page (a viewport, a browser language, a colour scheme) and
 * signs in through the form; hash, when given, is opened after sign-in.
 */
async function open(t, { viewport = DESKTOP, locale = 'en-US', colorScheme = 'light', srv = server, hash = '', signIn = true } = {}) {
  const context = await chromium.browser.newContext({ viewport, locale, colorScheme });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(srv.url).origin });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  const g = guard(page, [new URL(srv.url).origin]);
  t.after(async () => {
    await context.close();
    assert.deepEqual(g.problems, [], 'the browser saw problems');
  });
  await page.goto(srv.consoleURL + hash);
  if (signIn) {
    await page.fill('#token', srv.token);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#app:not([hidden])');
  }
  return { page, context, g };
}

async function send(page, text) {
  await page.fill('#composer-input', text);
  await page.press('#composer-input', 'Enter');
}

const lastRun = (page) => page.locator('#messages > .run').last();

async function finished(page) {
  await lastRun(page).locator('.run-foot a:not([hidden])').waitFor();
  await page.locator('#stop').waitFor({ state: 'hidden' });
}

function convOf(page) {
  const id = /#\/c\/([^/]+)/.exec(page.url())?.[1];
  assert.ok(id, `a conversation is open: ${page.url()}`);
  return id;
}

// --- 1. rendered answers -------------------------------------------------------------

test('answers are Markdown: highlighted code with a copy button, sanitised, re-rendered per frame without redrawing finished blocks', async (t) => {
  const { page } = await open(t, { srv: gated });
  // Watch the answer as it streams: the first heading must stay the same
  // node to the end (finished blocks are not redrawn), and no animation
  // frame may see the answer redrawn twice.
  await page.evaluate(() => {
    window.renders = [];
    let frame = 0;
    const tick = () => {
      frame++;
      requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
    new MutationObserver((records) => {
      const a = [...document.querySelectorAll('#messages .answer')].at(-1);
      if (!a || !records.some((r) => a.contains(r.target))) return;
      window.renders.push(frame);
      // The heading is complete once two more blocks follow it.
      if (!window.firstHeading && a.children.length >= 3) window.firstHeading = a.firstElementChild;
    }).observe(document.getElementById('messages'), { childList: true, subtree: true, characterData: true });
  });
  await send(page, 'answer in markdown please');
  // The model sends each part once the page shows the one before.
  const answer = lastRun(page).locator('.answer');
  await answer.locator('input[type=checkbox]').nth(1).waitFor();
  model.step();
  await answer.locator('table tbody tr').nth(1).waitFor();
  model.step();
  await finished(page);
  assert.equal(await answer.locator('h1').textContent(), 'Release notes');
  assert.equal(await answer.locator('strong').textContent(), 'bold');
  assert.equal(await answer.locator('del').textContent(), 'struck');
  assert.equal(await answer.locator('table tbody tr').count(), 2, 'a GFM table');
  assert.equal(await answer.locator('input[type=checkbox][disabled]').count(), 2, 'a task list');
  const code = answer.locator('.code-block');
  assert.equal(await code.locator('.code-lang').textContent(), 'go');
  assert.equal(await code.locator('code').textContent(), MARKDOWN_CODE);
  assert.ok(await code.locator('code span[class^="hljs-"]').count() >= 2, 'the Go code is highlighted');

  // Nothing the model wrote runs or loads: raw HTML is text, the bad link
  // lost its href, the picture is a link, the good link opens safely.
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.equal(await answer.locator('script, img, iframe, [onerror], [style]').count(), 0);
  assert.match(await answer.textContent(), /<script>window.__xss = 1<\/script>/);
  assert.equal(await answer.locator('a[href^="javascript"]').count(), 0);
  const good = answer.getByRole('link', { name: 'a good one' });
  assert.equal(await good.getAttribute('href'), 'https://example.com/docs');
  assert.equal(await good.getAttribute('rel'), 'noopener noreferrer nofollow');
  assert.equal(await answer.getByRole('link', { name: 'a picture' }).getAttribute('href'), 'https://example.com/cat.png');

  // Streamed without flicker: the heading drawn first is the heading shown
  // now, and renders were batched per animation frame.
  assert.ok(await page.evaluate(() => window.firstHeading && window.firstHeading === document.querySelector('#messages .run:last-of-type .answer h1')),
    'the heading, once complete, was never redrawn');
  const renders = await page.evaluate(() => window.renders);
  const perFrame = new Map();
  for (const f of renders) perFrame.set(f, (perFrame.get(f) ?? 0) + 1);
  assert.ok(perFrame.size >= 3, `the answer grew over several frames: ${renders}`);
  // (The complete answer is drawn at once when it arrives, which may add one
  // redraw to the last frame.)
  assert.ok([...perFrame.values()].slice(0, -1).every((n) => n === 1), `one redraw per frame at most: ${[...perFrame]}`);

  // The code block's copy button copies the code; the answer's copies the Markdown.
  await code.getByRole('button', { name: 'Copy code' }).click();
  await code.getByRole('button', { name: 'Copied' }).waitFor();
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), MARKDOWN_CODE);
  await code.getByRole('button', { name: 'Copy code' }).waitFor();
  await lastRun(page).locator('.run-foot').getByRole('button', { name: 'Copy', exact: true }).click();
  assert.match(await page.evaluate(() => navigator.clipboard.readText()), /^# Release notes\n/);

  // The same after a reload, from the history.
  const before = await answer.evaluate((el) => el.innerHTML);
  await page.reload();
  await lastRun(page).locator('.answer h1').waitFor();
  assert.equal(await lastRun(page).locator('.answer').evaluate((el) => el.innerHTML), before, 'the history renders the same Markdown');
  await shot(page, 'markdown');
});

// --- 2. charts -----------------------------------------------------------------------------

test('make_chart is drawn from its chart_data (the chart request\'s numbers only), live and from the history', async (t) => {
  const { page } = await open(t);
  await send(page, 'what is 12*(3+4) and make a chart "Sales" of 3, 5, 9, 4');
  const chart = lastRun(page).locator('.tool .chart');
  await chart.locator('canvas').first().waitFor();
  await finished(page);
  const table = async () => chart.locator('.chart-table tbody tr').evaluateAll((rows) => rows.map((r) => [...r.cells].map((c) => c.textContent)));
  assert.deepEqual(await table(), [['1', '3'], ['2', '5'], ['3', '9'], ['4', '4']], 'four points: 3, 5, 9, 4');
  assert.ok(!(await lastRun(page).textContent()).includes('approved'), 'no approval note on tools that needed none');
  assert.equal(await chart.locator('.chart-title').textContent(), 'Sales');
  assert.equal(await chart.locator('.chart-plot').getAttribute('aria-label'), 'Chart “Sales” of 4 points');
  const box = await chart.locator('canvas').first().boundingBox();
  assert.ok(box.width > 200 && box.height > 100, `the canvas has a size: ${JSON.stringify(box)}`);
  const stored = (await json(server.url, server.token, `/v1/conversations/${convOf(page)}/messages`)).messages;
  const tool = stored.find((m) => m.metadata?.tool_name === 'make_chart');
  assert.deepEqual(tool.metadata.tool_agent_output.chart_data.datasets[0].data, [3, 5, 9, 4]);

  await page.reload();
  const again = lastRun(page).locator('.tool .chart');
  await again.locator('canvas').first().waitFor();
  assert.deepEqual(await again.locator('.chart-table tbody tr').evaluateAll((rows) => rows.map((r) => [...r.cells].map((c) => c.textContent))),
    [['1', '3'], ['2', '5'], ['3', '9'], ['4', '4']], 'the history draws the same chart');
});

// --- 3. the approval card -------------------------------------------------------------------

test('the approval card: tool, agent, why it waits, arguments visible, Approve and Reject side by side, inline editing; the pending list links to it', async (t) => {
  const { page } = await open(t);
  const sent = feishu.texts.length;
  await send(page, 'Send a Feishu message saying "as the model wrote it"');
  const card = lastRun(page).locator('.tool[data-status="awaiting_input"]');
  const approval = card.getByRole('group', { name: 'Approval needed' });
  await approval.waitFor();
  const facts = await approval.locator('.approval-facts').textContent();
  for (const want of ['Tool', 'Send a Feishu message', 'send_feishu_message', 'Agent', 'agentchat', 'Why it waits', 'ask a person before it runs', 'Expires']) {
    assert.ok(facts.includes(want), `the card says ${want}: ${facts}`);
  }
  // The arguments are shown, formatted, without unfolding anything.
  const args = card.locator('.tool-input');
  assert.ok(await args.isVisible(), 'the arguments are visible');
  assert.equal(await args.locator('dt').textContent(), 'text');
  assert.equal(await args.locator('dd').textContent(), 'as the model wrote it');
  // Approve and Reject side by side, in one row, with the reason above them.
  const approve = await approval.getByRole('button', { name: 'Approve' }).boundingBox();
  const reject = await approval.getByRole('button', { name: 'Reject' }).boundingBox();
  assert.ok(Math.abs(approve.y - reject.y) < 2 && reject.x > approve.x && reject.x - (approve.x + approve.width) < 40,
    `side by side: ${JSON.stringify({ approve, reject })}`);
  assert.ok(await approval.getByLabel('Reason (optional)').isVisible());

  // The sidebar's pending list links to this card.
  const item = page.locator('#pending .pending-item', { hasText: 'Send a Feishu message' });
  await item.waitFor();
  await page.goto(`${server.consoleURL}#/`);
  await page.locator('.welcome').waitFor();
  await item.getByRole('link').click();
  await page.waitForURL(/#\/c\/[^/]+\/confirm\/[^/]+$/);
  await page.locator('.tool[data-status="awaiting_input"] .approval').waitFor();
  await page.waitForFunction(() => document.activeElement?.closest('.tool')?.id.startsWith('confirm-'));
  assert.ok(await page.locator('.tool[data-status="awaiting_input"]').isVisible());

  // Inline editing: the arguments become an editor in place; the tool runs
  // once, with the edited arguments.
  await page.getByRole('button', { name: 'Edit arguments' }).click();
  const editor = page.getByRole('textbox', { name: 'Arguments for send_feishu_message' });
  assert.match(await editor.inputValue(), /as the model wrote it/);
  await editor.fill('{"text": "as a person edited it"}');
  await page.getByRole('button', { name: 'Approve with these arguments' }).click();
  await lastRun(page).locator('.tool[data-status="succeeded"]').waitFor();
  await finished(page);
  assert.deepEqual(feishu.texts.slice(sent), ['as a person edited it'], 'sent once, as edited');
  assert.match(await lastRun(page).locator('.tool .tool-input').textContent(), /as a person edited it/, 'the card shows what ran');
  assert.equal(await lastRun(page).locator('.tool .tool-note').textContent(), 'Ran after a person approved it.');
  await page.locator('#pending-section').waitFor({ state: 'hidden' });
});

// --- 4. what a reload shows ------------------------------------------------------------------

// outline is the thread's text and structure: each element's tag and
// classes (without the transient ones), uPlot's drawing left out (it is
// drawn when a chart scrolls into view).
async function outline(page) {
  return page.locator('#messages').evaluate((root) => {
    const out = [];
    const walk = (el, depth) => {
      if (el.classList.contains('chart-plot')) {
        out.push(`${depth} chart-plot`);
        return;
      }
      const cls = [...el.classList].filter((c) => !['flash', 'streaming'].includes(c)).sort().join('.');
      out.push(`${depth} ${el.tagName.toLowerCase()}${cls ? `.${cls}` : ''}${el.hidden ? ' hidden' : ''}`);
      for (const c of el.children) walk(c, depth + 1);
    };
    for (const c of root.children) walk(c, 0);
    return { text: root.textContent, tree: out };
  });
}

async function reloadAndCompare(page, what, ready) {
  const live = await outline(page);
  await page.reload();
  await page.waitForFunction((n) => document.querySelectorAll('#messages > .run, #messages > details').length >= n,
    live.tree.filter((l) => /^0 (article|details)/.test(l)).length);
  await ready();
  const reloaded = await outline(page);
  assert.equal(reloaded.text, live.text, `${what}: the thread reads the same after a reload`);
  assert.deepEqual(reloaded.tree, live.tree, `${what}: the thread is built the same after a reload`);
}

test('what was shown live is what a reload shows: reasoning, retrieval, tool errors, charts, approvals, failures, retry and regenerate', async (t) => {
  await json(server.url, server.token, '/v1/knowledge/documents', { method: 'POST',
    body: JSON.stringify({ source: 'returns.md', text: '# Returns\n\nGoods may be returned within seven days of delivery.' }) });
  const { page } = await open(t);
  await send(page, 'think about returns within seven days');
  await finished(page);
  assert.equal(await lastRun(page).locator('.retrieval').count(), 1, 'a retrieval card');
  assert.equal(await lastRun(page).locator('.reasoning').count(), 1, 'a reasoning block');
  await send(page, 'what is 12*(3+4) and make a chart "Sales" of 3, 5, 9, 4');
  await finished(page);
  await send(page, 'fetch http://127.0.0.1:1/private');
  await finished(page);
  const toolError = await lastRun(page).locator('.tool.failed .tool-error').textContent();
  assert.match(toolError, /refused: destination 127\.0\.0\.1 is not allowed/, 'the tool error, verbatim');

  // A waiting approval looks the same after a reload, then is rejected.
  await send(page, 'Send a Feishu message saying "reject me"');
  await lastRun(page).locator('.approval').waitFor();
  await reloadAndCompare(page, 'waiting for approval', () => lastRun(page).locator('.approval').waitFor());
  await lastRun(page).getByLabel('Reason (optional)').fill('not today');
  await lastRun(page).getByRole('button', { name: 'Reject' }).click();
  await finished(page);
  assert.match(await lastRun(page).locator('.tool.denied').textContent(), /Their reason: not today/);
  await send(page, 'Send a Feishu message saying "approve me"');
  await lastRun(page).locator('.approval').waitFor();
  await lastRun(page).getByRole('button', { name: 'Approve' }).click();
  await finished(page);

  // A failed run offers Retry, which answers the same question again (the
  // server's regenerate): the question stays, once.
  await send(page, 'fail please');
  await finished(page);
  assert.equal(await lastRun(page).locator('.run-status').textContent(), 'Failed');
  const err = await lastRun(page).locator('.run-error').textContent();
  assert.ok(err.length > 0, 'the failure says why');
  const failedRun = await lastRun(page).getAttribute('data-run-id');
  await lastRun(page).getByRole('button', { name: 'Retry' }).click();
  await finished(page);
  // The retry fails again and stores nothing, so the branch still ends at
  // the question; the thread, live and drawn again when the run ends,
  // shows the retry's run, not the one it replaced.
  const retried = await lastRun(page).getAttribute('data-run-id');
  assert.ok(retried && retried !== failedRun, `the retry's run is shown: ${retried}, failed ${failedRun}`);
  assert.equal(await page.locator('#messages > .msg.user', { hasText: 'fail please' }).count(), 1, 'the failed question once');
  // A good answer offers Regenerate, on the newest answer only; the new
  // answer is a sibling of the old one, and "< 1 / 2 >" pages between them.
  await send(page, 'Hello again');
  await finished(page);
  const first = await lastRun(page).locator('.answer').textContent();
  assert.equal(await page.locator('#messages .regenerate:not([hidden])').count(), 1, 'only the newest answer can be regenerated');
  await lastRun(page).getByRole('button', { name: 'Regenerate' }).click();
  await lastRun(page).locator('.run-foot .versions-at', { hasText: '2 / 2' }).waitFor();
  await finished(page);
  assert.equal(await lastRun(page).locator('.answer').textContent(), first, 'the offline model answers the same again');
  assert.equal(await page.locator('#messages > .msg.user', { hasText: 'Hello again' }).count(), 1, 'the question once');
  const conv = convOf(page);
  const messages = async (all) => (await json(server.url, server.token, `/v1/conversations/${conv}/messages?limit=100${all ? '&branch=all' : ''}`)).messages;
  const all = await messages(true);
  const question = all.filter((m) => m.role === 'user' && m.content === 'Hello again');
  assert.equal(question.length, 1, 'regenerate stored no second question');
  const answers = all.filter((m) => m.role === 'assistant' && m.parentId === question[0].id);
  assert.equal(answers.length, 2, 'two sibling answers under the question');
  assert.ok(all.every((m) => !m.metadata?.regenerates), 'retry and regenerate used the tree, not a repeated question');
  assert.deepEqual((await messages(false)).at(-1).siblingIds, answers.map((m) => m.id));
  await lastRun(page).getByRole('button', { name: 'Previous version' }).click();
  await lastRun(page).locator('.versions-at', { hasText: '1 / 2' }).waitFor();
  assert.equal((await messages(false)).at(-1).id, answers[0].id, 'paging moved the server\'s active branch');
  await lastRun(page).getByRole('button', { name: 'Next version' }).click();
  await lastRun(page).locator('.versions-at', { hasText: '2 / 2' }).waitFor();

  await reloadAndCompare(page, 'the whole conversation', () => finished(page));
  await shot(page, 'reload-fidelity');
  // The document would be found by later tests' questions: remove it.
  const docs = await json(server.url, server.token, '/v1/knowledge/documents');
  for (const d of docs.documents) await fetch(`${server.url}/v1/knowledge/documents/${d.id}`, { method: 'DELETE', headers: { Authorization: `Bearer ${server.token}` } });
});

// --- 5. layout ------------------------------------------------------------------------------

test('the conversation list: full titles, search by title, grouped by day, a ⋯ menu by keyboard', async (t) => {
  const long = 'Quarterly planning: revenue forecast, hiring plan and the office move to Shenzhen';
  // Pages come newest first: "Filler 0" is on a page not loaded at first.
  for (let i = 0; i < 25; i++) {
    await json(server.url, server.token, '/v1/conversations', { method: 'POST', body: JSON.stringify({ title: `Filler ${i}` }) });
  }
  for (const title of ['Hello! What time is it in Tokyo?', 'Hello! What is the weather like?', 'Hello! What should I cook?', long]) {
    await json(server.url, server.token, '/v1/conversations', { method: 'POST', body: JSON.stringify({ title }) });
  }
  const { page } = await open(t);
  await page.locator('#conversations .conv').first().waitFor();
  // Full titles: three chats that start alike are told apart, the long one is whole.
  for (const title of ['Hello! What time is it in Tokyo?', 'Hello! What is the weather like?', long]) {
    const link = page.getByRole('link', { name: title, exact: true });
    assert.equal(await link.textContent(), title);
    assert.ok(await link.evaluate((el) => el.scrollWidth <= el.clientWidth && el.scrollHeight <= el.clientHeight + 1), `"${title}" is not cut`);
  }
  // Grouped by day.
  assert.equal(await page.locator('.conv-day').first().textContent(), 'Today');
  // Search by title, including chats not loaded yet.
  assert.equal(await page.getByRole('link', { name: 'Filler 0', exact: true }).count(), 0, 'Filler 0 is not loaded yet');
  await page.getByRole('searchbox', { name: 'Search chats by title' }).fill('cook');
  await page.waitForFunction(() => document.querySelectorAll('#conversations .conv').length === 1);
  assert.equal(await page.locator('#conversations .conv .open').textContent(), 'Hello! What should I cook?');
  await page.getByRole('searchbox').fill('Filler 0');
  await page.getByRole('link', { name: 'Filler 0', exact: true }).waitFor();
  assert.deepEqual(await page.locator('#conversations .conv .open').allTextContents(), ['Filler 0']);
  await page.getByRole('searchbox').fill('no such chat at all');
  await page.locator('#no-results:not([hidden])').waitFor();
  await page.getByRole('searchbox').press('Escape');
  await page.waitForFunction(() => document.querySelectorAll('#conversations .conv').length > 1);

  // The ⋯ menu by keyboard: open, arrow to Delete, Escape closes back to the button.
  const more = page.getByRole('button', { name: 'Actions for Hello! What should I cook?' });
  await more.focus();
  await page.keyboard.press('Enter');
  await page.getByRole('menuitem', { name: 'Rename' }).waitFor();
  assert.equal(await more.getAttribute('aria-expanded'), 'true');
  await page.keyboard.press('ArrowDown');
  assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Delete');
  await page.keyboard.press('Escape');
  await page.getByRole('menu').waitFor({ state: 'hidden' });
  assert.ok(await more.evaluate((el) => el === document.activeElement), 'focus returns to ⋯');
  await page.keyboard.press('Enter');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  const dialog = page.getByRole('dialog', { name: 'Delete this chat?' });
  await dialog.waitFor();
  assert.match(await dialog.textContent(), /Hello! What should I cook\?/);
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  assert.equal(await page.getByRole('link', { name: 'Hello! What should I cook?' }).count(), 1, 'Cancel deletes nothing');
  await shot(page, 'conversation-list');
});

test('on a phone the list is a slide-over drawer over the chat', async (t) => {
  const { page } = await open(t, { viewport: PHONE });
  const sidebar = page.locator('#sidebar');
  const chatBefore = await page.locator('#chat').boundingBox();
  const closed = await sidebar.boundingBox();
  assert.ok(!closed || closed.x + closed.width <= 0 || !(await sidebar.isVisible()), `closed, the list is off screen: ${JSON.stringify(closed)}`);
  const toggle = page.getByRole('button', { name: 'Conversations' });
  await toggle.click();
  await page.locator('#sidebar.open').waitFor();
  await page.waitForFunction(() => document.getElementById('sidebar').getBoundingClientRect().x === 0);
  const drawer = await sidebar.boundingBox();
  assert.ok(drawer.width < PHONE.width && drawer.height >= PHONE.height - 1, `a drawer over the page: ${JSON.stringify(drawer)}`);
  assert.deepEqual(await page.locator('#chat').boundingBox(), chatBefore, 'the chat is not pushed down');
  assert.ok(await page.locator('#chat').evaluate((el) => el.inert), 'the chat behind is inert');
  assert.ok(await page.locator('#new-chat').evaluate((el) => el === document.activeElement), 'focus moves into the drawer');
  assert.equal(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), 0);
  await shot(page, 'phone-drawer');
  await page.keyboard.press('Escape');
  await page.locator('#sidebar.open').waitFor({ state: 'detached' });
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
  // Tapping outside closes it too, and opening a chat from it does.
  await toggle.click();
  await page.locator('#scrim').click({ position: { x: PHONE.width - 20, y: 400 } });
  await page.locator('#sidebar.open').waitFor({ state: 'detached' });
});

test('dark mode follows the system', async (t) => {
  const luminance = (rgb) => {
    const [r, g, b] = rgb.match(/\d+/g).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
  };
  const { page: light } = await open(t, { colorScheme: 'light' });
  const { page: dark } = await open(t, { colorScheme: 'dark' });
  const bg = (p) => p.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const fg = (p) => p.evaluate(() => getComputedStyle(document.body).color);
  assert.ok(luminance(await bg(light)) > 0.8 && luminance(await fg(light)) < 0.3, 'light: dark text on a light page');
  assert.ok(luminance(await bg(dark)) < 0.2 && luminance(await fg(dark)) > 0.7, 'dark: light text on a dark page');
  await send(dark, 'what is 12*(3+4) and make a chart "Sales" of 3, 5, 9, 4');
  await finished(dark);
  assert.deepEqual(await axe(dark), [], 'no serious accessibility problems in dark mode');
  await shot(dark, 'dark-chat');
});

test('keyboard shortcuts: new chat, focus the message box, stop, listed in a help dialog', async (t) => {
  const { page } = await open(t, { srv: gated });
  await page.locator('body').press('?');
  const help = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
  await help.waitFor();
  const text = await help.textContent();
  for (const want of ['New chat', 'Focus the message box', 'Stop the answer being written', 'Search chats']) assert.ok(text.includes(want), `help lists ${want}`);
  await page.keyboard.press('Escape');
  await help.waitFor({ state: 'hidden' });

  await page.locator('#messages').focus();
  await page.keyboard.press('/');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'composer-input', '/ focuses the message box');
  await page.keyboard.type('a slow answer to stop');
  await page.keyboard.press('Enter');
  await model.whenGated();
  await page.locator('#messages .answer', { hasText: SLOW_BEFORE_GATE.trim() }).waitFor();
  await page.keyboard.press('Escape');
  await lastRun(page).locator('.run-status.cancelled').waitFor();
  model.release();
  const conv = convOf(page);
  await page.keyboard.press('Control+Shift+O');
  await page.waitForURL(/#\/$/);
  assert.equal(await page.evaluate(() => document.activeElement.id), 'composer-input', 'a new chat, ready to type');
  assert.notEqual(/#\/c\/([^/]+)/.exec(page.url())?.[1], conv);
  await page.locator('#messages').focus();
  await page.keyboard.press('Shift+Escape');
  assert.equal(await page.evaluate(() => document.activeElement.id), 'composer-input', 'Shift+Esc focuses the message box');
});

// --- 6. the timeline -----------------------------------------------------------------------

test('the timeline reads as steps: your message first, named steps, aligned durations, failures highlighted, a link back', async (t) => {
  const { page } = await open(t);
  await send(page, 'think, then tell me the time in Tokyo and fetch http://127.0.0.1:1/x');
  await finished(page);
  const runId = await lastRun(page).getAttribute('data-run-id');
  const link = lastRun(page).getByRole('link', { name: 'Timeline' });
  const style = await link.evaluate((el) => ({ deco: getComputedStyle(el).textDecorationLine, pad: getComputedStyle(el).paddingLeft }));
  assert.equal(style.deco, 'none', 'the Timeline link is styled, not a bare underline');
  assert.notEqual(style.pad, '0px');
  await link.click();
  await page.locator('#timeline:not([hidden]) .tl-row').first().waitFor();
  const first = page.locator('#timeline-events > li').first();
  assert.ok(await first.evaluate((el) => el.classList.contains('tl-user')), 'the user\'s message comes first');
  assert.match(await first.textContent(), /Your message.*think, then tell me the time in Tokyo/);
  const names = await page.locator('.tl-row .tl-name').allTextContents();
  assert.ok(!names.some((n) => /^(agent|tool)\.[a-z_.]+$/.test(n)), `steps are named, not event names: ${names}`);
  const failed = page.locator('.tl-row.failed');
  assert.equal(await failed.count(), 1, 'the failed tool stands out');
  assert.match(await failed.textContent(), /Fetch a web page: failed.*refused: destination 127\.0\.0\.1/);
  assert.notEqual(await failed.evaluate((el) => getComputedStyle(el).borderLeftColor), 'rgba(0, 0, 0, 0)', 'with a coloured edge');
  // Times and durations in aligned columns, each on one line.
  const cols = await page.locator('.tl-row').evaluateAll((rows) => rows.map((r) => {
    const at = r.querySelector('.tl-at').getBoundingClientRect();
    const dur = r.querySelector('.tl-dur').getBoundingClientRect();
    const line = parseFloat(getComputedStyle(r.querySelector('.tl-at')).lineHeight);
    return { atRight: Math.round(at.right), durRight: Math.round(dur.right), atLines: Math.round(at.height / line) };
  }));
  assert.equal(new Set(cols.map((c) => c.atRight)).size, 1, `times align: ${JSON.stringify(cols)}`);
  assert.equal(new Set(cols.map((c) => c.durRight)).size, 1, 'durations align');
  assert.ok(cols.every((c) => c.atLines <= 1), 'no time wraps');
  assert.ok((await page.locator('.tl-row .tl-dur').allTextContents()).some((d) => /^\d+(\.\d+)? (ms|s)$/.test(d)), 'durations shown');
  // Back to the run, in its conversation.
  const back = page.getByRole('link', { name: 'Back to the conversation' });
  assert.match(await back.getAttribute('href'), new RegExp(`/r/${runId}$`));
  await back.click();
  await page.locator(`#messages .run[data-run-id="${runId}"]`).waitFor();
  await page.waitForFunction((id) => document.activeElement?.dataset?.runId === id, runId);
});

// --- 7. two languages -------------------------------------------------------------------------

test('Chinese from the browser\'s language, a switch that is kept, CJK fonts', async (t) => {
  const { page } = await open(t, { locale: 'zh-CN' });
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'zh-CN');
  assert.equal(await page.locator('#new-chat').textContent(), '＋ 新对话');
  assert.equal(await page.locator('#composer-input').getAttribute('placeholder'), '给 agentchat 发消息');
  await send(page, '发飞书消息“部署完成”');
  const approval = lastRun(page).getByRole('group', { name: '需要你的批准' });
  await approval.waitFor();
  // Every piece of the console's own text is Chinese (the model's words and
  // tool names are data).
  const strings = await page.evaluate(() => {
    const out = [];
    for (const el of document.querySelectorAll('button, label, h2, h3, summary, dt, th, .badge, [placeholder], [aria-label]')) {
      if (el.closest('.answer, .msg.user, .tool-input, .hit, .conv, .pending-conv, .pending-args, #lang, .run-id') || !el.checkVisibility()) continue;
      for (const s of [el.getAttribute('aria-label'), el.getAttribute('placeholder'), el.children.length ? '' : el.textContent]) {
        if (s && /[A-Za-z]{3,}/.test(s) && !/[\u3400-\u9fff]/.test(s)) out.push(s);
      }
    }
    return out;
  });
  assert.deepEqual(strings.filter((s) => !['agentchat', 'send_feishu_message', 'text'].includes(s.trim())), [], 'no English left in the Chinese console');
  // The fonts: a CJK face in the stack, and the text drawn with one.
  const family = await page.evaluate(() => getComputedStyle(document.body).fontFamily);
  for (const face of ['PingFang SC', 'Microsoft YaHei', 'Noto Sans CJK SC']) assert.ok(family.includes(face), `the font stack names ${face}: ${family}`);

  // Switch to English: kept in localStorage, so a reload stays English.
  await page.getByLabel('语言').selectOption('en');
  await page.locator('#new-chat', { hasText: 'New chat' }).waitFor();
  await lastRun(page).getByRole('group', { name: 'Approval needed' }).waitFor();
  assert.equal(await page.evaluate(() => localStorage.getItem('agentchat.lang')), 'en');
  await page.reload();
  await page.locator('#new-chat', { hasText: 'New chat' }).waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.lang), 'en');
  await lastRun(page).getByRole('button', { name: 'Reject' }).click();
  await finished(page);
});

// --- 8. every view: accessibility and screenshots, desktop and phone, English and Chinese ----------

test('sign-in, chat, approval and timeline: no serious accessibility problems; screenshots at desktop and phone width in English and Chinese', async (t) => {
  const views = {};
  for (const [lang, inputs] of Object.entries({
    en: { chat: 'think, what is 12*(3+4) and make a chart "Sales" of 3, 5, 9, 4', approval: 'Send a Feishu message saying "deploy done"' },
    zh: { chat: '思考一下，然后计算 12*(3+4)，再画一个图表“销量”：3，5，9，4', approval: '发飞书消息“部署完成”' },
  })) {
    const chat = await chatAPI(server, { input: inputs.chat });
    const approval = await chatAPI(server, { input: inputs.approval }, 'tool.awaiting_input');
    views[lang] = { chat: `#/c/${chat.conversationId}`, approval: `#/c/${approval.conversationId}`, timeline: `#/runs/${chat.runId}/timeline` };
  }
  const problems = [];
  for (const lang of ['en', 'zh']) {
    for (const [width, viewport] of Object.entries({ desktop: DESKTOP, phone: PHONE })) {
      const { page } = await open(t, { viewport, locale: lang === 'zh' ? 'zh-CN' : 'en-US', signIn: false });
      const name = (view) => `${lang}-${width}-${view}`;
      await page.locator('#signin-form').waitFor();
      problems.push(...(await axe(page)).map((p) => `${name('signin')}: ${p}`));
      await shot(page, name('signin'));
      await page.fill('#token', server.token);
      await page.keyboard.press('Enter');
      await page.waitForSelector('#app:not([hidden])');

      await page.evaluate((h) => (location.hash = h), views[lang].chat);
      await page.locator('#messages .tool .chart').first().waitFor();
      await page.locator('#messages > .run .timeline-link:not([hidden])').waitFor();
      problems.push(...(await axe(page)).map((p) => `${name('chat')}: ${p}`));
      await shot(page, name('chat'));

      await page.evaluate((h) => (location.hash = h), views[lang].approval);
      await page.locator('#messages .approval').waitFor();
      problems.push(...(await axe(page)).map((p) => `${name('approval')}: ${p}`));
      await shot(page, name('approval'));

      await page.evaluate((h) => (location.hash = h), views[lang].timeline);
      await page.locator('#timeline:not([hidden]) .tl-row').first().waitFor();
      problems.push(...(await axe(page)).map((p) => `${name('timeline')}: ${p}`));
      await shot(page, name('timeline'));
    }
  }
  assert.deepEqual(problems, [], 'axe-core: serious or critical violations');
});

// --- 9. a long conversation ----------------------------------------------------------------------

test('a 500-message conversation opens in under a second and scrolls (timing recorded)', async (t) => {
  let conversationId = '';
  for (let i = 0; i < 250; i++) {
    const r = await chatAPI(fast, { input: `Message ${i + 1} of a long conversation`, ...(conversationId ? { conversationId } : {}) });
    assert.match(r.text, /"status":"succeeded"/);
    conversationId ||= r.conversationId;
  }
  const { messages } = await json(fast.url, fast.token, `/v1/conversations/${conversationId}/messages?limit=100`);
  assert.equal(messages.length, 100);
  const { page } = await open(t, { srv: fast });
  await page.locator('.welcome').waitFor();
  const openMs = await page.evaluate(async (id) => {
    const t0 = performance.now();
    location.hash = `#/c/${id}`;
    await new Promise((ok) => {
      const check = () => (document.querySelectorAll('#messages > .run').length === 250 ? ok() : requestAnimationFrame(check));
      check();
    });
    await new Promise((ok) => requestAnimationFrame(() => requestAnimationFrame(ok)));
    return performance.now() - t0;
  }, conversationId);
  assert.equal(await page.locator('#messages > .msg.user').count(), 250);
  assert.equal(await page.locator('#messages > .run .answer').count(), 250);
  const scroll = await page.locator('#messages').evaluate(async (box) => {
    const frames = [];
    let last = performance.now();
    const t0 = last;
    box.scrollTop = box.scrollHeight;
    for (let i = 0; i < 60; i++) {
      box.scrollTop = box.scrollHeight - ((i + 1) * box.scrollHeight) / 60;
      await new Promise((ok) => requestAnimationFrame(ok));
      const now = performance.now();
      frames.push(now - last);
      last = now;
    }
    return { ms: performance.now() - t0, atTop: box.scrollTop === 0, worstFrameMs: Math.max(...frames) };
  });
  assert.ok(scroll.atTop, 'it scrolls to the first message');
  assert.equal(await page.locator('#messages > .msg.user').first().textContent(), 'Message 1 of a long conversation');
  const record = { messages: 500, openMs: Math.round(openMs), scrollMs: Math.round(scroll.ms), worstScrollFrameMs: Math.round(scroll.worstFrameMs), at: new Date().toISOString() };
  mkdirSync(SHOTS, { recursive: true });
  writeFileSync(join(SHOTS, 'long-conversation-timing.json'), `${JSON.stringify(record, null, 2)}\n`);
  t.diagnostic(`500 messages: opened in ${record.openMs} ms, scrolled top to bottom in ${record.scrollMs} ms (worst frame ${record.worstScrollFrameMs} ms)`);
  console.log(`long conversation timing: ${JSON.stringify(record)}`);
});
