// Answers as GitHub-flavoured Markdown, safely.
//
// marked turns the text into HTML; DOMPurify parses that HTML in an inert
// document, keeps only an allow-list of tags and attributes, and hands back a
// DOM fragment (RETURN_DOM_FRAGMENT), which is inserted as nodes: no HTML
// string ever reaches innerHTML of the page, so model output can never run
// script (DEVELOPERS.md). On top of DOMPurify:
// - raw HTML in the Markdown is shown as text, not parsed (a model writing
//   "<b>" means the characters);
// - images become links (the CSP allows images from this origin only, and a
//   model's image URL is another host);
// - links open in a new tab with rel="noopener noreferrer nofollow", and
//   only http(s) and mailto URLs survive;
// - class attributes survive only as highlight.js token classes.
//
// A streamed answer is re-rendered at most once per animation frame
// (MarkdownView), and only the top-level blocks that changed are replaced,
// so the text does not flicker, a selection in an earlier paragraph stays,
// and a code block's copy button keeps working while the answer grows.

import { Marked } from '../vendor/marked@18.2.1/lib/marked.esm.js';
import DOMPurify from '../vendor/dompurify@3.4.18/dist/purify.es.mjs';
import hljs from '../vendor/highlight.js@11.12.0/es/core.min.js';
import bash from '../vendor/highlight.js@11.12.0/es/languages/bash.min.js';
import c from '../vendor/highlight.js@11.12.0/es/languages/c.min.js';
import cpp from '../vendor/highlight.js@11.12.0/es/languages/cpp.min.js';
import csharp from '../vendor/highlight.js@11.12.0/es/languages/csharp.min.js';
import css from '../vendor/highlight.js@11.12.0/es/languages/css.min.js';
import diff from '../vendor/highlight.js@11.12.0/es/languages/diff.min.js';
import dockerfile from '../vendor/highlight.js@11.12.0/es/languages/dockerfile.min.js';
import go from '../vendor/highlight.js@11.12.0/es/languages/go.min.js';
import ini from '../vendor/highlight.js@11.12.0/es/languages/ini.min.js';
import java from '../vendor/highlight.js@11.12.0/es/languages/java.min.js';
import javascript from '../vendor/highlight.js@11.12.0/es/languages/javascript.min.js';
import json from '../vendor/highlight.js@11.12.0/es/languages/json.min.js';
import kotlin from '../vendor/highlight.js@11.12.0/es/languages/kotlin.min.js';
import markdown from '../vendor/highlight.js@11.12.0/es/languages/markdown.min.js';
import php from '../vendor/highlight.js@11.12.0/es/languages/php.min.js';
import plaintext from '../vendor/highlight.js@11.12.0/es/languages/plaintext.min.js';
import python from '../vendor/highlight.js@11.12.0/es/languages/python.min.js';
import ruby from '../vendor/highlight.js@11.12.0/es/languages/ruby.min.js';
import rust from '../vendor/highlight.js@11.12.0/es/languages/rust.min.js';
import shell from '../vendor/highlight.js@11.12.0/es/languages/shell.min.js';
import sql from '../vendor/highlight.js@11.12.0/es/languages/sql.min.js';
import swift from '../vendor/highlight.js@11.12.0/es/languages/swift.min.js';
import typescript from '../vendor/highlight.js@11.12.0/es/languages/typescript.min.js';
import xml from '../vendor/highlight.js@11.12.0/es/languages/xml.min.js';
import yaml from '../vendor/highlight.js@11.12.0/es/languages/yaml.min.js';
import { h } from './dom.js';
import { t } from './i18n.js';

const LANGUAGES = { bash, c, cpp, csharp, css, diff, dockerfile, go, ini, java, javascript, json, kotlin, markdown, php,
  plaintext, python, ruby, rust, shell, sql, swift, typescript, xml, yaml };
for (const [name, grammar] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, grammar);

const escapeHTML = (s) => String(s).replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

// highlight returns the HTML of a code block's text: highlight.js's token
// spans (it escapes the text itself), or the escaped text.
function highlight(text, lang) {
  const name = (lang || '').trim().split(/\s+/)[0].toLowerCase();
  if (name && hljs.getLanguage(name)) {
    try {
      return { html: hljs.highlight(text, { language: name, ignoreIllegals: true }).value, name };
    } catch {
      // a grammar that throws: plain text below
    }
  }
  return { html: escapeHTML(text), name };
}

