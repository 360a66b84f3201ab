// Attachments: the composer's attach button, drag and drop onto the chat and
// paste into the message box put files in a tray above the composer. Each
// is uploaded at once (POST /v1/files, through api.js) and the message then
// references it by id (`attachments` of POST /v1/agent/chat). In the thread,
// a user message's file parts show as image thumbnails or as file chips
// that download the file.
//
// A stored file's bytes are read with the token in the Authorization header
// (api.js's fileBlob), never with the token in a URL, and shown from a
// blob: URL; an image chosen here is previewed from the File itself. The
// server sniffs each file's type and refuses what it does not take; the
// tray shows its message.

import { upload, fileBlob } from './api.js';
import { h } from './dom.js';
import { t } from './i18n.js';

/** size formats a byte count for a chip: 980 B, 12.4 KB, 3.1 MB. */
function size(n) {
  if (!(n >= 0)) return '';
  if (n < 1000) return `${n} B`;
  if (n < 1e6) return `${(n / 1e3).toFixed(1)} KB`;
  return `${(n / 1e6).toFixed(1)} MB`;
}

const isImage = (mediaType) => /^image\//.test(mediaType || '');

/**
 * Tray holds the files of the message being written: each is uploaded as
 * soon as it is added, and ready() lists those uploaded, for send.
 */
export class Tray {
  /**
   * @param {{tray: HTMLElement, onChange?: () => void}} opt
   */
  constructor(opt) {
    this.el = opt.tray;
    this.onChange = opt.onChange ?? (() => {});
    /** @type {{file: File, chip: HTMLElement, preview: string, done?: any, error?: string, pending: boolean}[]} */
    this.items = [];
  }

  /** add uploads files and shows each in the tray. */
  add(files) {
    for (const file of files) {
      const item = { file, preview: isImage(file.type) ? URL.createObjectURL(file) : '', pending: true, chip: null };
      item.chip = this.chip(item);
      this.items.push(item);
      this.el.append(item.chip);
      upload(file)
        .then((f) => {
          item.done = f;
        })
        .catch((e) => {
          item.error = e.message;
        })
        .finally(() => {
          item.pending = false;
          if (!this.items.includes(item)) return;
          const next = this.chip(item);
          item.chip.replaceWith(next);
          item.chip = next;
          this.onChange();
        });
    }
    this.draw();
  }

  chip(item) {
    const name = item.file.name || t('attach.pasted');
    const remove = h('button', { type: 'button', class: 'ghost small attach-remove', 'aria-label': t('attach.remove', { name }), title: t('attach.remove', { name }),
      onclick: () => this.remove(item) }, '×');
    const state = item.pending ? t('attach.uploading') : item.error ? item.error : size(item.done?.size);
    return h('li', { class: `attach-chip${item.error ? ' failed' : ''}${item.pending ? ' pending' : ''}`, 'data-name': name },
      item.preview ? h('img', { class: 'attach-thumb', src: item.preview, alt: '' }) : h('span', { class: 'icon-file', 'aria-hidden': 'true' }),
      h('span', { class: 'attach-name' }, name),
      h('span', { class: 'attach-state muted small', role: item.error ? 'alert' : false }, state),
      remove);
  }

  remove(item) {
    this.items = this.items.filter((x) => x !== item);
    item.chip.remove();
    this.draw();
    this.onChange();
  }

  draw() {
    this.el.hidden = this.items.length === 0;
  }

  /** busy: a file is still uploading. */
  busy() {
    return this.items.some((x) => x.pending);
  }

  /** ready lists the uploaded files ({id, name, mediaType, size, preview}). */
  ready() {
    return this.items.filter((x) => x.done).map((x) => ({ ...x.done, preview: x.preview }));
  }

  /** clear empties the tray after a send; the previews live on in the thread. */
  clear() {
    this.items = [];
    this.el.replaceChildren();
    this.draw();
  }

  /** redraw re-renders the chips (the language changed). */
  redraw() {
    for (const item of this.items) {
      const next = this.chip(item);
      item.chip.replaceWith(next);
      item.chip = next;
    }
  }
}

/**
 * wire connects the attach button, its file input, drop on zone and paste
 * into input to tray.
 */
export function wire({ tray, button, picker, zone, input }) {
  button.addEventListener('click', () => picker.click());
  picker.addEventListener('change', () => {
    tray.add([...picker.files]);
    picker.value = '';
    input.focus();
  });
  const hasFiles = (e) => [...(e.dataTransfer?.types ?? [])].includes('Files');
  zone.addEventListener('dragover', (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault();
    zone.classList.add('dropping');
  });
  zone.addEventListener('dragleave', (e) => {
    if (e.target === zone || !zone.contains(e.relatedTarget)) zone.classList.remove('dropping');
  });
  zone.addEventListener('drop', (e) => {
    zone.classList.remove('dropping');
    if (!hasFiles(e)) return;
    e.preventDefault();
    tray.add([...e.dataTransfer.files]);
  });
  input.addEventListener('paste', (e) => {
    const files = [...(e.clipboardData?.files ?? [])];
    if (!files.length) return;
    e.preventDefault();
    tray.add(files);
  });
}

/**
 * filesOf reads the file parts of a stored user message ({type: "file",
 * fileId, name, mediaType, size}).
 */
export function filesOf(parts) {
  if (!Array.isArray(parts)) return [];
  return parts.filter((p) => p?.type === 'file' && p.fileId).map((p) => ({ id: p.fileId, name: p.name, mediaType: p.mediaType, size: p.size }));
}

/**
 * withFiles adds a message's files to its bubble: images as thumbnails,
 * other files as chips that download them; none adds a text node, so the
 * bubble's textContent is still the message's text. It returns the bubble.
 * @param {HTMLElement} bubble
 * @param {{id: string, name: string, mediaType: string, size: number, preview?: string}[]} files
 */
export function withFiles(bubble, files) {
  if (!files?.length) return bubble;
  bubble.append(h('div', { class: 'msg-files' }, files.map(fileView)));
  return bubble;
}

function fileView(f) {
  const name = f.name || f.id;
  if (isImage(f.mediaType)) {
    const img = h('img', { class: 'msg-thumb', alt: name, title: name });
    if (f.preview) img.src = f.preview;
    else {
      fileBlob(f.id)
        .then((b) => (img.src = URL.createObjectURL(b)))
        .catch(() => img.replaceWith(gone(name)));
    }
    return h('figure', { class: 'msg-image', 'data-file-id': f.id }, img);
  }
  // The name and size are drawn from data-label (CSS generated content),
  // not text nodes: the bubble's text stays the message's own, which the
  // thread reads back (an edit starts from it).
  const chip = h('button', { type: 'button', class: 'file-chip', 'data-file-id': f.id, 'data-label': `${name} · ${size(f.size)}`,
    title: t('attach.download', { name }), 'aria-label': t('attach.download', { name }) },
  h('span', { class: 'icon-file', 'aria-hidden': 'true' }));
  chip.addEventListener('click', () => {
    fileBlob(f.id)
      .then((b) => {
        const url = URL.createObjectURL(b);
        const a = h('a', { href: url, download: name, hidden: true });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 60_000);
      })
      .catch(() => chip.replaceWith(gone(name)));
  });
  return chip;
}

function gone(name) {
  const label = t('attach.unavailable', { name });
  return h('span', { class: 'file-chip gone muted small', 'data-label': label, role: 'img', 'aria-label': label });
}
