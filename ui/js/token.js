// The access token in Settings: require one, regenerate it, or stop
// requiring it. The page shows the token once, right after it is made, and
// never reads it otherwise (its session is an HttpOnly cookie);
// `local-mcp-server token` prints it any time. Who "no token" lets in
// depends on the same-account setting (`same_user_only`), so the line
// follows the settings too.

import { api } from "./api.js";
import { $ } from "./dom.js";
import { on, state as page } from "./state.js";

/** Whether only this account's programs may connect (the same-account setting, on by default). */
const ownAccountOnly = () => page.settings?.same_user_only !== false;

const WORDS = {
  // With the same-account setting on, other accounts are refused anyway: say who can.
  off: () =>
    ownAccountOnly() ? "No token: programs of your account on this computer can use local-mcp." : "No token: any program on this computer can use local-mcp.",
  on: () => "A token is required for the API and for agents (/mcp).",
  environment: () => "A token is required. It is set by API_TOKEN, so change it there.",
  none: () => "No token, and this server cannot manage one.",
};

/** How agents get the token into their configuration: said wherever one is refused for want of it. */
const UPDATE = "(local-mcp-server connect --update rewrites it)";

const CONFIRM = {
  require: () => `Require a token? Agents connected now will be refused until their configuration has the token ${UPDATE}.`,
  regenerate: () => `Make a new token? Agents using the current one will be refused until their configuration has the new one ${UPDATE}.`,
  remove: () =>
    ownAccountOnly()
      ? "Stop requiring a token? Programs of your account on this computer could then use local-mcp without one."
      : "Stop requiring a token? Any program on this computer could then use local-mcp.",
};

/** The token's state as last read, to say it again when the same-account setting changes. */
let last = null;

function render(state = last) {
  if (!state) return;
  last = state;
  const words = state.source === "environment" ? WORDS.environment : !state.changeable ? WORDS.none : state.required ? WORDS.on : WORDS.off;
  const text = words();
  if ($("token-state").textContent !== text) $("token-state").textContent = text;
  const create = $("token-new");
  create.hidden = !state.changeable;
  create.textContent = state.required ? "New token" : "Require a token";
  $("token-remove").hidden = !(state.changeable && state.required);
}

export async function loadToken() {
  try {
    render(await api.tokenState());
  } catch {
    /* the banner or the token gate already says why */
  }
}

/** `onChange` runs after a change (e.g. to refresh the client snippets). */
export function initToken(onChange) {
  $("token-new").addEventListener("click", async () => {
    const replacing = $("token-remove").hidden === false;
    if (!confirm((replacing ? CONFIRM.regenerate : CONFIRM.require)())) return;
    try {
      const r = await api.changeToken("regenerate");
      // The state line first, so the token never shows beside "No token".
      await loadToken();
      $("token-value").value = r.token;
      $("token-reveal").hidden = false;
      $("token-value").select();
      onChange();
    } catch (err) {
      last = null; // the error stays until the next change reads the state again
      $("token-state").textContent = err.message;
    }
  });
  $("token-remove").addEventListener("click", async () => {
    if (!confirm(CONFIRM.remove())) return;
    try {
      await api.changeToken("remove");
      $("token-value").value = "";
      $("token-reveal").hidden = true;
      await loadToken();
      onChange();
    } catch (err) {
      last = null; // the error stays until the next change reads the state again
      $("token-state").textContent = err.message;
    }
  });
  // The same-account setting changes who "no token" lets in.
  on("status", () => render());
  on("settings", () => render());
}
