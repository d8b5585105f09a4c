// Search hits shown where they are: the words of a ledger search marked in
// an instruction's text and in its report, matched the way the server
// matches them (docs/ARCHITECTURE.md "History search": each word typed is
// the start of a word, case and accents aside). Text goes in as text nodes
// and <mark> elements only; nothing here parses HTML.

import { el } from "./dom.js";

/** Lower case without accents, as the search index compares words. */
const fold = (s) => s.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

/** A word as the index sees one: letters and digits (with their accents). */
const WORD = /[\p{L}\p{N}\p{M}]+/gu;

/** The words of what a person typed, folded (the server splits it the same way). */
export function wordsOf(typed) {
  return [...new Set((typed.match(WORD) ?? []).map(fold).filter(Boolean))];
}

/** How many UTF-16 units of `token` make up the folded prefix `word`. */
function prefixLength(token, word) {
  let folded = "";
  let n = 0;
  for (const ch of token) {
    if (folded.length >= word.length) break;
    folded += fold(ch);
    n += ch.length;
  }
  return n;
}

/**
 * Put `text` into `target` with the starts of words that match one of
 * `words` marked. True when every word was found in it.
 */
export function markWords(target, text, words) {
  if (!words.length) {
    target.append(text);
    return true;
  }
  const found = new Set();
  let last = 0;
  for (const m of text.matchAll(WORD)) {
    const token = fold(m[0]);
    const word = words.find((w) => token.startsWith(w));
    if (!word) continue;
    found.add(word);
    const end = m.index + prefixLength(m[0], word);
    if (m.index > last) target.append(text.slice(last, m.index));
    target.append(el("mark", "hit", text.slice(m.index, end)));
    last = end;
  }
  if (last < text.length) target.append(text.slice(last));
  return words.every((w) => found.has(w));
}

/** Mark `words` in a report's rendered body (its text nodes), and unclamp it so the hits show. */
export function markReport(body, words) {
  if (!body) return;
  const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const fragment = document.createDocumentFragment();
    markWords(fragment, node.data, words);
    if (fragment.querySelector("mark")) node.replaceWith(fragment);
  }
  if (body.dataset.clamped === "true") {
    body.dataset.clamped = "false";
    const more = body.parentElement.querySelector(".ticket__more");
    if (more) more.textContent = "Show less";
  }
}