const marked = new Marked({
  gfm: true,
  breaks: false,
  async: false,
  renderer: {
    html({ text }) {
      return escapeHTML(text);
    },
    image({ href, text }) {
      return `<a href="${escapeHTML(href)}">${escapeHTML(text || href)}</a>`;
    },
    code({ text, lang }) {
      const { html, name } = highlight(text, lang);
      const cls = name && /^[\w+#-]+$/.test(name) ? ` language-${name}` : '';
      return `<pre><code class="hljs${cls}">${html}</code></pre>\n`;
    },
  },
});

const ALLOWED_TAGS = ['a', 'blockquote', 'br', 'code', 'del', 'em', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'hr', 'input',
  'li', 'ol', 'p', 'pre', 'span', 'strong', 'sub', 'sup', 'table', 'tbody', 'td', 'th', 'thead', 'tr', 'ul'];
const ALLOWED_ATTR = ['href', 'title', 'class', 'type', 'checked', 'disabled', 'start', 'align'];
const CLASS_OK = /^(?:hljs(?:-[\w-]+)?|language-[\w+#-]+|[\w-]+_)$/;

const purify = DOMPurify();
purify.addHook('uponSanitizeAttribute', (node, data) => {
  if (data.attrName === 'class') {
    data.attrValue = data.attrValue.split(/\s+/).filter((c) => CLASS_OK.test(c)).join(' ');
    if (!data.attrValue) data.keepAttr = false;
  }
  if (data.attrName === 'type' && !(node.nodeName === 'INPUT' && data.attrValue === 'checkbox')) data.keepAttr = false;
});
purify.addHook('afterSanitizeAttributes', (node) => {
  if (node.nodeName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer nofollow');
  }
  if (node.nodeName === 'INPUT') node.setAttribute('disabled', '');
});

const PURIFY = {
  ALLOWED_TAGS,
  ALLOWED_ATTR,
  ADD_ATTR: ['target', 'rel'],
  ALLOW_DATA_ATTR: false,
  ALLOW_ARIA_ATTR: false,
  // Every other attribute's value must pass ALLOWED_URI_REGEXP, so the
  // plain ones are named here.
  ADD_URI_SAFE_ATTR: ['type', 'align', 'start'],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  RETURN_DOM_FRAGMENT: true,
};

/**
 * render turns Markdown text into a sanitised DOM fragment, with a copy
 * button on each code block and tables that scroll on their own.
 * @param {string} text
 * @returns {DocumentFragment}
 */
export function render(text) {
  const frag = purify.sanitize(marked.parse(text ?? ''), PURIFY);
  // The newlines marked writes between blocks are not text of the answer.
  for (const n of [...frag.childNodes]) if (n.nodeType === Node.TEXT_NODE && !n.data.trim()) n.remove();
  for (const pre of frag.querySelectorAll('pre')) {
    const code = pre.querySelector('code');
    const lang = /language-([\w+#-]+)/.exec(code?.className ?? '')?.[1] ?? '';
    const block = h('div', { class: 'code-block' },
      h('div', { class: 'code-head' }, h('span', { class: 'code-lang' }, lang || t('md.code')), copyButton(() => code?.textContent ?? pre.textContent, 'md.copyCode')));
    pre.replaceWith(block);
    block.append(pre);
  }
  for (const table of frag.querySelectorAll('table')) {
    const wrap = h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': t('md.table') });
    table.replaceWith(wrap);
    wrap.append(table);
  }
  return frag;
}

/**
 * copyButton makes a button that copies text() to the clipboard and says
 * so for a moment.
 */
export function copyButton(text, labelKey = 'answer.copy') {
  const b = h('button', { type: 'button', class: 'copy ghost small', 'data-i18n-key': labelKey }, t(labelKey));
  b.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(text());
      b.textContent = t('answer.copied');
    } catch {
      b.textContent = t('answer.copyFailed');
    }
    setTimeout(() => (b.textContent = t(labelKey)), 1500);
  });
  return b;
}

/**
 * MarkdownView shows a growing Markdown text in el. set() may be called for
 * every token: the text is rendered at most once per animation frame, and
 * flush() renders at once (when the answer is complete).
 */
export class MarkdownView {
  constructor(el) {
    this.el = el;
    this.text = '';
    this.shown = null;
    this.frame = 0;
  }

  set(text) {
    this.text = text;
    if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
  }

  flush() {
    if (this.frame) cancelAnimationFrame(this.frame);
    this.frame = 0;
    if (this.shown === this.text) return;
    this.shown = this.text;
    morph(this.el, render(this.text));
  }
}

// morph makes el's children those of frag, keeping each leading child that
// is already equal (same markup and text), so only what changed is redrawn.
function morph(el, frag) {
  const next = [...frag.childNodes];
  const old = [...el.childNodes];
  let i = 0;
  while (i < next.length && i < old.length && old[i].isEqualNode(next[i])) i++;
  for (const n of old.slice(i)) n.remove();
  el.append(...next.slice(i));
}
