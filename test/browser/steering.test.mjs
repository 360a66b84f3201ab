// Steering a conversation in the console (issue 22), in Debian's chromium
// against the real binary: regenerating an answer makes a sibling answer and
// "< 1 / 2 >" pages between the versions; editing a question makes a new
// version answered afresh, the old one a page away; thumbs up and down with a
// comment. Every step is checked where it lives too (the server's tree, the
// conversation's active leaf, the feedback, the context the model was sent)
// and again after a reload. Screenshots and an accessibility scan of the
// controls at desktop and phone width, in English and Chinese.
//
// The model is a fake OpenAI-compatible upstream that numbers its answers
// ("Answer 3: <question>") and records each request's context, so versions
// are told apart and the model is seen to get the active branch only.
//
// Waits are bounded and wait for what the page shows, never for time.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startAgentchat, launch, guard, shot, json, axe, countingModel, WAIT } from './lib.mjs';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

let server;
let model;
let chromium;

before(async () => {
  model = await countingModel();
  server = await startAgentchat({ AGENTCHAT_LLM: 'openai', OPENAI_BASE_URL: `${model.url}/v1`, OPENAI_API_KEY: 'sk-fake',
    AGENTCHAT_MODEL: 'fake', AGENTCHAT_LLM_RETRIES: '-1', AGENTCHAT_RETRIEVAL: 'off' });
  chromium = await launch();
});

after(async () => {
  await chromium?.close();
  await server?.stop();
  await model?.close();
});

async function open(t, { viewport = DESKTOP, locale = 'en-US', hash = '', colorScheme = 'light' } = {}) {
  const context = await chromium.browser.newContext({ viewport, locale, colorScheme });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  const g = guard(page, [new URL(server.url).origin]);
  t.after(async () => {
    await context.close();
    assert.deepEqual(g.problems, [], 'the browser saw problems');
  });
  await page.goto(server.consoleURL + hash);
  await page.fill('#token', server.token);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#app:not([hidden])');
  return page;
}

async function send(page, text) {
  await page.fill('#composer-input', text);
  await page.press('#composer-input', 'Enter');
}

const lastRun = (page) => page.locator('#messages > .run').last();

async function finished(page) {
  await lastRun(page).locator('.run-foot a.timeline-link:not([hidden])').waitFor();
  await page.locator('#stop').waitFor({ state: 'hidden' });
}

function convOf(page) {
  const id = /#\/c\/([^/]+)/.exec(page.url())?.[1];
  assert.ok(id, `a conversation is open: ${page.url()}`);
  return id;
}

const api = (path, init) => json(server.url, server.token, path, init);
const branch = async (conv, all = false) => (await api(`/v1/conversations/${conv}/messages?limit=100${all ? '&branch=all' : ''}`)).messages;
const contents = (msgs) => msgs.map((m) => m.content).join('|');
const thread = (page) => page.locator('#messages > .msg.user:not([hidden]), #messages > .run .answer').allTextContents();

