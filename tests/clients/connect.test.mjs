// `local-mcp-server connect <client>` against the real clients, each
// installed from its registry and run in a fresh HOME: after connect, the
// client's own command reads its configuration back and (where it checks
// health without an account) reaches the server — with a token required,
// so the header each client needs is tested too. Then `disconnect` takes the
// entry out again and the client no longer lists it.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import { serverBin, startServer, until } from "./harness.mjs";

const exec = promisify(execFile);
const TOKEN = "connect-test-token-0123456789";

describe("connect, read back by the real clients", () => {
  let server;
  // One cache for all the homes (Copilot CLI unpacks itself there: 235 MB a
  // home otherwise), and every home removed at the end.
  const cache = mkdtempSync(join(tmpdir(), "connect-cache-"));
  const homes = [];
  before(async () => {
    // Info logs: the server says which client opened and whose wait limit applies.
    server = await startServer({ env: { API_TOKEN: TOKEN, LOG_LEVEL: "info" } });
  });

  /** The server recognised a client as it names itself (crates/serve/src/mcp/client_limits.rs). */
  const recognised = (name, within) =>
    until(
      () => server.log.some((l) => l.includes(`an MCP client opened client="${name}" `) && l.includes(`waits_within="${within}"`)),
      { what: `the server to log ${name}'s opening` },
    );
  after(async () => {
    await server?.stop();
    for (const dir of [...homes, cache]) rmSync(dir, { recursive: true, force: true });
  });

  /** A fresh home with a project folder; `run` runs a command there. */
  function home() {
    const dir = mkdtempSync(join(tmpdir(), "connect-home-"));
    homes.push(dir);
    const project = join(dir, "work");
    mkdirSync(project);
    const env = {
      ...process.env,
      HOME: dir,
      XDG_CONFIG_HOME: join(dir, ".config"),
      XDG_CACHE_HOME: cache,
      LOCAL_MCP_CONNECTION_FILE: server.connectionFile,
      DISABLE_AUTOUPDATER: "1",
      NO_COLOR: "1",
    };
    for (const k of ["CODEX_HOME", "CLAUDE_CONFIG_DIR", "COPILOT_HOME", "LOCAL_MCP_URL", "LOCAL_MCP_TOKEN"]) delete env[k];
    const run = async (cmd, args, cwd = project) => {
      const { stdout, stderr } = await exec(cmd, args, { env, cwd, timeout: 120_000 });
      // Colours stripped: some clients ignore NO_COLOR.
      return (stdout + stderr).replace(/\x1b\[[0-9;]*m/g, "");
    };
    return { dir, project, env, run };
  }

  test("Claude Code, user scope: `claude mcp list` reports it connected; disconnect removes it", async () => {
    const h = home();
    // What every account can read: the command line of each \`claude\` that connect runs.
    // A shim first on PATH notes it (from /proc, as another account would) and runs the real one.
    const shims = join(h.dir, "shims");
    mkdirSync(shims);
    const real = (await exec("bash", ["-c", "command -v claude"], { env: h.env })).stdout.trim();
    const seen = join(h.dir, "argv.log");
    writeFileSync(join(shims, "claude"), `#!/bin/sh\ntr '\\0' ' ' < /proc/$$/cmdline >> '${seen}'\necho >> '${seen}'\nexec '${real}' "$@"\n`, { mode: 0o755 });
    h.env.PATH = `${shims}:${h.env.PATH}`;
    const said = await h.run(serverBin, ["connect", "claude-code"]);
    assert.match(said, /wrote the local-mcp entry/);
    const argv = readFileSync(seen, "utf8");
    assert.match(argv, /mcp add-json --scope user local-mcp -/, argv);
    assert.ok(!argv.includes(TOKEN), `the token was in a command line: ${argv}`);
    const listed = await h.run("claude", ["mcp", "list"], h.dir);
    assert.match(listed, new RegExp(`local-mcp: ${server.mcpUrl} \\(HTTP\\) - ✔ Connected`), listed);
    // It opens with 2026-07-28's server/discover, naming itself in _meta: its waits keep inside 300 s.
    await recognised("claude-code", "Claude Code");
    assert.match(await h.run(serverBin, ["connect", "claude-code"]), /already connected/);
    await h.run(serverBin, ["disconnect", "claude-code"]);
    assert.doesNotMatch(await h.run("claude", ["mcp", "list"], h.dir), /local-mcp/);
  });

  test("Claude Code, project scope (.mcp.json) with the Stop hook", async () => {
    const h = home();
    await h.run(serverBin, ["connect", "claude-code", "--project", h.project, "--queue", "work", "--hooks"]);
    // Claude Code asks once before it uses a project's servers: the person
    // trusts the folder and approves the server (what its dialogs record).
    writeFileSync(join(h.project, ".claude", "settings.local.json"), JSON.stringify({ enabledMcpjsonServers: ["local-mcp"] }));
    writeFileSync(join(h.dir, ".claude.json"), JSON.stringify({ projects: { [h.project]: { hasTrustDialogAccepted: true } } }));
    const listed = await h.run("claude", ["mcp", "list"]);
    assert.match(listed, new RegExp(`local-mcp: ${server.mcpUrl}/q/work \\(HTTP\\) - ✔ Connected`), listed);
    const settings = JSON.parse(readFileSync(join(h.project, ".claude", "settings.json"), "utf8"));
    // The server's database is not the default one: the hook is told which it is.
    const database = join(realpathSync(server.dir), "queue.sqlite3");
    assert.equal(settings.hooks.Stop[0].hooks[0].command, `${serverBin} hook claude-stop --db-path ${database} --queue work`);
  });

  test("Gemini CLI: `gemini mcp list` reports it connected", async () => {
    const h = home();
    await h.run(serverBin, ["connect", "gemini-cli"]);
    // Gemini CLI hides user-level servers in folders the person has not trusted.
    writeFileSync(join(h.dir, ".gemini", "trustedFolders.json"), JSON.stringify({ [h.project]: "TRUST_FOLDER" }));
    const listed = await h.run("gemini", ["mcp", "list"]);
    assert.match(listed, new RegExp(`local-mcp: ${server.mcpUrl} \\(http\\) - Connected`), listed);
    await h.run(serverBin, ["disconnect", "gemini-cli"]);
    assert.doesNotMatch(await h.run("gemini", ["mcp", "list"]), /local-mcp/);
  });

  test("Codex: `codex mcp get` reads the entry, its header and timeout; the config still parses", async () => {
    const h = home();
    mkdirSync(join(h.dir, ".codex"));
    writeFileSync(join(h.dir, ".codex", "config.toml"), '# mine\nmodel = "o3"\n');
    await h.run(serverBin, ["connect", "codex"]);
    const got = await h.run("codex", ["mcp", "get", "local-mcp"]);
    assert.match(got, new RegExp(`url: ${server.mcpUrl}`), got);
    assert.match(got, /http_headers: Authorization=\S+/, got);
    assert.match(got, /tool_timeout_sec: 86460/, got);
    assert.match(await h.run("codex", ["mcp", "list"]), /local-mcp\s+http:\/\/127\.0\.0\.1:\d+\/mcp\s.*enabled/);
    await h.run(serverBin, ["disconnect", "codex"]);
    assert.equal(readFileSync(join(h.dir, ".codex", "config.toml"), "utf8"), '# mine\nmodel = "o3"\n');
  });

  test("GitHub Copilot CLI: `copilot mcp get` reads the entry and its timeout", async () => {
    const h = home();
    await h.run(serverBin, ["connect", "copilot-cli"]);
    const got = await h.run("copilot", ["mcp", "get", "local-mcp"]);
    assert.match(got, new RegExp(`URL: ${server.mcpUrl}`), got);
    assert.match(got, /Timeout: 86460000ms/, got);
    await h.run(serverBin, ["disconnect", "copilot-cli"]);
    assert.doesNotMatch(await h.run("copilot", ["mcp", "list"]), /local-mcp/);
  });

  test("opencode: `opencode mcp list` reports it connected", async () => {
    const h = home();
    await h.run(serverBin, ["connect", "opencode"]);
    const listed = await h.run("opencode", ["mcp", "list"]);
    assert.match(listed, /local-mcp\s+connected/, listed);
    assert.match(listed, new RegExp(server.mcpUrl));
    await recognised("opencode", "opencode");
  });
});
