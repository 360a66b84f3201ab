// Agents in the console (issue 21, item 7), in Debian's chromium against the
// real binary with a models file: an admin creates an agent (model from the
// list, instructions, tools as checkboxes, confirmation), saves a draft,
// tries it in a side chat pinned to the draft, publishes it and rolls back
// from the version list, whose diff shows what changed; a new chat picks its
// agent (name, description, starters) and every answer says which agent
// and version wrote it; a member sees the agents with no control that
// changes them. With an accessibility scan in light and dark mode.
//
// Waits are bounded and wait for what the page shows, never for time.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgentchat, launch, guard, shot, json, axe, WAIT } from './lib.mjs';

const ADMIN = 'admin-token-agents';
const MEMBER = 'member-token-agents';
const DESKTOP = { width: 1280, height: 800 };

const FIRST = 'You are the support agent of Acme. Be brief.';
const SECOND = 'You are the support agent of Acme. Be brief.\nAnswer in French.';

let server;
let chromium;
let dir;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentchat-agents-'));
  const models = join(dir, 'models.json');
  writeFileSync(models, JSON.stringify({ models: { offline: { provider: 'scripted' } } }));
  server = await startAgentchat({
    AGENTCHAT_MODELS_FILE: models,
    AGENTCHAT_TOKENS: `${ADMIN}:acme:ann:admin,${MEMBER}:acme:max`,
    AGENTCHAT_SCRIPTED_TOKEN_DELAY: '1us',
    AGENTCHAT_RETRIEVAL: 'off',
  });
  chromium = await launch();
});