test('regenerate: a sibling answer, no second question; "< 1 / 2 >" pages between the answers, kept by the server and after a reload', async (t) => {
  const page = await open(t);
  await send(page, 'pick a number');
  await finished(page);
  const first = await lastRun(page).locator('.answer').textContent();
  assert.match(first, /^Answer \d+: pick a number$/);
  assert.equal(await page.locator('#messages .versions').count(), 0, 'one version draws no pager');
  const conv = convOf(page);
  const asked = model.contexts.length;

  await lastRun(page).getByRole('button', { name: 'Regenerate' }).click();
  await lastRun(page).locator('.run-foot .versions-at', { hasText: '2 / 2' }).waitFor();
  const second = await lastRun(page).locator('.answer').textContent();
  assert.notEqual(second, first, 'a new answer');
  assert.deepEqual(await thread(page), ['pick a number', second], 'the question once, the new answer under it');
  assert.equal(model.contexts[asked], 'pick a number', 'the model was asked the question again, without the old answer');

  // The server's tree: one question, two answers under it.
  const active = await branch(conv);
  assert.deepEqual(active.map((m) => m.role), ['user', 'assistant']);
  const all = await branch(conv, true);
  const answers = all.filter((m) => m.role === 'assistant');
  assert.equal(all.filter((m) => m.role === 'user').length, 1, 'no second user message');
  assert.deepEqual(answers.map((m) => m.parentId), [active[0].id, active[0].id], 'the answers are siblings under the question');
  assert.deepEqual(active[1].siblingIds, answers.map((m) => m.id));
  assert.ok(all.every((m) => !m.metadata?.regenerates), 'no user message marks a regenerate');

  // Page back: the first answer, and the server's active branch with it.
  await lastRun(page).getByRole('button', { name: 'Previous version' }).click();
  await lastRun(page).locator('.versions-at', { hasText: '1 / 2' }).waitFor();
  assert.deepEqual(await thread(page), ['pick a number', first]);
  assert.equal((await api(`/v1/conversations/${conv}`)).activeLeafId, answers[0].id);
  assert.ok(await lastRun(page).getByRole('button', { name: 'Next version' }).evaluate((b) => b === document.activeElement), 'focus stays on the pager');
  assert.ok(await lastRun(page).getByRole('button', { name: 'Previous version' }).isDisabled(), 'no version before the first');

  // A reload shows the branch shown, with its pager; paging on goes on.
  await page.reload();
  await lastRun(page).locator('.versions-at', { hasText: '1 / 2' }).waitFor();
  assert.deepEqual(await thread(page), ['pick a number', first]);
  await lastRun(page).getByRole('button', { name: 'Next version' }).click();
  await lastRun(page).locator('.versions-at', { hasText: '2 / 2' }).waitFor();
  assert.deepEqual(await thread(page), ['pick a number', second]);

  // The next turn follows the answer shown, and the model sees that branch only.
  await send(page, 'why?');
  await finished(page);
  assert.equal(model.contexts.at(-1), `pick a number|${second}|why?`);
});

test('a reload while an answer is regenerated follows the new answer to its end, then shows its versions', async (t) => {
  const page = await open(t);
  await send(page, 'tell me a story');
  await finished(page);
  const first = await lastRun(page).locator('.answer').textContent();
  const held = model.gate();
  await lastRun(page).getByRole('button', { name: 'Regenerate' }).click();
  await held.waiting;
  await lastRun(page).locator('.answer', { hasText: 'Answer' }).waitFor();
  await page.reload();
  await lastRun(page).locator('.answer', { hasText: 'Answer' }).waitFor();
  assert.equal(await page.locator('#messages > .run').count(), 1, 'the old answer is on the other branch, and no empty run is drawn');
  assert.ok(await page.locator('#stop').isVisible(), 'the regenerate is followed live');
  held.open();
  await lastRun(page).locator('.run-foot .versions-at', { hasText: '2 / 2' }).waitFor();
  await finished(page);
  const second = await lastRun(page).locator('.answer').textContent();
  assert.notEqual(second, first);
  assert.deepEqual(await thread(page), ['tell me a story', second]);
});

