// The console's two languages. The strings live in strings.js (English and
// Simplified Chinese, the same keys); the language is the one chosen with
// the switch (kept in localStorage), else the browser's (navigator.language:
// zh-* is Chinese, anything else English). Static text in index.html names
// its string with data-i18n (text), data-i18n-placeholder, data-i18n-label
// (aria-label) or data-i18n-title; views built in JavaScript call t() and
// are redrawn when the language changes ("langchange" on window).

import { STRINGS } from './strings.js';

const KEY = 'agentchat.lang';
export const LANGS = ['en', 'zh'];

function initial() {
  let saved = null;
  try {
    saved = localStorage.getItem(KEY);
  } catch {
    saved = null;
  }
  if (LANGS.includes(saved)) return saved;
  return /^zh\b/i.test(navigator.language || '') ? 'zh' : 'en';
}

let current = initial();

/** lang is the language in use: "en" or "zh". */
export const lang = () => current;

/** locale is the BCP 47 tag of the language in use, for Intl and lang attributes. */
export const locale = () => (current === 'zh' ? 'zh-CN' : 'en');

/**
 * t returns the string of key in the language in use, with {name}
 * placeholders filled from vars. A missing key shows as itself (the tests
 * check that none is missing).
 */
export function t(key, vars = {}) {
  const s = STRINGS[current][key] ?? STRINGS.en[key] ?? key;
  return s.replace(/\{(\w+)\}/g, (m, name) => (vars[name] !== undefined ? String(vars[name]) : m));
}

/** setLang switches the language, keeps the choice, and redraws. */
export function setLang(l) {
  if (!LANGS.includes(l) || l === current) return;
  current = l;
  try {
    localStorage.setItem(KEY, l);
  } catch {
    // private mode: the choice lasts this page only
  }
  apply();
  window.dispatchEvent(new Event('langchange'));
}

/** apply translates the page's static text (and its lang attribute). */
export function apply(root = document) {
  document.documentElement.lang = locale();
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll('[data-i18n-placeholder]')) el.placeholder = t(el.dataset.i18nPlaceholder);
  for (const el of root.querySelectorAll('[data-i18n-label]')) el.setAttribute('aria-label', t(el.dataset.i18nLabel));
  for (const el of root.querySelectorAll('[data-i18n-title]')) el.title = t(el.dataset.i18nTitle);
  document.title = t('app.title');
}

/** dateTime formats a time for people, in the language in use. */
export function dateTime(d, opts = { dateStyle: 'medium', timeStyle: 'short' }) {
  return new Intl.DateTimeFormat(locale(), opts).format(d);
}
