// Usage in the console (issue 24, item 5), in Debian's chromium against the
// real binary with a priced models file and limits: a member sees their
// usage this month against their limits (a meter per budget, with what the
// usage API says is used); an admin sees the tenant's month by day (charts
// of tokens and cost), by agent, by model and by user, with cost, every
// number equal to GET /v1/usage's. In English and Chinese, at desktop and
// phone width, with an accessibility scan.
//
// Waits are bounded and wait for what the page shows, never for time.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startAgentchat, launch, guard, shot, json, axe, chatAPI, WAIT } from './lib.mjs';

const ADMIN = 'admin-token-usage';
const MEMBER = 'member-token-usage';
const ZOE = 'zoe-token-usage'; // a member with a budget of one token a day
const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 390, height: 844 };

let server;
let chromium;
let dir;
let agentId;
let pricedRun; // the admin's run on the agent: {runId, usage}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'agentchat-usage-'));
  const models = join(dir, 'models.json');
  // A priced model: the agent's runs have a cost (the built-in agent's model has no price).
  writeFileSync(models, JSON.stringify({ models: { priced: { provider: 'scripted', price: { input: 3, output: 15, currency: 'USD' } } } }));
  const engines = join(dir, 'engines.json');
  writeFileSync(engines, JSON.stringify({ limits: { tenants: { acme: { users: { max: { tokensPerDay: 150 }, zoe: { tokensPerDay: 1 } } } } } }));
  server = await startAgentchat({
    AGENTCHAT_MODELS_FILE: models,
    AGENTCHAT_ENGINE_CONFIG: engines,
    AGENTCHAT_TOKENS: `${ADMIN}:acme:ann:admin,${MEMBER}:acme:max,${ZOE}:acme:zoe`,
    AGENTCHAT_TOKENS_PER_MONTH: '400',
    AGENTCHAT_RUNS_PER_MINUTE: '100',
    AGENTCHAT_SCRIPTED_TOKEN_DELAY: '1us',
    AGENTCHAT_RETRIEVAL: 'off',
  });
  // Runs of both users: the admin's on the built-in agent and the agent, the member's on the agent.
  const agent = await json(server.url, ADMIN, '/v1/agents', { method: 'POST', body: JSON.stringify({ name: 'Billing helper', model: 'priced' }) });
  agentId = agent.id;
  const admin = { url: server.url, token: ADMIN };
  const member = { url: server.url, token: MEMBER };
  await chatAPI(admin, { input: 'hello there' });
  const { runId } = await chatAPI(admin, { input: 'tell me a story about a fox', agentId });
  pricedRun = { runId, usage: (await json(server.url, ADMIN, `/v1/agent/runs/${runId}`)).usage };
  await chatAPI(member, { input: 'hi', agentId });
  await chatAPI(member, { input: 'what is two plus two?', agentId });
  chromium = await launch();
});

