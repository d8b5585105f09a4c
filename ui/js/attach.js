// Attachments on the page: files staged in the composer (paste anywhere,
// drop on the composer, or the picker), thumbnails with a remove button,
// files dropped on a pending ticket, and the strip of an instruction's files
// on the rail and in the ledger. Click a thumbnail to see it full size.
//
// The server decides what a file is from its bytes; the page only shows
// what it sent back. Thumbnails of stored files are the delivery copy, the
// full view the original; a staged file shows from a local blob: URL.

import { api, ApiError } from "./api.js";
import { $, el } from "./dom.js";
import { applyAnswer, KIND } from "./state.js";
import { toast } from "./toast.js";

/** The most files an instruction holds (the server says so too). */
export const MAX_FILES = 8;

/** What the server takes (crates/core/src/media.rs `ACCEPTED`). */
const ACCEPTED = "PNG, JPEG, WebP, GIF, BMP or TIFF images, or UTF-8 text files";
/** How much of a file is looked at here: the server reads all of it. */
const SNIFF_BYTES = 64 * 1024;
const MAGIC = [
  [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], // PNG
  [0xff, 0xd8, 0xff], // JPEG
  [0x47, 0x49, 0x46, 0x38], // GIF8
  [0x42, 0x4d], // BMP
  [0x49, 0x49, 0x2a, 0x00], // TIFF, little-endian
  [0x4d, 0x4d, 0x00, 0x2a], // TIFF, big-endian
];
const startsWith = (bytes, magic, at = 0) => magic.every((b, i) => bytes[at + i] === b);
const isWebp = (bytes) => startsWith(bytes, [0x52, 0x49, 0x46, 0x46]) && startsWith(bytes, [0x57, 0x45, 0x42, 0x50], 8);

/**
 * Why a file cannot be attached, from its first bytes, or null when it may
 * be (issue 39 §6): an image by its magic number, or UTF-8 text without NUL
 * (and not SVG: markup that can carry script). The server decides for good
 * (it reads the whole file and decodes images); this spares the person a
 * refusal only at "Queue".
 */
export async function refusal(file) {
  if (file.size === 0) return `“${file.name}” is empty.`;
  const bytes = new Uint8Array(await file.slice(0, SNIFF_BYTES).arrayBuffer());
  if (MAGIC.some((m) => startsWith(bytes, m)) || isWebp(bytes)) return null;
  let text;
  try {
    // `stream`: a character cut by the slice's end is not an error.
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes, { stream: file.size > SNIFF_BYTES });
  } catch {
    return `“${file.name}” is neither an image nor UTF-8 text.`;
  }
  if (text.includes("\0")) return `“${file.name}” is binary (it holds NUL bytes).`;
  const head = text.replace(/^\uFEFF/, "").slice(0, 4096).trimStart().toLowerCase();
  if (head.startsWith("<") && head.includes("<svg")) return `“${file.name}” is an SVG image, which can carry script.`;
  return null;
}

/** The files that may be attached, and one sentence on those that may not (or null). */
export async function screen(files) {
  const ok = [];
  const why = [];
  for (const file of files) {
    const no = await refusal(file);
    if (no) why.push(no);
    else ok.push(file);
  }
  const message = why.length ? `Not attached: ${why.join(" ")} Accepted: ${ACCEPTED}.` : null;
  return { ok, message };
}

/**
 * Files picked but not sent yet, shown as thumbnails in `strip` with a
 * remove button each. `onLimit` says why some were left out (too many, or
 * files that cannot be attached: `onRefuse`, by default the same); `onRemove`
 * runs after one is removed (to put focus back).
 */