test('edit a question: a new version answered afresh; the old one and what followed it a page away, after a reload too', async (t) => {
  const page = await open(t);
  await send(page, 'first question');
  await finished(page);
  await send(page, 'second question');
  await finished(page);
  const before = await thread(page);
  const conv = convOf(page);

  // Edit, then think better of it: nothing changes.
  const firstTools = page.locator('#messages > .msg-tools').first();
  await firstTools.getByRole('button', { name: 'Edit your message' }).click();
  const editor = page.getByRole('textbox', { name: 'Edit your message' });
  assert.equal(await editor.inputValue(), 'first question');
  await editor.press('Escape');
  await editor.waitFor({ state: 'detached' });
  assert.deepEqual(await thread(page), before, 'a cancelled edit changes nothing');
  assert.ok(await firstTools.getByRole('button', { name: 'Edit your message' }).evaluate((b) => b === document.activeElement), 'focus returns to Edit');

  // Edit and send: the question's new version is answered, what followed the old one leaves the view.
  const asked = model.contexts.length;
  await firstTools.getByRole('button', { name: 'Edit your message' }).click();
  await editor.fill('first question, edited');
  await page.locator('.msg-edit').getByRole('button', { name: 'Send' }).click();
  await page.locator('#messages > .msg-tools .versions-at', { hasText: '2 / 2' }).waitFor();
  await finished(page);
  const edited = await thread(page);
  assert.equal(edited.length, 2);
  assert.equal(edited[0], 'first question, edited');
  assert.match(edited[1], /^Answer \d+: first question, edited$/);
  assert.equal(model.contexts[asked], 'first question, edited', 'the model got the edited question alone');

  const active = await branch(conv);
  const all = await branch(conv, true);
  assert.equal(all.length, 6, 'every version is kept');
  assert.equal(active[0].parentId, null);
  assert.deepEqual(active[0].siblingIds, [all[0].id, active[0].id], 'the edit is the first question\'s second version');

  // Page back to the first version: its whole branch comes back.
  await page.locator('#messages > .msg-tools').first().getByRole('button', { name: 'Previous version' }).click();
  await page.locator('#messages > .msg-tools .versions-at', { hasText: '1 / 2' }).waitFor();
  assert.deepEqual(await thread(page), before);
  await page.reload();
  await page.locator('#messages > .msg-tools .versions-at', { hasText: '1 / 2' }).waitFor();
  await finished(page);
  assert.deepEqual(await thread(page), before, 'a reload shows the branch chosen');
  assert.equal(contents(await branch(conv)), before.join('|'));
});

test('thumbs up or down with an optional comment, kept by the server and shown after a reload; pressed again it is withdrawn', async (t) => {
  const page = await open(t);
  await send(page, 'rate me');
  await finished(page);
  const conv = convOf(page);
  const answerId = await lastRun(page).locator('.answer').getAttribute('data-message-id');
  const up = lastRun(page).getByRole('button', { name: 'Good answer' });
  const down = lastRun(page).getByRole('button', { name: 'Bad answer' });
  assert.equal(await up.getAttribute('aria-pressed'), 'false');

  await up.click();
  await lastRun(page).locator('.thumb.up[aria-pressed="true"]').waitFor();
  const comment = lastRun(page).getByLabel('Comment (optional)');
  assert.ok(await comment.evaluate((el) => el === document.activeElement), 'the comment field takes focus');
  await comment.fill('clear and short');
  await lastRun(page).getByRole('button', { name: 'Save' }).click();
  await lastRun(page).locator('.feedback-comment', { hasText: 'Your comment: clear and short' }).waitFor();
  const stored = (await branch(conv)).find((m) => m.id === answerId);
  assert.equal(stored.feedback?.rating, 'up');
  assert.equal(stored.feedback?.comment, 'clear and short');

  await page.reload();
  await lastRun(page).locator('.thumb.up[aria-pressed="true"]').waitFor();
  assert.equal(await lastRun(page).locator('.feedback-comment').textContent(), 'Your comment: clear and short');
  assert.equal(await down.getAttribute('aria-pressed'), 'false');

  // Down instead, with no comment this time.
  await down.click();
  await lastRun(page).locator('.thumb.down[aria-pressed="true"]').waitFor();
  assert.equal(await up.getAttribute('aria-pressed'), 'false');
  await lastRun(page).getByRole('button', { name: 'No comment' }).click();
  await lastRun(page).locator('.feedback-form').waitFor({ state: 'detached' });
  assert.equal((await branch(conv)).find((m) => m.id === answerId).feedback?.rating, 'down');

  // Pressed again: withdrawn.
  await down.click();
  await lastRun(page).locator('.thumb.down[aria-pressed="false"]').waitFor();
  assert.equal((await branch(conv)).find((m) => m.id === answerId).feedback, undefined);
  await page.reload();
  await finished(page);
  assert.equal(await lastRun(page).locator('.thumb[aria-pressed="true"]').count(), 0, 'no rating after a reload');
});

