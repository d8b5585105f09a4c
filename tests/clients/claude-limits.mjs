// Claude Code's limits on an MCP tool call, read out of its installed
// package (2.x ships a Bun-compiled binary whose minified JavaScript is
// stored in it as text). Minified names change every release, so each value
// is found from a stable anchor (a feature flag's or an environment
// variable's name), and the identifier it uses is then resolved to the
// numeric literal assigned to it nearby. A missing anchor is an error: the
// code moved, and someone must look again.

import { existsSync, readFileSync, realpathSync } from "node:fs";
import { join } from "node:path";

const ID = "[\\w$]+";
const NUM = "(\\d[\\d_]*(?:\\.\\d+)?(?:e\\d+)?)";

/** The numeric literal assigned to `name` (a var/let/const list), nearest before `at`. */
function literal(text, name, at) {
  const re = new RegExp(`(?:^|[,;{\\s(]|var |let |const )${name.replace(/\$/g, "\\$")}=${NUM}(?=[,;\\s)])`, "g");
  let best = null;
  for (const m of text.matchAll(re)) if (m.index <= at || best === null) best = m;
  return best ? Number(best[1].replace(/_/g, "")) : null;
}

/**
 * `{version, autoBackgroundMs, idleTimeoutRemoteMs}` of the Claude Code
 * package at `pkg` (its folder under node_modules).
 */
export function claudeCodeLimits(pkg) {
  const file = [join(pkg, "bin", "claude.exe"), join(pkg, "cli.js")].find(existsSync);
  if (!file) throw new Error(`no claude binary or cli.js under ${pkg}`);
  const buf = readFileSync(realpathSync(file));
  const around = (anchor, before = 6000, after = 2000) => {
    const i = buf.indexOf(anchor);
    if (i < 0) return null;
    return { text: buf.toString("latin1", Math.max(0, i - before), i + after), at: Math.min(i, before) };
  };
  const version = /\/\/ Version: (\d+\.\d+\.\d+)/.exec(around("// Version: ", 0, 40)?.text ?? "")?.[1] ?? null;

  // `return b("tengu_mcp_auto_background",!0)?ke:0` with `var ke=120000` nearby (2.1.330).
  const bg = around('"tengu_mcp_auto_background"');
  const bgName = bg && new RegExp(`"tengu_mcp_auto_background",\\s*(?:!0|true)\\)\\s*\\?\\s*(${ID})\\s*:\\s*0`).exec(bg.text);
  if (!bgName) throw new Error("Claude Code's auto-background anchor (tengu_mcp_auto_background) is gone: look again by hand");
  const autoBackgroundMs = literal(bg.text, bgName[1], bg.at);

  // `CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT??(o==="stdio"?zm:ci)` with `var ci=300000,zm=1800000`.
  const idle = around("CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT??");
  const idleNames = idle && new RegExp(`CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT\\?\\?\\(\\s*${ID}\\s*===\\s*"stdio"\\s*\\?\\s*(${ID})\\s*:\\s*(${ID})\\s*\\)`).exec(idle.text);
  if (!idleNames) throw new Error("Claude Code's idle-timeout anchor (CLAUDE_CODE_MCP_TOOL_IDLE_TIMEOUT) is gone: look again by hand");
  const idleTimeoutRemoteMs = literal(idle.text, idleNames[2], idle.at);
  return { file, version, autoBackgroundMs, idleTimeoutRemoteMs };
}