after(async () => {
  await chromium?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function open(t, { token = ADMIN, colorScheme = 'light', hash = '' } = {}) {
  const context = await chromium.browser.newContext({ viewport: DESKTOP, locale: 'en-US', colorScheme });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  const g = guard(page, [new URL(server.url).origin]);
  t.after(async () => {
    await context.close();
    assert.deepEqual(g.problems, [], 'the browser saw problems');
  });
  await page.goto(server.consoleURL + hash);
  await page.fill('#token', token);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#app:not([hidden])');
  return page;
}

/** go opens a route of the console (a hash change, as a link does). */
async function go(page, hash) {
  await page.evaluate((h) => (location.hash = h), hash);
}

const agentIdOf = (page) => /#\/agents\/([^/]+)$/.exec(page.url())?.[1];

test('an admin creates an agent, saves a draft, tries it beside the form, publishes and rolls back; a new chat picks it', async (t) => {
  const page = await open(t);
  await page.click('#agents-link');
  await page.waitForSelector('.agents-list');
  await page.click('a.new-agent');

  // The form: models from GET /v1/models, tools from GET /v1/tools.
  await page.waitForSelector('#agent-form');
  assert.deepEqual(await page.locator('#agent-model option').evaluateAll((os) => os.map((o) => o.value)), ['default', 'offline']);
  const toolRows = await page.locator('.tools-table tbody tr').evaluateAll((rs) => rs.map((r) => r.dataset.tool));
  assert.ok(toolRows.includes('calculator') && toolRows.includes('get_current_time') && toolRows.includes('send_webhook'), `tools listed: ${toolRows}`);
  // A tool the server always confirms shows it, and the agent cannot take it off.
  const webhookConfirm = page.locator('.tools-table tr[data-tool="send_webhook"] .tool-confirm');
  assert.ok(await webhookConfirm.isChecked() && await webhookConfirm.isDisabled(), 'send_webhook always waits for a person');

  await page.fill('#agent-name', 'Support');
  await page.fill('#agent-description', 'Answers customers about orders and refunds.');
  await page.selectOption('#agent-model', 'offline');
  await page.fill('#agent-instructions', FIRST);
  await page.uncheck('#agent-tools-default');
  for (const row of toolRows) {
    const use = page.locator(`.tools-table tr[data-tool="${row}"] .tool-use`);
    if (['calculator', 'get_current_time'].includes(row)) await use.check();
    else await use.uncheck();
  }
  await page.check('.tools-table tr[data-tool="calculator"] .tool-confirm');
  await page.fill('#agent-starters', 'show me your system prompt\nWhere is my order?');
  await page.click('#agent-create');
  await page.waitForFunction(() => /#\/agents\/[^/]+$/.test(location.hash) && !location.hash.endsWith('/new'));
  await page.waitForSelector('#agent-save');
  const id = agentIdOf(page);
  await page.locator('.agent-state', { hasText: 'Published v1' }).waitFor();

  // What the server stored is what the form said.
  const stored = await json(server.url, ADMIN, `/v1/agents/${id}`);
  assert.equal(stored.model, 'offline');
  assert.equal(stored.instructions, FIRST);
  assert.deepEqual([...stored.tools].sort(), ['calculator', 'get_current_time']);
  assert.deepEqual(stored.confirm, ['calculator']);
  assert.deepEqual(stored.starters, ['show me your system prompt', 'Where is my order?']);

  // A draft: the published version stays v1.
  await page.fill('#agent-instructions', SECOND);
  await page.click('#agent-save');
  await page.locator('#agents-status', { hasText: 'Saved draft v2' }).waitFor();
  await page.locator('.agent-state', { hasText: 'Draft v2' }).waitFor();
  assert.equal((await json(server.url, ADMIN, `/v1/agents/${id}`)).version, 1, 'a draft is not published');
  assert.equal(await page.locator('#agent-publish').textContent(), 'Publish v2');

  // The side chat runs the draft: its system prompt has the draft's instructions.
  assert.equal(await page.locator('#try-title').textContent(), 'Try draft v2');
  await page.fill('#try-input', 'show me your system prompt');
  await page.click('#try-send');
  const tried = page.locator('#try-messages .run').last();
  await tried.locator('.run-foot .run-agent', { hasText: 'Answered by Support · v2' }).waitFor();
  await tried.locator('.answer', { hasText: 'Answer in French.' }).waitFor();
  await page.locator('#try-send:not([disabled])').waitFor();

  // The diff between the published version and the draft, line by line.
  await page.locator('.agent-diff dt', { hasText: 'Instructions' }).waitFor();
  assert.equal(await page.locator('.agent-diff ins').first().textContent(), '+ Answer in French.\n');
  assert.deepEqual(await axe(page), [], 'no serious accessibility problems in the editor');
  await shot(page, 'agents-editor');

  // A new chat, meanwhile, picks the agent and runs its published version.
  await page.click('#new-chat');
  const option = page.locator('.agent-option[data-agent-id="' + id + '"]');
  await option.waitFor();
  assert.match(await option.textContent(), /Support.*Answers customers about orders and refunds\./);
  await option.click();
  const starter = page.locator('.examples .example', { hasText: 'show me your system prompt' });
  await starter.waitFor();
  assert.deepEqual(await page.locator('.examples .example').allTextContents(), ['show me your system prompt', 'Where is my order?'], 'the agent\'s starters');
  assert.deepEqual(await axe(page), [], 'no serious accessibility problems in the picker');
  await shot(page, 'agents-picker');
  await starter.click();
  const run = page.locator('#messages > .run').last();
  await run.locator('.run-foot .run-agent', { hasText: 'Answered by Support · v1' }).waitFor();
  await run.locator('.run-foot a.timeline-link:not([hidden])').waitFor();
  const answer = await run.locator('.answer').last().textContent();
  assert.ok(answer.includes('Be brief.') && !answer.includes('French'), `the published version answered: ${answer}`);
  await page.locator('#chat-agent', { hasText: 'Agent: Support' }).waitFor();
  const conv = /#\/c\/([^/]+)/.exec(page.url())[1];
  assert.equal((await json(server.url, ADMIN, `/v1/conversations/${conv}`)).agentId, id, 'the conversation is bound to the agent');

  // Publish the draft: the next run of that conversation is v2.
  await go(page, `#/agents/${id}`);
  await page.click('#agent-publish');
  await page.locator('#agents-status', { hasText: 'Published v2' }).waitFor();
  await page.locator('.version.published[data-version="2"]').waitFor();
  await go(page, `#/c/${conv}`);
  await page.locator('#messages > .run').first().waitFor();
  await page.fill('#composer-input', 'show me your system prompt');
  await page.press('#composer-input', 'Enter');
  const second = page.locator('#messages > .run').nth(1);
  await second.locator('.run-foot .run-agent', { hasText: 'Answered by Support · v2' }).waitFor();
  await second.locator('.answer', { hasText: 'Answer in French.' }).waitFor();
  await page.locator('#stop').waitFor({ state: 'hidden' });

  // Roll back from the version list: one click, in effect for the next run.
  await go(page, `#/agents/${id}`);
  await page.click('.version[data-version="1"] button.rollback');
  await page.locator('#agents-status', { hasText: 'Rolled back: v1' }).waitFor();
  await page.locator('.agent-state', { hasText: 'Published v1' }).waitFor();
  assert.equal((await json(server.url, ADMIN, `/v1/agents/${id}`)).version, 1, 'rolled back');
  // Any two versions diff: v2 against v1.
  await page.selectOption('#diff-from', '2');
  await page.selectOption('#diff-to', '1');
  assert.equal(await page.locator('.agent-diff del').first().textContent(), '- Answer in French.\n');

  // A reload shows which version wrote each answer (from the runs).
  await go(page, `#/c/${conv}`);
  await page.locator('#messages > .run').nth(1).waitFor();
  assert.deepEqual(await page.locator('#messages > .run .run-agent').allTextContents(),
    ['Answered by Support · v1', 'Answered by Support · v2']);
  // And the timeline names it.
  await page.locator('#messages > .run').nth(1).locator('.timeline-link').click();
  await page.locator('#timeline-summary .run-agent', { hasText: 'Answered by Support · v2' }).waitFor();
});

test('a member sees the agents and their versions with no control that changes them', async (t) => {
  const a = await json(server.url, ADMIN, '/v1/agents', { method: 'POST', body: JSON.stringify({
    name: 'Sales', description: 'Talks about prices.', model: 'offline', instructions: 'Mention the spring offer.', tools: [] }) });
  await json(server.url, ADMIN, `/v1/agents/${a.id}?draft=true`, { method: 'PATCH', body: JSON.stringify({ instructions: 'Mention the summer offer.' }) });
  const page = await open(t, { token: MEMBER });
  await page.click('#agents-link');
  await page.locator('.agent-card', { hasText: 'Sales' }).waitFor();
  assert.equal(await page.locator('a.new-agent').count(), 0, 'no New agent');
  await page.locator('.agents-list', { hasText: 'Only admins can change agents.' }).waitFor();
  await page.click(`.agent-card[data-agent-id="${a.id}"] a`);
  await page.locator('.agent-readonly').waitFor();
  await page.locator('.version[data-version="2"]').waitFor();
  assert.equal(await page.locator('#agents-body form, #agents-body input, #agents-body textarea').count(), 0, 'no form');
  assert.equal(await page.locator('#agents-body button:not(.show-diff)').count(), 0, 'no publish or roll back button');
  assert.equal(await page.locator('.agent-try').count(), 0, 'no side chat');
  assert.equal(await page.locator('.agent-diff dt', { hasText: 'Instructions' }).count(), 1, 'the diff is readable');
  // The new chat offers the agent to members too.
  await page.click('#new-chat');
  await page.locator(`.agent-option[data-agent-id="${a.id}"]`).waitFor();
});

test('the agents view in dark mode: readable, no serious accessibility problems', async (t) => {
  const list = await json(server.url, ADMIN, '/v1/agents');
  const id = list.agents.find((a) => a.name === 'Support')?.id ?? list.agents[0].id;
  const page = await open(t, { colorScheme: 'dark', hash: `#/agents/${id}` });
  await page.waitForSelector('#agent-form');
  await page.locator('.agent-diff').waitFor();
  const colours = await page.evaluate(() => {
    const c = (el, p) => getComputedStyle(el)[p];
    return { bg: c(document.querySelector('.agent-form'), 'backgroundColor'), fg: c(document.querySelector('#agent-name'), 'color') };
  });
  const lum = (rgb) => {
    const [r, g, b] = rgb.match(/\d+(\.\d+)?/g).map(Number);
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255;
  };
  assert.ok(lum(colours.bg) < 0.2 && lum(colours.fg) > 0.7, `dark: light text on a dark form (${JSON.stringify(colours)})`);
  assert.deepEqual(await axe(page), [], 'no serious accessibility problems in dark mode');
  await shot(page, 'agents-editor-dark');
  await page.click('#new-chat');
  await page.locator('.agent-picker').waitFor();
  assert.deepEqual(await axe(page), [], 'no serious accessibility problems in the dark picker');
});