test('the versions, Edit and feedback controls: no serious accessibility problems; screenshots at desktop and phone width in English and Chinese, and in dark mode', async (t) => {
  const chat = async (body) => {
    const res = await fetch(`${server.url}/v1/agent/chat`, { method: 'POST',
      headers: { Authorization: `Bearer ${server.token}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    assert.equal(res.status, 200, await res.clone().text());
    await res.text();
    return res.headers.get('x-conversation-id');
  };
  const convs = {};
  for (const [lang, q] of Object.entries({ en: ['What should I cook tonight?', 'Something with rice, please'], zh: ['今晚做什么菜？', '做个米饭的菜吧'] })) {
    const conv = await chat({ input: q[0] });
    await chat({ conversationId: conv, input: q[1] });
    const [, , u2] = await branch(conv);
    await chat({ conversationId: conv, edit: { messageId: u2.id, input: `${q[1]}!` } });
    const answer = (await branch(conv)).at(-1);
    await chat({ conversationId: conv, regenerate: { messageId: answer.id } });
    const again = (await branch(conv)).at(-1);
    await api(`/v1/messages/${again.id}/feedback`, { method: 'PUT', body: JSON.stringify({ rating: 'up', comment: lang === 'en' ? 'Just right.' : '正合适。' }) });
    convs[lang] = conv;
  }
  const problems = [];
  for (const lang of ['en', 'zh']) {
    for (const [width, viewport] of Object.entries({ desktop: DESKTOP, phone: PHONE })) {
      const page = await open(t, { viewport, locale: lang === 'zh' ? 'zh-CN' : 'en-US', hash: `#/c/${convs[lang]}` });
      const name = `${lang}-${width}-versions`;
      await lastRun(page).locator('.versions-at', { hasText: '2 / 2' }).waitFor();
      await page.locator('#messages > .msg-tools .versions-at', { hasText: '2 / 2' }).waitFor();
      await lastRun(page).locator('.feedback-comment').waitFor();
      assert.equal(await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth), 0, `${name}: no sideways scroll`);
      problems.push(...(await axe(page)).map((p) => `${name}: ${p}`));
      await shot(page, name);
      // The editor and the comment form open.
      await page.locator('#messages > .msg-tools .edit').last().click();
      await lastRun(page).locator('.thumb.down').click();
      await lastRun(page).locator('.feedback-form').waitFor();
      problems.push(...(await axe(page)).map((p) => `${name} (editing): ${p}`));
      await shot(page, `${lang}-${width}-editing`);
      // Leave the answer as it was rated, for the next viewport.
      await lastRun(page).locator('.thumb.up').click();
      await lastRun(page).locator('.thumb.up[aria-pressed="true"]').waitFor();
      await lastRun(page).locator('.feedback-form input').fill(lang === 'en' ? 'Just right.' : '正合适。');
      await lastRun(page).locator('.feedback-form button[type="submit"]').click();
      await lastRun(page).locator('.feedback-comment').waitFor();
    }
  }
  // Dark mode: the same controls, scanned and shown.
  const dark = await open(t, { hash: `#/c/${convs.en}`, colorScheme: 'dark' });
  await lastRun(dark).locator('.feedback-comment').waitFor();
  await lastRun(dark).locator('.versions-at', { hasText: '2 / 2' }).waitFor();
  problems.push(...(await axe(dark)).map((p) => `dark: ${p}`));
  await shot(dark, 'dark-versions');
  assert.deepEqual(problems, [], 'axe-core: serious or critical violations');
});
