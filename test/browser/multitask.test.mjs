// Sending while the agent answers (issue 22, double-texting) in the
// console, in Debian's chromium against the real binary: during a run the
// composer offers Queue (Enter), Interrupt and Replace. Queued questions
// show marked at the end of the thread and are answered one after the
// other, in order, also across a reload, unless cancelled (their Cancel, or
// a cancel from elsewhere); Interrupt stops the answer, which stays, marked
// interrupted (after a reload too), and the new question is answered at
// once; Replace (rollback) stops it too and takes the stopped turn out of
// the thread, the new question in its place. Checked where it lives too
// (the server's messages, tree and runs).
// Screenshots at desktop and phone width, in English and Chinese.
//
// The model is a fake OpenAI-compatible upstream that numbers its answers
// and can hold one after its first word (gate), so a run is still
// answering when the next question is sent. Waits are for what the page
// shows, never for time.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startAgentchat, launch, guard, shot, json, axe, countingModel, WAIT } from './lib.mjs';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

let server;
let model;
let chromium;
const gates = [];

before(async () => {
  model = await countingModel();
  server = await startAgentchat({ AGENTCHAT_LLM: 'openai', OPENAI_BASE_URL: `${model.url}/v1`, OPENAI_API_KEY: 'sk-fake',
    AGENTCHAT_MODEL: 'fake', AGENTCHAT_LLM_RETRIES: '-1', AGENTCHAT_RETRIEVAL: 'off' });
  chromium = await launch();
});

after(async () => {
  for (const g of gates) g.open(); // an interrupted answer's request waits on its gate
  await chromium?.close();
  await server?.stop();
  await model?.close();
});

async function open(t, { viewport = DESKTOP, locale = 'en-US' } = {}) {
  const context = await chromium.browser.newContext({ viewport, locale });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  const g = guard(page, [new URL(server.url).origin]);
  t.after(async () => {
    await context.close();
    assert.deepEqual(g.problems, [], 'the browser saw problems');
  });
  await page.goto(server.consoleURL);
  await page.fill('#token', server.token);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#app:not([hidden])');
  return page;
}

function hold() {
  const g = model.gate();
  gates.push(g);
  return g;
}

const api = (path, init) => json(server.url, server.token, path, init);
const thread = (page) => page.locator('#messages > .msg.user:not([hidden]), #messages > .run .answer').allTextContents();
const runs = (page) => page.locator('#messages > .run');

function convOf(page) {
  const id = /#\/c\/([^/]+)/.exec(page.url())?.[1];
  assert.ok(id, `a conversation is open: ${page.url()}`);
  return id;
}

// answering starts a question whose answer is held after its first word.
async function answering(page, text) {
  const held = hold();
  await page.fill('#composer-input', text);
  await page.press('#composer-input', 'Enter');
  await held.waiting;
  await runs(page).last().locator('.answer', { hasText: 'Answer' }).waitFor();
  return held;
}

async function allDone(page, n) {
  await page.locator(`#messages > .run:nth-of-type(${n}) .run-foot a.timeline-link:not([hidden])`).waitFor();
  await page.waitForFunction((n) => {
    const r = document.querySelectorAll('#messages > .run');
    return r.length === n && [...r].every((x) => x.querySelector('.run-foot a.timeline-link:not([hidden])'));
  }, n);
  await page.locator('#send').waitFor();
  await page.locator('#stop').waitFor({ state: 'hidden' });
}

