// The access token in Settings: require one, regenerate it, or stop
// requiring it. The token is shown once, right after it is made; the page
// never reads it otherwise (its session is an HttpOnly cookie).

import { api } from "./api.js";
import { $ } from "./dom.js";

const WORDS = {
  off: "No token: any program on this computer can use local-mcp.",
  on: "A token is required for the API and for agents (/mcp).",
  environment: "A token is required. It is set by API_TOKEN, so change it there.",
  none: "No token, and this server cannot manage one.",
};

function render(state) {
  const words = state.source === "environment" ? WORDS.environment : !state.changeable ? WORDS.none : state.required ? WORDS.on : WORDS.off;
  $("token-state").textContent = words;
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
    if (replacing && !confirm("Make a new token? Agents using the current one are refused until you update them.")) return;
    try {
      const r = await api.changeToken("regenerate");
      // The state line first, so the token never shows beside "No token".
      await loadToken();
      $("token-value").value = r.token;
      $("token-reveal").hidden = false;
      $("token-value").select();
      onChange();
    } catch (err) {
      $("token-state").textContent = err.message;
    }
  });
  $("token-remove").addEventListener("click", async () => {
    if (!confirm("Stop requiring a token? Any program on this computer could then use local-mcp.")) return;
    try {
      await api.changeToken("remove");
      $("token-value").value = "";
      $("token-reveal").hidden = true;
      await loadToken();
      onChange();
    } catch (err) {
      $("token-state").textContent = err.message;
    }
  });
}