export function createStaging(strip, { onLimit, onRefuse = onLimit, onRemove = () => {} }) {
  /** In order: { file, url } (a blob: URL for images). */
  let staged = [];
  function render() {
    strip.replaceChildren(
      ...staged.map((s, i) => {
        const li = thumb(s.file.name, s.url, s.url ? () => view(s.file.name, s.url) : null);
        const remove = el("button", "thumb__remove", "×");
        remove.type = "button";
        remove.setAttribute("aria-label", `Remove ${s.file.name}`);
        remove.addEventListener("click", () => {
          if (s.url) URL.revokeObjectURL(s.url);
          staged.splice(i, 1);
          render();
          onRemove();
        });
        li.append(remove);
        return li;
      }),
    );
    strip.hidden = staged.length === 0;
  }
  return {
    files: () => staged.map((s) => s.file),
    async add(files) {
      const { ok: list, message } = await screen([...files]);
      if (message) onRefuse(message);
      const room = Math.max(MAX_FILES - staged.length, 0);
      if (list.length > room) onLimit(`An instruction holds at most ${MAX_FILES} files; ${list.length - room} left out.`);
      for (const file of list.slice(0, room)) staged.push({ file, url: file.type.startsWith("image/") ? URL.createObjectURL(file) : null });
      render();
    },
    clear() {
      for (const s of staged) if (s.url) URL.revokeObjectURL(s.url);
      staged = [];
      render();
    },
  };
}

/** The composer's staged files (set up by initAttach). */
let composer = null;

export function stagedFiles() {
  return composer?.files() ?? [];
}

export function clearStaged() {
  composer?.clear();
}

/** Stage files in the composer (a template's). */
export function stageFiles(files) {
  composer?.add(files);
}

/** The longest run of a file name shown unbroken; longer runs are cut in the middle. */
const LONGEST_RUN = 16;

/**
 * A file's name for its tile: a line may break after a dot, dash or
 * underscore (a <wbr> there), never inside a word; a run too long for the
 * tile is shortened with "…" (the whole name is the tile's label and title).
 */
function tileName(name) {
  const span = el("span", "thumb__name");
  for (const part of name.split(/(?<=[._\-\s])/)) {
    const run = part.length > LONGEST_RUN ? `${part.slice(0, 7)}…${part.slice(-(LONGEST_RUN - 8))}` : part;
    if (span.childNodes.length) span.append(el("wbr"));
    span.append(document.createTextNode(run));
  }
  return span;
}

/** One thumbnail: an image, or a file chip for text. */
function thumb(name, src, open) {
  const li = el("li", "thumb");
  const btn = el("button", "thumb__open");
  btn.type = "button";
  btn.setAttribute("aria-label", `View ${name}`);
  btn.title = name;
  if (src) {
    const img = el("img");
    img.alt = name;
    img.loading = "lazy";
    img.decoding = "async";
    img.src = src;
    btn.append(img);
  } else {
    btn.classList.add("thumb__open--file");
    btn.append(tileName(name));
  }
  if (open) btn.addEventListener("click", open);
  else btn.disabled = true;
  li.append(btn);
  return li;
}

const fileUrl = (a, variant) => `api/attachments/${encodeURIComponent(a.id)}${variant ? `?variant=${variant}` : ""}`;

/**
 * The strip of a stored instruction's files. `removable` adds × buttons
 * (pending tickets); each thumbnail opens the full view.
 */
export function attachmentStrip(item, { removable = false } = {}) {
  const ul = el("ul", "thumbs");
  ul.setAttribute("aria-label", `${item.attachments.length} attached file${item.attachments.length === 1 ? "" : "s"}`);
  for (const a of item.attachments) {
    const image = a.kind === "image";
    const li = thumb(a.name, image ? fileUrl(a, "delivery") : null, () =>
      image ? view(a.name, fileUrl(a)) : window.open(fileUrl(a), "_blank", "noopener,noreferrer"),
    );
    li.dataset.attachment = a.id;
    if (removable) {
      const remove = el("button", "thumb__remove", "×");
      remove.type = "button";
      remove.dataset.action = "detach";
      remove.setAttribute("aria-label", `Remove ${a.name}`);
      remove.addEventListener("click", () => detach(item.id, a.id));
      li.append(remove);
    }
    ul.append(li);
  }
  return ul;
}