test('queue: questions sent while the agent answers wait, marked, and are answered in order, across a reload', async (t) => {
  const page = await open(t);
  const held = await answering(page, 'first question');
  // The composer offers Queue and Interrupt while the answer streams.
  await page.locator('#queue').waitFor();
  assert.ok(await page.locator('#interrupt').isVisible());
  assert.ok(await page.locator('#stop').isVisible());
  assert.ok(await page.locator('#send').isHidden());
  assert.match(await page.locator('#composer-hint').textContent(), /Enter queues your message; Ctrl\+Enter or Interrupt/);
  // Enter queues; so does the Queue button.
  await page.fill('#composer-input', 'second question');
  await page.press('#composer-input', 'Enter');
  await page.fill('#composer-input', 'third question');
  await page.locator('#queue').click();
  await page.locator('.msg-badge.queued').nth(1).waitFor();
  assert.deepEqual(await page.locator('.msg-badge.queued').allTextContents(), ['Queued', 'Queued']);
  const before = await thread(page);
  assert.equal(before.length, 4, 'the questions and the answer so far');
  assert.deepEqual([before[0], before[2], before[3]], ['first question', 'second question', 'third question']);
  assert.equal(await runs(page).count(), 1, 'no answer drawn for a queued question yet');
  await shot(page, 'multitask-queued-desktop-en');
  assert.deepEqual(await axe(page), []);

  // A reload still shows the queued questions (they are not stored until
  // their runs start) and follows them.
  await page.reload();
  await page.locator('.msg-badge.queued').nth(1).waitFor();
  assert.deepEqual((await thread(page)).filter((x) => x.endsWith('question')), ['first question', 'second question', 'third question']);
  await page.locator('#queue').waitFor();

  held.open();
  await allDone(page, 3);
  assert.equal(await page.locator('.msg-badge').count(), 0, 'no question is marked once answered');
  const shown = await thread(page);
  assert.deepEqual(shown.filter((_, i) => i % 2 === 0), ['first question', 'second question', 'third question']);
  assert.match(shown[1], /^Answer \d+: first question$/);
  assert.match(shown[3], /^Answer \d+: second question$/);
  assert.match(shown[5], /^Answer \d+: third question$/);

  // The server: one turn after the other, each question after the answer before it.
  const conv = convOf(page);
  const msgs = (await api(`/v1/conversations/${conv}/messages?limit=100`)).messages;
  assert.deepEqual(msgs.map((m) => m.content), shown);
  for (let i = 1; i < msgs.length; i++) assert.equal(msgs[i].parentId, msgs[i - 1].id);
  assert.ok(model.contexts.some((c) => c === `first question|${shown[1]}|second question`), 'the second question was asked after the first answer');
  assert.equal((await api(`/v1/conversations/${conv}`)).activeRunId, undefined, 'nothing goes on');

  // And the same after a reload.
  await page.reload();
  await page.locator('#messages > .run:nth-of-type(3) .run-foot a.timeline-link:not([hidden])').waitFor();
  assert.deepEqual(await thread(page), shown);
});

test('interrupt: the answer stops and stays, marked interrupted (after a reload too); the new question is answered at once', async (t) => {
  const page = await open(t);
  await answering(page, 'a long story please');
  await page.fill('#composer-input', 'actually, a short one');
  // Keyboard: Interrupt is a button of the composer, pressed with Enter.
  await page.locator('#interrupt').focus();
  await page.keyboard.press('Enter');
  await runs(page).first().locator('.run-status.interrupted').waitFor();
  assert.equal(await runs(page).first().locator('.run-status').textContent(), 'Interrupted');
  await allDone(page, 2);
  const shown = await thread(page);
  assert.equal(shown.length, 4);
  assert.equal(shown[0], 'a long story please');
  assert.match(shown[1], /^Answer/, 'the interrupted answer stays');
  assert.doesNotMatch(shown[1], /please$/, 'it stopped early');
  assert.equal(shown[2], 'actually, a short one');
  assert.match(shown[3], /^Answer \d+: actually, a short one$/);
  assert.equal(await runs(page).nth(1).locator('.run-status.interrupted').count(), 0);

  // The server kept the partial answer, marked, and the run says why it ended.
  const conv = convOf(page);
  const msgs = (await api(`/v1/conversations/${conv}/messages?limit=100`)).messages;
  assert.deepEqual(msgs.map((m) => m.role), ['user', 'assistant', 'user', 'assistant']);
  assert.equal(msgs[1].metadata?.interrupted, true);
  assert.equal(msgs[1].metadata?.partial, true);
  const first = await api(`/v1/agent/runs/${msgs[1].runId}`);
  assert.equal(first.status, 'cancelled');
  assert.equal(first.error?.code, 'run_interrupted');

  await page.reload();
  await runs(page).first().locator('.run-status.interrupted').waitFor();
  assert.deepEqual(await thread(page), shown);
  await shot(page, 'multitask-interrupted-desktop-en');
});

