// Claude Code past its 120-second limit, for real (about 2 minutes: run in
// the background by scripts/test-all.sh, `npm run test:slow` here). With
// CLAUDE_AUTO_BACKGROUND_TASKS set, `claude -p` moves an MCP call still
// running after 120 s into the background, and the model gets a note instead
// of the result. local-mcp knows Claude Code and ends its waits at 108 s:
// the model gets the normal empty result, the next instruction arrives, and
// nothing ends up in the background. A control run lowers Claude Code's
// threshold below the server's wait (CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS), to
// show the setting is live and what the model gets when a wait outlasts it.

import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, test } from "node:test";

import { png } from "../../png.mjs";
import { PROMPT, clientHome, received, runTo, served, serverBin, spawnClient, startModel, startServer, turnOf, until } from "./harness.mjs";

/** A Claude Code run against a server whose wait setting is an hour. */
function claudeRun(name, extraEnv) {
  const ctx = {};
  before(async () => {
    ctx.server = await startServer({ waitSeconds: 3600, env: { LOG_LEVEL: "info" } });
    ctx.model = await startModel({ name });
    ctx.home = clientHome(ctx.server, "claude-slow");
    await runTo(serverBin, ["connect", "claude-code"], { env: ctx.home.env, cwd: ctx.home.project });
    ctx.run = spawnClient("claude", ["-p", PROMPT, "--allowedTools", "mcp__local-mcp__get_user_request"], {
      env: { ...ctx.home.env, ANTHROPIC_BASE_URL: ctx.model.url, ANTHROPIC_API_KEY: "scripted-model", CLAUDE_AUTO_BACKGROUND_TASKS: "1", ...extraEnv },
      cwd: ctx.home.project,
    });
    ctx.next = (what, timeout = 60_000) => turnOf(ctx.model, ctx.run, "Claude Code", what, timeout);
  });
  after(async () => {
    ctx.run?.kill();
    await ctx.model?.close();
    await ctx.server?.stop();
    if (ctx.server) rmSync(ctx.server.dir, { recursive: true, force: true });
    ctx.home?.remove();
  });
  return ctx;
}

describe("Claude Code waits past 120 s (CLAUDE_AUTO_BACKGROUND_TASKS=1)", { concurrency: true }, () => {
  describe("as installed", () => {
    const c = claudeRun("Claude Code (slow)", {});
    const agent = "loop-claude-slow";
    test("a wait set to an hour ends at 108 s with the normal empty result; the next instruction arrives; nothing goes to the background", { timeout: 300_000 }, async () => {
      let turn = await c.next("the first prompt", 120_000);
      turn.call({ agent_id: agent });
      turn = await c.next("the end of a wait the server caps at 108 s", 200_000);
      const v = received(turn, "the long wait");
      assert.equal(v.result_type, "default_response", turn.show());
      assert.ok(v.waited_seconds >= 100 && v.waited_seconds <= 110, `waited ${v.waited_seconds} s`);
      assert.ok(!turn.sinceCall.some((e) => /background/i.test(JSON.stringify(e))), `something about the background:\n${turn.show()}`);
      const a = await c.server.agent(agent);
      assert.equal(a.client?.name, "Claude Code", JSON.stringify(a));
      assert.equal(a.client?.wait_seconds, 108, JSON.stringify(a));
      turn.call({ agent_id: agent });
      await until(async () => (await c.server.agent(agent))?.waiting, { timeout: 30_000, what: `${agent} to wait again` });
      const item = await c.server.add("After the long wait");
      turn = await c.next("the instruction after the long wait");
      assert.equal(received(turn, "the instruction").instruction?.id, item.id);
      turn.say("Done.");
      // A background task would keep `claude -p` running until it ended (see the control).
      const { code } = await c.run.ended(30_000, "claude -p with no background task");
      assert.equal(code, 0, c.run.output());
      const consumed = (await c.server.api("GET", "/api/instructions?status=consumed")).body.items;
      assert.deepEqual(consumed.map((i) => [i.id, i.delivery]), [[item.id, "sent"]]);
    });
  });

  describe("control: Claude Code's threshold lowered to 30 s, below the server's wait", () => {
    const c = claudeRun("Claude Code (control)", { CLAUDE_CODE_MCP_AUTO_BACKGROUND_MS: "30000" });
    const agent = "loop-claude-control";
    test("the call goes to the background at 30 s: the model gets a note, and what the call then takes only as text (its image as a file path)", { timeout: 300_000 }, async () => {
      let turn = await c.next("the first prompt", 120_000);
      turn.call({ agent_id: agent });
      const called = Date.now();
      turn = await c.next("the call moved to the background", 200_000);
      const elapsed = (Date.now() - called) / 1000;
      assert.ok(elapsed >= 29 && elapsed < 90, `the note came after ${elapsed} s`);
      const note = turn.result?.texts.join("\n") ?? "";
      assert.equal(served(turn.result), null, `the model got the server's answer:\n${turn.show()}`);
      const task = /is still running after 30s\. It was moved to the background as task (\S+) and keeps running/.exec(note)?.[1];
      assert.ok(task, `no background note:\n${turn.show()}`);
      // The call still waits on the server, and takes what is queued now.
      assert.ok((await c.server.agent(agent))?.waiting);
      const item = await c.server.addWithFiles("Queued while the call is in the background", [{ name: "s.png", bytes: png(40, 10), type: "image/png" }]);
      await until(async () => (await c.server.api("GET", `/api/instructions/${item.id}`)).body.item.delivery === "sent", {
        timeout: 30_000,
        what: "the backgrounded call to take the instruction",
      });
      // The model ends its turn; `claude -p` stays for its task and then hands
      // the model a notification: the server's JSON as text, the image saved to a file.
      turn.say("Waiting for it.");
      turn = await c.next("the background task's notification");
      const told = turn.sinceCall.find((e) => e.kind === "user" && e.text.includes("<task-notification>"));
      assert.ok(told, `no task notification:\n${turn.show()}`);
      assert.match(told.text, new RegExp(`<task-id>${task}</task-id>\\s*<status>completed</status>`));
      const v = served({ texts: [/<result>\n(\{.*\})\n/.exec(told.text)?.[1] ?? ""] });
      assert.equal(v?.instruction?.id, item.id, told.text);
      assert.equal(told.images.length, 0, "the image reached the model as an image");
      assert.ok(!turn.events.some((e) => e.images?.length), "an image block is in the request");
      assert.match(told.text, /\[image result\] Binary content \(image\/png, \d+ bytes\) saved to \S+\.png/);
      turn.say("ok");
      const { code } = await c.run.ended(60_000, "claude -p");
      assert.equal(code, 0, c.run.output());
    });
  });
});
