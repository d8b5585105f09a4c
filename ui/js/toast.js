// The toast: one short message at the bottom of the page, with an optional
// action (Undo), gone after a few seconds. Any module may say something.

import { $ } from "./dom.js";

const SHOWN_MS = 6000;
let timer = null;

export function toast(text, action, onAction) {
  const t = $("toast");
  $("toast-text").textContent = text;
  const btn = $("toast-action");
  btn.hidden = !action;
  btn.textContent = action ?? "";
  btn.onclick = action
    ? () => {
        t.hidden = true;
        onAction();
      }
    : null;
  t.hidden = false;
  clearTimeout(timer);
  timer = setTimeout(() => (t.hidden = true), SHOWN_MS);
}

/** Whether the toast is on screen saying `text`. */
export function toastShows(text) {
  return !$("toast").hidden && $("toast-text").textContent === text;
}
