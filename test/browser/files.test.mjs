// Attachments in the console, in a real browser against the real binary on
// the offline model (which says what it received: "… with 1 image and 1
// document"): the attach button, paste and drop put files in the tray, each
// uploaded at once through POST /v1/files; the message references them by
// id; the thread shows an image thumbnail and a file chip, live and after a
// reload (the bytes read with the token in a header, shown from blob: URLs);
// the chip downloads the same bytes; a hostile file is refused in the tray
// with the server's message and never sent. Every test fails on any browser
// console error it did not expect, or a request to another host.
//
// Waits are bounded and wait for what the page shows, never for time.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { startAgentchat, launch, guard, shot, json, WAIT } from './lib.mjs';

let server;
let chromium;

// A real 1×1 PNG (the thumbnail must decode) and a small PDF.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const PDF = Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n');
const ACK = 'with 1 image and 1 document';

before(async () => {
  server = await startAgentchat();
  chromium = await launch();
});

after(async () => {
  await chromium?.close();
  await server?.stop();
});

async function open(t, { locale } = {}) {
  const context = await chromium.browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true, locale });
  const page = await context.newPage();
  page.setDefaultTimeout(WAIT);
  const origin = new URL(server.url).origin;
  const g = guard(page, [origin, `blob:${origin}`]);
  t.after(async () => {
    await context.close();
    assert.deepEqual(g.problems, [], 'the browser saw problems');
  });
  await page.goto(server.consoleURL);
  await page.fill('#token', server.token);
  await page.keyboard.press('Enter');
  await page.waitForSelector('#app:not([hidden])');
  return { page, g };
}

const lastRun = (page) => page.locator('#messages .run').last();
const lastUser = (page) => page.locator('#messages .msg.user').last();

async function finished(page) {
  await lastRun(page).locator('.run-foot a:not([hidden])').waitFor();
}

/** uploaded waits until the tray holds n chips, none still uploading. */
async function uploaded(page, n) {
  await page.waitForFunction((n) => {
    const chips = document.querySelectorAll('#attach-tray .attach-chip');
    return chips.length === n && !document.querySelector('#attach-tray .attach-chip.pending');
  }, n);
}

/** thumbnailDecoded: the bubble's image has loaded from a blob: URL. */
async function thumbnailDecoded(page, name = 'cat.png') {
  const img = lastUser(page).locator('img.msg-thumb');
  await img.waitFor();
  await page.waitForFunction((el) => el.complete && el.naturalWidth === 1, await img.elementHandle());
  assert.match(await img.getAttribute('src'), /^blob:/);
  assert.equal(await img.getAttribute('alt'), name);
}

test('attach an image and a PDF: the model gets both, the thread shows them live and after a reload, the chip downloads the bytes', async (t) => {
  const { page } = await open(t);
  assert.equal(await page.getAttribute('#attach', 'aria-label'), 'Attach files');
  await page.setInputFiles('#attach-input', [
    { name: 'cat.png', mimeType: 'image/png', buffer: PNG },
    { name: 'handbook.pdf', mimeType: 'application/pdf', buffer: PDF },
  ]);
  await uploaded(page, 2);
  assert.equal(await page.locator('#attach-tray img.attach-thumb').count(), 1, 'the image is previewed in the tray');
  await page.fill('#composer-input', 'what are these?');
  await page.press('#composer-input', 'Enter');
  await finished(page);
  assert.match(await lastRun(page).innerText(), new RegExp(ACK));
  assert.equal(await page.isHidden('#attach-tray'), true, 'the tray is emptied by the send');
  await thumbnailDecoded(page);
  assert.match(await lastUser(page).locator('.file-chip').getAttribute('data-label'), /^handbook\.pdf · \d+ B$/);
  assert.equal(await lastUser(page).locator('.file-chip').getAttribute('aria-label'), 'Download handbook.pdf');
  // The files add no text to the question, which an edit starts from.
  assert.equal(await lastUser(page).textContent(), 'what are these?');
  await shot(page, 'en-desktop-attachments');

  // The stored message references the files by id, never their bytes.
  const id = /#\/c\/(.+)$/.exec(page.url())?.[1];
  const { messages } = await json(server.url, server.token, `/v1/conversations/${id}/messages`);
  const user = messages.find((m) => m.role === 'user');
  const files = (user.parts ?? []).filter((p) => p.type === 'file');
  assert.deepEqual(files.map((p) => [p.name, p.mediaType]), [['cat.png', 'image/png'], ['handbook.pdf', 'application/pdf']]);
  assert.doesNotMatch(JSON.stringify(user), /base64/);

  // After a reload the thread reads the files back (token in a header).
  await page.reload();
  await page.waitForSelector('#app:not([hidden])');
  await finished(page);
  await thumbnailDecoded(page);
  const [download] = await Promise.all([page.waitForEvent('download'), lastUser(page).locator('.file-chip').click()]);
  assert.equal(download.suggestedFilename(), 'handbook.pdf');
  assert.deepEqual(await readFile(await download.path()), PDF);
});

test('paste and drop attach; a hostile file is refused in the tray and never sent', async (t) => {
  const { page, g } = await open(t);
  // Paste an image into the message box, as a screenshot is pasted.
  await page.evaluate((b64) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], 'shot.png', { type: 'image/png' }));
    document.getElementById('composer-input').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  }, PNG.toString('base64'));
  // Drop an HTML page that claims to be a PNG onto the chat.
  await g.expectErrors(/Failed to load resource.*415/, async () => {
    await page.evaluate(() => {
      const dt = new DataTransfer();
      dt.items.add(new File(['<html><script>alert(1)</script></html>'], 'evil.png', { type: 'image/png' }));
      const chat = document.getElementById('chat');
      chat.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
      chat.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    });
    await uploaded(page, 2);
  });
  const refused = page.locator('#attach-tray .attach-chip.failed');
  assert.equal(await refused.getAttribute('data-name'), 'evil.png');
  assert.match(await refused.locator('[role=alert]').innerText(), /text\/html/);
  await refused.locator('.attach-remove').click();
  await uploaded(page, 1);
  await page.fill('#composer-input', 'and this one?');
  await page.press('#composer-input', 'Enter');
  await finished(page);
  assert.match(await lastRun(page).innerText(), /with 1 image/);
  assert.doesNotMatch(await lastRun(page).innerText(), /document/);
  await thumbnailDecoded(page, 'shot.png');
  // Nothing of the refused file was stored.
  const { files } = await json(server.url, server.token, '/v1/files?limit=100');
  assert.ok(!files.some((f) => f.name === 'evil.png'), 'the refused file is not stored');
});

test('the attach controls speak Chinese', async (t) => {
  const { page } = await open(t, { locale: 'zh-CN' });
  assert.equal(await page.getAttribute('#attach', 'aria-label'), '添加附件');
  await page.setInputFiles('#attach-input', [{ name: 'cat.png', mimeType: 'image/png', buffer: PNG }]);
  await uploaded(page, 1);
  assert.equal(await page.getAttribute('#attach-tray .attach-remove', 'aria-label'), '移除 cat.png');
  await shot(page, 'zh-desktop-attach-tray');
});
