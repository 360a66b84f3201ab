// The console's "Sign in with <provider>" in a real browser: the
// authorization-code flow with PKCE against an OpenID provider started by
// the test (internal/auth/oidctest, on 127.0.0.1), the server trusting it
// through AGENTCHAT_OIDC_ISSUER. The browser goes to the provider, comes
// back with a code, exchanges it at the token endpoint itself (a public
// client: no secret) and signs in with the ID token; the code never stays
// in the address bar. A tampered state is refused. The provider's token
// also works pasted, and on a stream's ?access_token=.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startAgentchat, launch, guard, shot, json, within, WAIT } from './lib.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const PROVIDER_BIN = join(here, '.bin', 'oidctest-server');

let provider; // { issuer, token, stop }
let server;
let chromium;

async function startProvider(audience) {
  if (!existsSync(PROVIDER_BIN)) {
    execFileSync('go', ['build', '-o', PROVIDER_BIN, './internal/auth/oidctest/oidctest-server'], { cwd: resolve(here, '../..'), stdio: 'inherit' });
  }
  const child = spawn(PROVIDER_BIN, ['-audience', audience, '-user', 'alice', '-tenant', 'acme'], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  const info = await within(new Promise((ok, fail) => {
    child.stdout.on('data', (b) => {
      out += b;
      if (out.includes('\n')) ok(JSON.parse(out.split('\n')[0]));
    });
    child.once('exit', (code) => fail(new Error(`oidctest-server exited (${code})`)));
  }), 'the OpenID provider to start');
  const exited = new Promise((ok) => child.once('exit', ok));
  return { ...info, async stop() { child.stdin.end(); await within(exited, 'the provider to stop', 5_000).catch(() => child.kill('SIGKILL')); } };
}

before(async () => {
  provider = await startProvider('agentchat-console');
  server = await startAgentchat({
    AGENTCHAT_OIDC_ISSUER: provider.issuer,
    AGENTCHAT_JWT_AUDIENCE: 'agentchat-console', // the client itself: the console keeps the ID token
    AGENTCHAT_OIDC_CLIENT_ID: 'agentchat-console',
    AGENTCHAT_OIDC_NAME: 'Test SSO',
  });
  chromium = await launch();
});

after(async () => {
  await chromium?.close();
  await server?.stop();
  await provider?.stop();
});

async function page(t) {
  const context = await chromium.browser.newContext({ viewport: { width: 1280, height: 800 } });
  const p = await context.newPage();
  p.setDefaultTimeout(WAIT);
  const g = guard(p, [new URL(server.url).origin, provider.issuer]);
  t.after(async () => {
    await context.close();
    assert.deepEqual(g.problems, [], 'the browser saw problems');
  });
  return p;
}

test('sign in with the OpenID provider: authorization code with PKCE, in the browser', async (t) => {
  // The server fetches the discovery document in the background: wait until it lists the provider.
  await within((async () => {
    for (let i = 0; i < 200; i++) {
      const list = await (await fetch(`${server.url}/v1/auth/providers`)).json();
      if (list.providers.length) return;
      await new Promise((ok) => setTimeout(ok, 50));
    }
    throw new Error('the provider was never listed');
  })(), 'the provider to be listed');

  const p = await page(t);
  const res = await p.goto(server.consoleURL);
  assert.match(res.headers()['content-security-policy'], new RegExp(`connect-src 'self' ${provider.issuer};`));
  const button = p.getByRole('button', { name: 'Sign in with Test SSO' });
  await button.waitFor();
  await shot(p, 'en-desktop-signin-oidc');
  const requests = [];
  p.on('request', (r) => requests.push(r.url()));
  await button.click();
  await p.waitForSelector('#app:not([hidden])');
  assert.match(await p.textContent('#who'), /alice.*acme/);
  // The code and state are gone from the address bar.
  assert.doesNotMatch(p.url(), /code=|state=/);
  // The browser went to the provider with a S256 challenge, and posted the code itself.
  const authorize = new URL(requests.find((u) => u.startsWith(`${provider.issuer}/authorize`)));
  assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
  assert.equal(authorize.searchParams.get('client_id'), 'agentchat-console');
  assert.ok(requests.some((u) => u === `${provider.issuer}/token`));
  // The kept token works on the API as the provider's user.
  const tok = await p.evaluate(() => sessionStorage.getItem('agentchat.token'));
  assert.deepEqual(await json(server.url, tok, '/v1/me'), { tenant: 'acme', user: 'alice', role: 'member' });
  assert.equal(await p.evaluate(() => sessionStorage.getItem('agentchat.oidc.pending')), null);
});

test('a redirect whose state is not this tab\'s is refused', async (t) => {
  const p = await page(t);
  await p.goto(server.consoleURL);
  await p.getByRole('button', { name: 'Sign in with Test SSO' }).waitFor();
  // A sign-in started in this tab, then an answer with another state (a forged link).
  await p.evaluate(() => sessionStorage.setItem('agentchat.oidc.pending', JSON.stringify({ state: 'mine', verifier: 'v', name: 'Test SSO', hash: '' })));
  await p.goto(`${server.consoleURL}?code=stolen&state=theirs`);
  await p.waitForSelector('#signin-error:not([hidden])');
  assert.match(await p.textContent('#signin-error'), /Sign-in with Test SSO failed: .*state/);
  assert.ok(await p.isHidden('#app'));
  assert.doesNotMatch(p.url(), /code=/);
});

test('the provider\'s token pasted, and on a stream\'s ?access_token=', async (t) => {
  const p = await page(t);
  await p.goto(server.consoleURL);
  await p.fill('#token', provider.token);
  await p.keyboard.press('Enter');
  await p.waitForSelector('#app:not([hidden])');
  assert.match(await p.textContent('#who'), /alice.*acme/);
  const conv = await json(server.url, provider.token, '/v1/conversations', { method: 'POST', body: '{}' });
  const stream = await fetch(`${server.url}/v1/conversations/${conv.id}/events?access_token=${provider.token}`);
  assert.equal(stream.status, 200);
  await stream.body.cancel();
});

test('the sign-in button in Chinese', async (t) => {
  const p = await page(t);
  await p.goto(server.consoleURL);
  await p.getByRole('button', { name: 'Sign in with Test SSO' }).waitFor();
  await p.selectOption('#lang', 'zh');
  await p.getByRole('button', { name: '使用 Test SSO 登录' }).waitFor();
  assert.equal(await p.textContent('#signin-or'), '或粘贴令牌');
  await shot(p, 'zh-desktop-signin-oidc');
});