test('phone width and Chinese: Queue and Interrupt fit, the queued question and an interrupted answer read in Chinese', async (t) => {
  const page = await open(t, { viewport: PHONE, locale: 'zh-CN' });
  await answering(page, '讲个故事');
  await page.locator('#queue').waitFor();
  assert.equal(await page.locator('#queue').textContent(), '排队');
  assert.equal(await page.locator('#interrupt').textContent(), '打断');
  await page.fill('#composer-input', '然后呢？');
  await page.press('#composer-input', 'Enter');
  await page.locator('.msg-badge.queued', { hasText: '排队中' }).waitFor();
  // The composer's buttons stay inside the screen.
  assert.equal(await page.locator('#rollback').textContent(), '替换');
  for (const id of ['#queue', '#interrupt', '#rollback', '#stop']) {
    const box = await page.locator(id).boundingBox();
    assert.ok(box.x >= 0 && box.x + box.width <= PHONE.width, `${id} fits the screen: ${JSON.stringify(box)}`);
  }
  await shot(page, 'multitask-queued-phone-zh');
  assert.deepEqual(await axe(page), []);
  await page.fill('#composer-input', '算了，说点别的');
  await page.press('#composer-input', 'Control+Enter'); // Ctrl+Enter interrupts
  await runs(page).first().locator('.run-status.interrupted', { hasText: '已打断' }).waitFor();
  await allDone(page, 3);
  // However the queue and the interrupt raced, the thread shows the
  // server's branch, the interrupted answer marked.
  const msgs = (await api(`/v1/conversations/${convOf(page)}/messages?limit=100`)).messages;
  await page.waitForFunction((n) => document.querySelectorAll('#messages > .msg.user').length === n, msgs.filter((m) => m.role === 'user').length);
  assert.deepEqual(await thread(page), msgs.map((m) => m.content).filter((c) => c !== ''));
  assert.ok(await runs(page).first().locator('.run-status.interrupted').count() === 1);
  await shot(page, 'multitask-interrupted-phone-zh');
});

test('another tab finds the run going on (the conversation names it) and follows it, also a regenerate that has stored nothing yet', async (t) => {
  const page = await open(t);
  await page.fill('#composer-input', 'pick a colour');
  await page.press('#composer-input', 'Enter');
  await allDone(page, 1);
  const conv = convOf(page);
  const held = hold();
  await runs(page).last().getByRole('button', { name: 'Regenerate' }).click();
  await held.waiting;
  const { activeRunId } = await api(`/v1/conversations/${conv}`);
  assert.ok(activeRunId, 'the conversation names its run');

  const other = await open(t);
  await other.evaluate((c) => (location.hash = `#/c/${c}`), conv);
  await other.locator(`#messages > .run[data-run-id="${activeRunId}"] .answer`, { hasText: 'Answer' }).waitFor();
  assert.ok(await other.locator('#stop').isVisible(), 'the other tab follows the run live');
  held.open();
  await other.locator('#messages > .run .run-foot .versions-at', { hasText: '2 / 2' }).waitFor();
  await other.locator('#stop').waitFor({ state: 'hidden' });
});

test('switching the language while a question is queued keeps it queued, and it is answered', async (t) => {
  const page = await open(t);
  const held = await answering(page, 'one');
  await page.fill('#composer-input', 'two');
  // The tab keeps a queued question once the server has accepted it (its
  // run id comes with the response's headers): switch after that.
  const accepted = page.waitForResponse((r) => r.url().endsWith('/v1/agent/chat') && r.request().method() === 'POST');
  await page.press('#composer-input', 'Enter');
  await page.locator('.msg-badge.queued').waitFor();
  await accepted;
  await page.selectOption('#lang', 'zh');
  await page.locator('.msg-badge.queued', { hasText: '排队中' }).waitFor();
  assert.equal(await page.locator('#queue').textContent(), '排队');
  held.open();
  await allDone(page, 2);
  assert.deepEqual((await thread(page)).filter((_, i) => i % 2 === 0), ['one', 'two']);
  await page.selectOption('#lang', 'en');
});

