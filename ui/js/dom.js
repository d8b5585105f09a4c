// Tiny DOM helpers shared by the feature modules. Text goes in with
// textContent only: server text is never parsed as HTML.

export const $ = (id) => document.getElementById(id);

/** A new element with an optional class and text. */
export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

const ICONS = {
  up: "M12 5l-7 7h4v7h6v-7h4z",
  down: "M12 19l7-7h-4V5H9v7H5z",
  edit: "M4 17.5V20h2.5L17 9.5 14.5 7 4 17.5zM19.7 6.8a1 1 0 0 0 0-1.4l-1.1-1.1a1 1 0 0 0-1.4 0L16 5.5 18.5 8l1.2-1.2z",
  delete: "M7 6h10l-1 14H8L7 6zm3-3h4l1 2H9l1-2z",
};

/** A labelled icon button whose data-action names the icon (up, down, edit, delete). */
export function iconButton(action, label) {
  const b = el("button", "icon-btn");
  b.type = "button";
  b.dataset.action = action;
  b.setAttribute("aria-label", label);
  b.title = label;
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("viewBox", "0 0 24 24");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS("http://www.w3.org/2000/svg", "path");
  path.setAttribute("d", ICONS[action]);
  path.setAttribute("fill", "currentColor");
  svg.append(path);
  b.append(svg);
  return b;
}
