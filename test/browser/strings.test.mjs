// Every string of the console exists in English and in Simplified Chinese
// (js/strings.js), and every key the console names (t('…') in its modules,
// data-i18n* in index.html, the keys built from tool names, statuses and
// shortcuts) is there. No browser needed.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const staticDir = join(here, '../../internal/web/static');
const { STRINGS } = await import(join(staticDir, 'js/strings.js'));

const CJK = /[\u3400-\u9fff\u3000-\u303f\uff00-\uffef]/;

test('English and Chinese have the same keys, and the Chinese strings are Chinese', () => {
  const en = Object.keys(STRINGS.en).sort();
  const zh = Object.keys(STRINGS.zh).sort();
  assert.deepEqual(zh, en);
  // Product names and pure placeholders may stay as they are.
  const same = ['app.title'];
  for (const k of en) {
    if (same.includes(k)) continue;
    assert.notEqual(STRINGS.zh[k], STRINGS.en[k], `${k} is translated`);
    assert.match(STRINGS.zh[k], CJK, `${k} is Chinese: ${STRINGS.zh[k]}`);
    const vars = (s) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();
    assert.deepEqual(vars(STRINGS.zh[k]), vars(STRINGS.en[k]), `${k} has the same placeholders`);
  }
});

test('every key the console uses exists', () => {
  const used = new Set();
  const js = readdirSync(join(staticDir, 'js')).filter((f) => f.endsWith('.js') && f !== 'strings.js');
  for (const f of js) {
    const src = readFileSync(join(staticDir, 'js', f), 'utf8');
    for (const m of src.matchAll(/\bt\('([\w.]+)'/g)) used.add(m[1]);
    // keys passed around as values: copyButton(…, 'md.copyCode'), SHORTCUTS' what, examples, BADGE
    for (const m of src.matchAll(/'((?:md|answer|help|example|tool)\.[a-zA-Z]+)'/g)) used.add(m[1]);
  }
  const html = readFileSync(join(staticDir, 'index.html'), 'utf8');
  for (const m of html.matchAll(/data-i18n(?:-placeholder|-label|-title)?="([\w.]+)"/g)) used.add(m[1]);
  // keys built from data: run statuses and the built-in tools' names
  for (const s of ['succeeded', 'failed', 'cancelled', 'running', 'queued', 'awaiting_input']) used.add(`tl.end.${s}`);
  for (const tool of ['get_current_time', 'calculator', 'http_get', 'send_feishu_message', 'send_webhook', 'make_chart']) used.add(`toolname.${tool}`);
  used.delete('tool.state'); // an event name, not a key
  used.delete('tool.awaiting_input');
  const missing = [...used].filter((k) => !(k in STRINGS.en));
  assert.deepEqual(missing, [], 'keys used but not defined');
  assert.ok(used.size > 100, `found the keys in use (${used.size})`);
});