after(async () => {
  await chromium?.close();
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function open(t, { token = ADMIN, viewport = DESKTOP, locale = 'en-US', colorScheme = 'light' } = {}) {
  const context = await chromium.browser.newContext({ viewport, locale, colorScheme });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  const origin = new URL(server.url).origin;
  const g = guard(page, [origin, `blob:${origin}`]); // a CSV is saved from an object URL of this origin
  t.after(async () => {
    await context.close();
    assert.deepEqual(g.problems, [], 'the browser saw problems');
  });
  page.guard = g;
  await page.goto(server.consoleURL);
  await page.fill('#token', token);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#app:not([hidden])');
  return page;
}

/** openUsage follows the sidebar's link (the drawer's on a phone) and waits for the view. */
async function openUsage(page, phone = false) {
  if (phone) await page.click('#nav-toggle');
  await page.click('#usage-link');
  await page.waitForSelector('#usage:not([hidden]) .usage-page');
  // The charts drawn (uPlot draws once the card has a width): tokens, and
  // cost when a run was priced.
  await page.waitForFunction(() => document.querySelectorAll('#usage .usage-days canvas').length ===
    (document.querySelector('#usage .usage-unpriced') ? 1 : 2));
}

const fmt = (n) => new Intl.NumberFormat('en').format(n);

test('a member sees their month against their limits, and nobody else\'s usage', async (t) => {
  const own = await json(server.url, MEMBER, '/v1/usage');
  const { limits } = await json(server.url, MEMBER, '/v1/usage/limits');
  assert.equal(own.total.runs, 2);
  assert.ok(own.total.cost > 0, 'the priced model gave the runs a cost');

  const page = await open(t, { token: MEMBER });
  await openUsage(page);
  assert.equal(await page.getAttribute('#usage-link', 'aria-current'), 'page');
  assert.equal(await page.textContent('.usage-tokens dd'), fmt(own.total.totalTokens));
  assert.equal(await page.textContent('.usage-runs dd'), '2');
  assert.equal(await page.textContent('.usage-cost dd'), `$${own.total.cost.toFixed(own.total.cost < 0.01 ? 4 : 2)}`);

  // One meter per budget: the user's tokens per day (engine file), the
  // tenant's tokens per month (environment); runs per minute as text.
  const shown = await page.locator('.usage-limit').evaluateAll((els) => els.map((el) => ({
    scope: el.dataset.scope, kind: el.dataset.kind,
    value: el.querySelector('meter')?.value ?? null, max: el.querySelector('meter')?.max ?? null,
    text: el.querySelector('.usage-limit-value').textContent })));
  assert.deepEqual(shown.map((l) => `${l.scope}/${l.kind}`).sort(), limits.map((l) => `${l.scope}/${l.kind}`).sort());
  const day = shown.find((l) => l.scope === 'user' && l.kind === 'tokens_per_day');
  const apiDay = limits.find((l) => l.scope === 'user' && l.kind === 'tokens_per_day');
  assert.equal(day.max, 150);
  assert.equal(day.value, apiDay.used);
  assert.ok(apiDay.used === own.total.totalTokens, `the day's meter holds the member's tokens (${apiDay.used})`);
  assert.match(day.text, new RegExp(`^${fmt(apiDay.used)} of 150 \\(${Math.round((100 * apiDay.used) / 150)}%\\)$`));
  const month = shown.find((l) => l.scope === 'tenant' && l.kind === 'tokens_per_month');
  assert.equal(month.max, 400);
  assert.ok(month.value > day.value, 'the tenant\'s month holds the admin\'s runs too');
  assert.match(shown.find((l) => l.kind === 'runs_per_minute').text, /at most 100 runs a minute/);

  // Tables of their own runs; no table by user.
  assert.equal(await page.locator('.usage-by-user').count(), 0);
  const models = await page.locator('.usage-by-model tbody tr').evaluateAll((rs) => rs.map((r) => r.dataset.key));
  assert.deepEqual(models, (await json(server.url, MEMBER, '/v1/usage?groupBy=model')).groups.map((g) => g.key));
  assert.deepEqual(await axe(page), [], 'no serious or critical accessibility violation');
  await shot(page, 'en-desktop-usage-member');
});

test('an admin sees the tenant by day, agent, model and user with cost; in Chinese and on a phone', async (t) => {
  const tenant = await json(server.url, ADMIN, '/v1/usage');
  const byUser = await json(server.url, ADMIN, '/v1/usage?groupBy=user');
  const byAgent = await json(server.url, ADMIN, '/v1/usage?groupBy=agent');
  const byDay = await json(server.url, ADMIN, '/v1/usage?groupBy=day');
  assert.equal(tenant.total.runs, 4);

  const page = await open(t);
  await openUsage(page);
  assert.match(await page.textContent('.usage-whose'), /tenant acme/);
  assert.equal(await page.textContent('.usage-tokens dd'), fmt(tenant.total.totalTokens));
  assert.equal(await page.textContent('.usage-runs dd'), '4');

  // By user: both users, the costliest first, each row the API's numbers.
  const users = await page.locator('.usage-by-user tbody tr').evaluateAll((rs) => rs.map((r) => ({
    key: r.dataset.key, cells: [...r.querySelectorAll('td')].map((c) => c.textContent) })));
  assert.deepEqual(users.map((u) => u.key).sort(), ['ann', 'max']);
  for (const u of users) {
    const g = byUser.groups.find((x) => x.key === u.key);
    assert.deepEqual(u.cells.slice(0, 4), [fmt(g.runs), fmt(g.inputTokens), fmt(g.outputTokens), fmt(g.totalTokens)], `${u.key}'s row`);
    assert.match(u.cells[4], /^\$\d/, `${u.key}'s cost in dollars`);
  }
  const costs = byUser.groups.map((g) => g.cost).sort((a, b) => b - a);
  assert.equal(users[0].key, byUser.groups.find((g) => g.cost === costs[0]).key, 'the costliest user first');

  // By agent: the agent by its name, and the built-in one.
  const agents = await page.locator('.usage-by-agent tbody tr').evaluateAll((rs) => rs.map((r) => ({ key: r.dataset.key, name: r.querySelector('th').textContent })));
  assert.deepEqual(agents.map((a) => a.key).sort(), byAgent.groups.map((g) => g.key).sort());
  assert.equal(agents.find((a) => a.key === agentId)?.name, 'Billing helper');

  // By day: today's bar holds the tenant's tokens (the data table beside the chart).
  const today = new Date().toISOString().slice(0, 10);
  assert.deepEqual(byDay.groups.map((g) => g.key), [today]);
  const lastRow = await page.locator('.usage-days .chart').first().locator('tbody tr').last().locator('td').textContent();
  assert.equal(lastRow, String(byDay.groups[0].totalTokens));
  const days = await page.locator('.usage-days .chart').first().locator('tbody tr').count();
  assert.equal(days, new Date().getUTCDate(), 'every day of the month so far');
  assert.deepEqual(await axe(page), [], 'no serious or critical accessibility violation');
  await shot(page, 'en-desktop-usage-admin');
  await page.locator('.usage-by-user').scrollIntoViewIfNeeded();
  await shot(page, 'en-desktop-usage-admin-tables');

  // By user as CSV, for finance: the file is what the API answers.
  const month = new Date().toISOString().slice(0, 7);
  const [file] = await Promise.all([page.waitForEvent('download'), page.click('.usage-by-user .usage-csv')]);
  assert.equal(file.suggestedFilename(), `usage-${month}-by-user.csv`);
  const saved = await readFile(await file.path(), 'utf8');
  const [y, m] = month.split('-').map(Number);
  const to = new Date(Date.UTC(y, m, 1)).toISOString().slice(0, 10);
  const res = await fetch(`${server.url}/v1/usage?from=${month}-01&to=${to}&groupBy=user&format=csv`, { headers: { Authorization: `Bearer ${ADMIN}` } });
  assert.equal(saved, await res.text());
  assert.match(saved, /^key,provider,runs,/);
  assert.match(saved, /\ntotal,,4,/);

  // A run's timeline says what it spent.
  await page.evaluate((id) => (location.hash = `#/runs/${id}/timeline`), pricedRun.runId);
  const u = pricedRun.usage;
  const spent = `${fmt(u.inputTokens + u.outputTokens)} tokens (${fmt(u.inputTokens)} in, ${fmt(u.outputTokens)} out) · $${(u.cost / 1e9).toFixed(u.cost < 1e7 ? 4 : 2)}`;
  assert.ok(u.cost > 0 && u.currency === 'USD', `the run's usage ${JSON.stringify(u)}`);
  await page.locator('#timeline-summary .tl-usage', { hasText: spent }).waitFor();
  await shot(page, 'en-desktop-timeline-usage');
  await openUsage(page);

  // Another month: nothing in it, and no limits (they are this month's).
  await page.fill('#usage-month', '2020-01');
  await page.locator('.usage-runs dd', { hasText: /^0$/ }).waitFor();
  assert.equal(await page.locator('.usage-limits').count(), 0);
  assert.equal(await page.locator('.usage-by-user tbody tr').count(), 0);

  // Chinese, after the switch: the view is drawn again in it.
  await page.fill('#usage-month', new Date().toISOString().slice(0, 7));
  await page.locator('.usage-runs dd', { hasText: /^4$/ }).waitFor();
  await page.selectOption('#lang', 'zh');
  await page.locator('#usage-title', { hasText: '用量' }).waitFor();
  await page.locator('.usage-by-user h3', { hasText: '按用户' }).waitFor();
  await page.waitForFunction(() => document.querySelectorAll('#usage .usage-days canvas').length === 2);
  await shot(page, 'zh-desktop-usage-admin');
});

test('on a phone, in English and Chinese, the view fits the width', async (t) => {
  for (const locale of ['en-US', 'zh-CN']) {
    const page = await open(t, { viewport: PHONE, locale });
    await openUsage(page, true);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    assert.ok(overflow <= 0, `no sideways scroll (${overflow}px)`);
    await shot(page, `${locale.slice(0, 2)}-phone-usage-admin`);
    const member = await open(t, { token: MEMBER, viewport: PHONE, locale, colorScheme: 'dark' });
    await openUsage(member, true);
    assert.deepEqual(await axe(member), [], 'no serious or critical accessibility violation (dark)');
    await shot(member, `${locale.slice(0, 2)}-phone-usage-member-dark`);
  }
});

test('over budget: the chat says which limit and when it resets; the meter shows it spent', async (t) => {
  const page = await open(t, { token: ZOE });
  // The first run is admitted (nothing spent yet) and spends the day's token.
  await page.fill('#composer-input', 'hello');
  await page.press('#composer-input', 'Enter');
  await page.locator('#messages .run').last().locator('.run-foot a:not([hidden])').waitFor();
  // The next start is refused before any stream: the 429's message in the status line.
  await page.guard.expectErrors(/status of 429/, async () => {
    await page.fill('#composer-input', 'hello again');
    await page.press('#composer-input', 'Enter');
    await page.locator('#status.error', { hasText: /^your limit of 1 tokens per day is reached; it resets at \S+ \(in / }).waitFor();
  });
  await shot(page, 'en-desktop-chat-over-budget');

  await openUsage(page);
  const meter = page.locator('.usage-limit.over[data-scope="user"][data-kind="tokens_per_day"]');
  await meter.waitFor();
  assert.equal(await page.locator('.usage-days canvas').count(), 1, 'no chart of cost: zoe\'s runs had no price');
  await page.locator('.usage-unpriced').waitFor();
  const used = (await json(server.url, ZOE, '/v1/usage')).total.totalTokens;
  assert.ok(used > 1);
  assert.match(await meter.locator('.usage-limit-value').textContent(), new RegExp(`^${fmt(used)} of 1 \\(\\d[\\d,]*%\\)$`));
  assert.equal(await meter.locator('meter').evaluate((m) => m.value), 1, 'the meter is full');
  await shot(page, 'en-desktop-usage-over-budget');
});
