// An agent turned away for want of the API token: the server names the last
// request it refused so since it started (`server.refused_without_token`),
// and an agent whose configuration lacks the token (or has an old one)
// otherwise fails with nothing shown. Said at the top of the page with what
// to do, its time kept fresh, until the person dismisses it (remembered per
// refusal: a later one shows again). The engine records only refusals at
// /mcp (an agent's): a page's own requests before it signs in are not one.

import { $, el } from "./dom.js";
import { on, state } from "./state.js";
import { every20s, exact, relative } from "./time.js";

const KEY = "local-mcp.refused-dismissed";

/** The refusal to show, or null. */
function refusal() {
  const r = state.status?.server?.refused_without_token;
  return r && localStorage.getItem(KEY) !== r.at ? r : null;
}

/** The `at` of the refusal the note says now (its sentence is built once, its time refreshed). */
let shown = null;

function render() {
  const r = refusal();
  const note = $("refused-note");
  note.hidden = !r;
  if (!r) {
    shown = null;
    return;
  }
  const when = relative(r.at);
  if (shown === r.at) {
    const time = $("refused-text").querySelector("time");
    if (time.textContent !== when) time.textContent = when;
    return;
  }
  shown = r.at;
  const time = el("time", null, when);
  time.dateTime = r.at;
  time.title = exact(r.at);
  const who = r.user_agent.trim() ? [" (", el("span", "mono", r.user_agent), ")"] : [];
  const go = el("button", "linkish", "Connect agents");
  go.type = "button";
  go.dataset.open = "clients-details";
  $("refused-text").replaceChildren(
    "An agent was turned away ",
    time,
    ": it did not send this server's API token",
    ...who,
    ". Update its configuration: run ",
    el("code", "mono", "local-mcp-server connect --update"),
    ", or use ",
    go,
    ".",
  );
}

export function initRefusedNote() {
  on("status", render);
  every20s(render);
  $("refused-dismiss").addEventListener("click", () => {
    if (shown) localStorage.setItem(KEY, shown);
    render();
    $("composer-text").focus();
  });
}