test('cancel: a queued question is cancelled with its Cancel (keyboard), or from elsewhere, and leaves the thread unanswered', async (t) => {
  const page = await open(t);
  const asked = model.contexts.length;
  const held = await answering(page, 'first question');
  for (const q of ['second question', 'third question']) {
    await page.fill('#composer-input', q);
    await page.press('#composer-input', 'Enter');
  }
  // Each queued question gets its Cancel once the server has accepted it.
  const cancels = page.getByRole('button', { name: 'Cancel this queued message' });
  await cancels.nth(1).waitFor();
  await shot(page, 'multitask-cancel-desktop-en');
  assert.deepEqual(await axe(page), []);
  const conv = convOf(page);
  const [second, third] = (await api(`/v1/conversations/${conv}/queue`)).runs;
  assert.deepEqual([second.input, third.input], ['second question', 'third question']);

  await cancels.first().focus();
  await page.keyboard.press('Enter');
  await page.locator('.msg.user', { hasText: 'second question' }).waitFor({ state: 'detached' });
  assert.equal(await page.locator('#status').textContent(), 'The queued message was cancelled.');
  assert.ok(await page.locator('#composer-input').evaluate((el) => el === document.activeElement), 'focus goes back to the composer');
  assert.deepEqual((await api(`/v1/conversations/${conv}/queue`)).runs.map((r) => r.id), [third.id]);

  // Cancelled elsewhere (another tab, the API): its stream ends, and it
  // does not linger marked as queued.
  await api(`/v1/agent/runs/${third.id}/cancel`, { method: 'POST' });
  await page.locator('.msg.user', { hasText: 'third question' }).waitFor({ state: 'detached' });
  assert.equal(await page.locator('.msg-badge, .cancel-queued').count(), 0);
  assert.ok(await page.locator('#queue').isVisible(), 'the first answer still goes on');

  held.open();
  await allDone(page, 1);
  assert.deepEqual((await thread(page)).map((x) => x.replace(/^Answer \d+/, 'Answer')), ['first question', 'Answer: first question']);
  const msgs = (await api(`/v1/conversations/${conv}/messages?branch=all&limit=100`)).messages;
  assert.deepEqual(msgs.map((m) => m.content.replace(/^Answer \d+/, 'Answer')), ['first question', 'Answer: first question'], 'nothing of them was stored');
  assert.equal(model.contexts.length, asked + 1, 'the model was asked the first question only');
  assert.equal((await api(`/v1/conversations/${conv}/queue`)).runs.length, 0);
});

test('replace (rollback), at phone width in Chinese: the answer stops, the stopped turn leaves the thread, the new question takes its place as its second version', async (t) => {
  const page = await open(t, { viewport: PHONE, locale: 'zh-CN' });
  await answering(page, '讲个长故事');
  const replace = page.getByRole('button', { name: '用这条消息替换你的上一个问题' });
  await replace.waitFor();
  assert.equal(await replace.getAttribute('title'), '替换：停止当前回答，用这条消息替换你的上一个问题');
  await page.fill('#composer-input', '换成一首短诗');
  await shot(page, 'multitask-replace-phone-zh');
  // The new answer is held too, so the thread is seen while it streams.
  const next = hold();
  await replace.focus();
  await page.keyboard.press('Enter');
  await next.waiting;
  // The stopped turn leaves the view as the new answer starts.
  await page.locator('#messages > .msg.user', { hasText: '讲个长故事' }).waitFor({ state: 'detached' });
  await runs(page).last().locator('.answer', { hasText: 'Answer' }).waitFor();
  const streaming = await thread(page);
  assert.equal(streaming.length, 2, `only the new question and its answer show: ${streaming}`);
  assert.equal(streaming[0], '换成一首短诗');
  assert.match(streaming[1], /^Answer/);
  next.open();
  await allDone(page, 1);
  // Drawn again from the history: the question has the replaced one as its first version.
  await page.locator('#messages > .msg-tools .versions-at', { hasText: '2 / 2' }).waitFor();
  const shown = await thread(page);
  assert.equal(shown.length, 2);
  assert.equal(shown[0], '换成一首短诗');
  assert.match(shown[1], /^Answer \d+: 换成一首短诗$/);
  assert.equal(await page.locator('.run-status.interrupted').count(), 0);
  await shot(page, 'multitask-replaced-phone-zh');
  assert.deepEqual(await axe(page), []);

  // The server: the active branch is the new turn alone; the stopped turn
  // stays in the tree, its answer marked interrupted; the model was asked
  // without it.
  const conv = convOf(page);
  const msgs = (await api(`/v1/conversations/${conv}/messages?limit=100`)).messages;
  assert.deepEqual(msgs.map((m) => m.content), shown);
  assert.equal(msgs[0].parentId, null);
  assert.equal(msgs[0].siblingIds.length, 2);
  const all = (await api(`/v1/conversations/${conv}/messages?branch=all&limit=100`)).messages;
  const old = all.find((m) => m.content === '讲个长故事');
  assert.equal(old.id, msgs[0].siblingIds[0]);
  const partial = all.find((m) => m.parentId === old.id);
  assert.equal(partial.metadata?.interrupted, true);
  assert.equal(model.contexts.at(-1), '换成一首短诗');
});
