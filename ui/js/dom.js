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
