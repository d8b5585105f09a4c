// Templates: instructions saved under a short name, with optional files.
// Typing "/" at the start of the composer (or of the quick-add box) lists
// them; picking one puts its text in the box and stages its files, to edit
// or queue as they are. Settings lists, saves and deletes them. What is
// queued is what the box and the staged files hold.

import { api } from "./api.js";
import { $, el, iconButton } from "./dom.js";
import { stageFiles } from "./attach.js";
import { toast } from "./toast.js";

const MAX_SHOWN = 8;
let cache = null;

async function templates(refresh) {
  if (refresh || !cache) {
    try {
      cache = (await api.templates()).items;
    } catch {
      cache = cache ?? [];
    }
  }
  return cache;
}

function firstLine(text) {
  const line = text.split("\n", 1)[0];
  return line.length < text.length ? `${line} …` : line;
}

function filesNote(t) {
  const n = t.files?.length ?? 0;
  return n ? ` · ${n} file${n === 1 ? "" : "s"}` : "";
}

/**
 * `/name` completion on a text box. `list` is an empty <ul> after it. While
 * the list is open, Arrow keys move, Enter or Tab picks, Escape closes — and
 * those keys do nothing else (the box's own Enter or Escape waits). A picked
 * template's files go to `stage` (as File objects); `fail` says why not.
 */
export function attachTemplateCompletion(box, list, { stage, fail }) {
  list.setAttribute("role", "listbox");
  list.setAttribute("aria-label", "Templates");
  list.hidden = true;
  box.setAttribute("aria-autocomplete", "list");
  box.setAttribute("aria-controls", list.id);
  let shown = [];
  let active = 0;
  // Each keystroke (and Escape) outdates the lists asked for before it.
  let asked = 0;

  const close = () => {
    asked += 1;
    list.hidden = true;
    list.replaceChildren();
    shown = [];
    box.removeAttribute("aria-activedescendant");
  };
  const mark = () => {
    [...list.children].forEach((li, n) => li.setAttribute("aria-selected", String(n === active)));
    const current = list.children[active];
    if (current && shown.length) box.setAttribute("aria-activedescendant", current.id);
  };
  const pick = async (t) => {
    box.value = t.content;
    close();
    box.focus();
    box.setSelectionRange(box.value.length, box.value.length);
    box.dispatchEvent(new Event("input", { bubbles: true }));
    try {
      const files = await Promise.all((t.files ?? []).map((f) => api.templateFile(t.name, f)));
      if (files.length) stage(files);
    } catch (err) {
      fail(err.message);
    }
  };
  const open = async () => {
    if (!/^\/[A-Za-z0-9._-]*$/.test(box.value)) return close();
    const mine = ++asked;
    const all = await templates(box.value === "/");
    if (mine !== asked) return; // a newer keystroke, or Escape, took over
    const word = box.value.slice(1).toLowerCase();
    shown = [...all.filter((t) => t.name.startsWith(word)), ...all.filter((t) => !t.name.startsWith(word) && t.name.includes(word))].slice(0, MAX_SHOWN);
    active = 0;
    if (!shown.length) {
      const none = el("li", "completions__none", all.length ? `No template matches “${word}”.` : "No templates yet: save one in Settings.");
      none.setAttribute("role", "option");
      none.setAttribute("aria-disabled", "true");
      none.id = `${list.id}-none`;
      list.replaceChildren(none);
      list.hidden = false;
      box.removeAttribute("aria-activedescendant");
      return;
    }
    list.replaceChildren(
      ...shown.map((t, n) => {
        const li = el("li", "completions__item");
        li.id = `${list.id}-${n}`;
        li.setAttribute("role", "option");
        li.append(el("span", "completions__name", `/${t.name}`), el("span", "completions__text", firstLine(t.content) + filesNote(t)));
        li.addEventListener("mousedown", (e) => e.preventDefault()); // keep the box focused
        li.addEventListener("click", () => pick(t));
        return li;
      }),
    );
    list.hidden = false;
    mark();
  };

  box.addEventListener("input", open);
  box.addEventListener("blur", () => setTimeout(close, 100));
  // Registered before the box's other key handlers: while the list is open its keys are ours.
  box.addEventListener("keydown", (e) => {
    if (list.hidden) return;
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopImmediatePropagation();
      close();
      return;
    }
    if (!shown.length) return;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      e.stopImmediatePropagation();
      active = (active + (e.key === "ArrowDown" ? 1 : shown.length - 1)) % shown.length;
      mark();
    } else if ((e.key === "Enter" && !e.shiftKey && !e.isComposing) || e.key === "Tab") {
      e.preventDefault();
      e.stopImmediatePropagation();
      pick(shown[active]);
    }
  });
}

// ---- the list in Settings ---------------------------------------------------

function row(t) {
  const li = el("li", "template");
  li.dataset.name = t.name;
  const name = el("code", "template__name mono", `/${t.name}`);
  const text = el("span", "template__text", firstLine(t.content));
  const files = el("ul", "template__files");
  files.setAttribute("aria-label", `Files of ${t.name}`);
  for (const f of t.files ?? []) {
    const chip = el("li", "chip", f.name);
    const remove = el("button", "chip__remove", "×");
    remove.type = "button";
    remove.setAttribute("aria-label", `Remove ${f.name} from ${t.name}`);
    remove.addEventListener("click", async () => {
      try {
        await api.removeTemplateFile(t.name, f.ordinal);
        renderList(true);
      } catch (err) {
        toast(`Not removed: ${err.message}`);
      }
    });
    chip.append(remove);
    files.append(chip);
  }
  files.hidden = !(t.files ?? []).length;
  const edit = iconButton("edit", `Edit template ${t.name}`);
  const del = iconButton("delete", `Delete template ${t.name}`);
  edit.addEventListener("click", () => {
    $("template-name").value = t.name;
    $("template-text").value = t.content;
    $("template-text").focus();
  });
  del.addEventListener("click", async () => {
    try {
      await api.deleteTemplate(t.name);
      toast(`Template ${t.name} deleted.`);
      renderList(true);
    } catch (err) {
      toast(`Not deleted: ${err.message}`);
    }
  });
  li.append(name, text, edit, del, files);
  return li;
}

async function renderList(refresh) {
  const items = await templates(refresh);
  $("templates-list").replaceChildren(...items.map(row));
  $("templates-empty").hidden = items.length > 0;
}

export function initTemplates() {
  attachTemplateCompletion($("composer-text"), $("composer-completions"), {
    stage: stageFiles,
    fail: (msg) => toast(`The template's files were not added: ${msg}`),
  });
  $("settings-details").addEventListener("toggle", (e) => {
    if (e.target.open) renderList(true);
  });
  $("template-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const error = $("template-error");
    try {
      let { item } = await api.saveTemplate($("template-name").value.trim(), $("template-text").value);
      const picked = [...$("template-files").files];
      if (picked.length) ({ item } = await api.addTemplateFiles(item.name, picked));
      error.hidden = true;
      $("template-name").value = "";
      $("template-text").value = "";
      $("template-files").value = "";
      toast(`Template ${item.name} saved: type /${item.name} in the composer.`);
      renderList(true);
    } catch (err) {
      error.textContent = `Not saved: ${err.message}`;
      error.hidden = false; // what was typed stays
    }
  });
}