async function detach(id, attachmentId) {
  try {
    const { item } = await api.detach(id, attachmentId);
    applyAnswer(KIND.updated, item);
  } catch (err) {
    toast(err.status === 409 ? "Too late: an agent already took that instruction." : `Not removed: ${err.message}`);
  }
}

/** Add files to a pending ticket (dropped on it). */
export async function attachTo(id, dropped) {
  const { ok: files, message } = await screen(dropped);
  if (message) toast(message);
  if (!files.length) return;
  try {
    const { item } = await api.attach(id, files);
    applyAnswer(KIND.updated, item);
    toast(`${files.length === 1 ? "File" : `${files.length} files`} attached.`);
  } catch (err) {
    toast(err.status === 409 ? "Too late: an agent already took that instruction." : `Not attached: ${err.message}`);
  }
}

/** Full-size view in a dialog; Esc or a click closes it. */
function view(name, src) {
  const dialog = $("viewer");
  if (!src || !dialog) return;
  const img = $("viewer-img");
  img.src = src;
  img.alt = name;
  $("viewer-name").textContent = name;
  dialog.showModal();
}

/** The originals of a stored instruction's files, for "Undo" after a delete. */
export async function fetchOriginals(item) {
  const files = [];
  for (const a of item.attachments ?? []) {
    // An answer that is not the file: say what is lost (a network failure says itself).
    const file = await api.attachmentFile(a).catch((err) => {
      throw err instanceof ApiError ? new Error(`could not keep ${a.name} for Undo`) : err;
    });
    files.push(file);
  }
  return files;
}

const filesOf = (dt) => [...(dt?.files ?? [])];
const hasFiles = (dt) => [...(dt?.types ?? [])].includes("Files");

/** Paste anywhere on the page: files go to `staging`; text pastes as usual. */
export function pasteFilesInto(staging, focus) {
  document.addEventListener("paste", (e) => {
    const files = filesOf(e.clipboardData);
    if (!files.length) return;
    e.preventDefault();
    staging.add(files);
    focus();
  });
}

/** `refuse` says, under the composer, why files were not attached (what was typed stays). */
export function initAttach({ refuse = toast } = {}) {
  composer = createStaging($("composer-files"), { onLimit: toast, onRefuse: refuse, onRemove: () => $("composer-text").focus() });
  const stage = (files) => composer.add(files);
  const picker = $("composer-pick");
  $("composer-attach").addEventListener("click", () => picker.click());
  picker.addEventListener("change", () => {
    stage(picker.files);
    picker.value = "";
  });
  pasteFilesInto(composer, () => $("composer-text").focus());
  // Drop on the composer stages; drop on a pending ticket attaches to it.
  document.addEventListener("dragover", (e) => {
    if (!hasFiles(e.dataTransfer)) return;
    const target = e.target.closest?.("#composer, #rail li[data-id]");
    if (!target) return;
    e.preventDefault();
    e.dataTransfer.dropEffect = "copy";
    target.classList.add("is-drop");
  });
  document.addEventListener("dragleave", (e) => e.target.closest?.(".is-drop")?.classList.remove("is-drop"));
  document.addEventListener("drop", (e) => {
    const target = e.target.closest?.("#composer, #rail li[data-id]");
    document.querySelectorAll(".is-drop").forEach((n) => n.classList.remove("is-drop"));
    const files = filesOf(e.dataTransfer);
    if (!target || !files.length) return;
    e.preventDefault();
    if (target.id === "composer") stage(files);
    else attachTo(target.dataset.id, files);
  });
  initViewer();
}

/** The full-size view closes on a click (Esc closes any dialog). */
export function initViewer() {
  const dialog = $("viewer");
  dialog?.addEventListener("click", () => dialog.close());
}
