// Claude Code 2.1.330 with MCP tasks on, against the real server: what
// claude-code-tasks.test.mjs and claude-code-tasks-slow.test.mjs share.
//
// Tasks are on by default only in Claude Code's interactive REPL (its
// `cli` entry point; `claude -p` strips the tasks extension from every
// call). So these runs drive the REPL itself, as a person starts it, under
// script(1) for a terminal: `claude PROMPT --allowedTools …`. The other
// way — `claude -p --input-format stream-json` with
// CLAUDE_AUTO_BACKGROUND_TASKS=1 and the `tengu_glowing_lark` feature flag
// seeded in ~/.claude.json — needs two switches no user sets; the REPL is
// what people run.
//
// In the REPL a call answered with a task is moved to the background at
// once: the model gets a note ("started server-side task <id>, running in
// the background as task <k…>", with the server's own note), ends its
// turn, and Claude Code polls `tasks/get` on its own; when the task
// completes it hands the model a `<task-notification>` user message with
// the tool's result, in a turn it starts by itself.

import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { PROMPT, clientHome, runTo, served, serverBin, spawnClient, turnOf } from "./harness.mjs";

export const TOOL = "mcp__local-mcp__get_user_request";
const KEY = "scripted-model";

/**
 * Claude Code's REPL configured by `connect claude-code` in a fresh home,
 * past its first-run dialogs (what a person's own answers record), with the
 * scripted model; started at once with the loop's prompt. `env` adds
 * variables (CLAUDE_CODE_DISABLE_MCP_TASKS). Returns { home, run, debugLog(),
 * next(what, timeout), quit(), remove() }.
 */
export async function interactiveClaude({ server, model, name, env = {} }) {
  const home = clientHome(server, name);
  await runTo(serverBin, ["connect", "claude-code"], { env: home.env, cwd: home.project });
  const file = join(home.dir, ".claude.json");
  const config = JSON.parse(readFileSync(file, "utf8"));
  assert.ok(config.mcpServers?.["local-mcp"], `connect wrote no local-mcp entry: ${JSON.stringify(config)}`);
  Object.assign(config, {
    hasCompletedOnboarding: true,
    theme: "dark",
    // The "use this API key?" dialog, answered yes (it records the key's last 20 characters).
    customApiKeyResponses: { approved: [KEY.slice(-20)], rejected: [] },
    projects: { ...config.projects, [home.project]: { ...config.projects?.[home.project], hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
  });
  writeFileSync(file, JSON.stringify(config, null, 2));
  // The prompt goes before --allowedTools, which takes every word after it.
  assert.ok(!PROMPT.includes("'"));
  // Its debug log (--debug, to a file): where it says how its polls went.
  mkdirSync(join(home.dir, "debug"));
  const debugFile = join(home.dir, "debug", "claude.txt");
  const cmd = `stty cols 200 rows 50; exec claude '${PROMPT}' --debug --allowedTools ${TOOL}`;
  const run = spawnClient("script", ["-qfec", cmd, "/dev/null"], {
    env: { ...home.env, TERM: "xterm-256color", ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: KEY, CLAUDE_CODE_DEBUG_LOGS_DIR: debugFile, ...env },
    cwd: home.project,
    stdin: "pipe",
  });
  run.child.stdin.on("error", () => {}); // a Ctrl-C typed as it exits
  return {
    home,
    run,
    /** Claude Code's debug log so far. */
    debugLog: () => (existsSync(debugFile) ? readFileSync(debugFile, "utf8") : ""),
    next: (what, timeout = 60_000) => turnOf(model, run, "Claude Code (interactive)", what, timeout),
    /**
     * Ctrl-C, as a person leaves the REPL (the first one interrupts a turn in
     * progress, the next asks "Press Ctrl-C again to exit"), up to four times;
     * killed if it is still there 10 s later.
     */
    async quit() {
      for (let i = 0; i < 4 && !run.exit; i++) {
        run.child.stdin.write("\x03");
        await Promise.race([run.exited, new Promise((r) => setTimeout(r, 500))]);
      }
      try {
        await run.ended(10_000, "Claude Code's REPL after Ctrl-C");
      } catch {
        run.kill();
      }
    },
    remove() {
      run.kill();
      rmSync(home.dir, { recursive: true, force: true });
    },
  };
}

/**
 * The note the model gets for a call moved to the background as a task, in
 * `turn`'s last tool result: { task (the server's id), background (Claude
 * Code's k… id), text }, or a failure showing the request.
 */
export function backgroundNote(turn) {
  const text = turn.result?.texts.join("\n") ?? "";
  const m = /MCP tool "local-mcp\/get_user_request" started server-side task ([\x21-\x7e]+?)[.,] [^]*?(?:moved to the background|running in the background) as task (\w+)/.exec(text);
  assert.ok(m, `the call's result is not a background task's note:\n${turn.show()}`);
  assert.equal(served(turn.result), null, `the call's result carries the server's answer:\n${turn.show()}`);
  return { task: m[1], background: m[2], text };
}

/**
 * Every `<task-notification>` in `events` (user messages Claude Code adds):
 * { background, status, task (the server's id, from the summary), result
 * (its text), served (the server's JSON in it, or null), text (the whole
 * message) }.
 */
export function notifications(events) {
  const found = [];
  for (const e of events) {
    if (e.kind !== "user") continue;
    for (const m of e.text.matchAll(/<task-notification>([^]*?)<\/task-notification>/g)) {
      const body = m[1];
      const result = /<result>\n?([^]*?)\n?<\/result>/.exec(body)?.[1] ?? null;
      found.push({
        background: /<task-id>(.*?)<\/task-id>/.exec(body)?.[1],
        status: /<status>(.*?)<\/status>/.exec(body)?.[1],
        task: /MCP task (\S+) \(local-mcp\/get_user_request\)/.exec(body)?.[1] ?? null,
        result,
        served: result === null ? null : served({ texts: [result] }),
        text: e.text,
      });
    }
  }
  return found;
}

/**
 * `text` as the model reads it inside a `<task-notification>`'s `<result>`:
 * Claude Code 2.1.330 escapes &, < and > there (its `an()`), so an
 * instruction cannot close the element; quotes and everything else pass.
 */
export const inNotification = (text) => text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");

/** The server's log lines (LOG_LEVEL info) about `task`: created (a call), bound (a poll). */
export function taskLog(server, task) {
  const lines = server.log.filter((l) => l.includes(`task=${task}`));
  return {
    created: lines.filter((l) => l.includes("get_user_request: a task waits")),
    bound: lines.filter((l) => l.includes("get_user_request: a task's result is bound")),
  };
}

/** How many tasks the server opened (one per call that found nothing to take). */
export const tasksOpened = (server) => server.log.filter((l) => l.includes("get_user_request: a task waits")).length;
