// Claude Code 2.1.330 with MCP tasks (SEP-2663), in its interactive REPL —
// where tasks are on by default — against the real server, with the
// scripted model (claude-tasks.mjs says how it runs). The quick cases; an
// instruction queued past the 120 s mark is in claude-code-tasks-slow.test.mjs.
//
//   - a task that completes while the model is idle: Claude Code starts a
//     model turn by itself, with the instruction, once;
//   - CLAUDE_CODE_DISABLE_MCP_TASKS=1: no task, the waiting call delivers;
//   - the server restarted (same port, same database) between the call and
//     the instruction: the same task is polled again and delivers.

import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { after, before, describe, test } from "node:test";

import { TEXTS, received, startModel, startServer, until } from "./harness.mjs";
import { backgroundNote, inNotification, interactiveClaude, notifications, taskLog, tasksOpened } from "./claude-tasks.mjs";

const SERVER_ENV = { LOG_LEVEL: "info" };

/** A server (wait setting `waitSeconds`), the scripted model and Claude Code's REPL, for one describe. */
function claudeRun(name, { waitSeconds = 3600, env = {} } = {}) {
  const ctx = {};
  before(async () => {
    ctx.server = await startServer({ waitSeconds, env: SERVER_ENV });
    ctx.model = await startModel({ name });
    ctx.claude = await interactiveClaude({ server: ctx.server, model: ctx.model, name: name.replace(/\W+/g, "-"), env });
    ctx.next = ctx.claude.next;
  });
  after(async () => {
    await ctx.claude?.quit();
    await ctx.model?.close();
    await ctx.server?.stop();
    if (ctx.server) rmSync(ctx.server.dir, { recursive: true, force: true });
    ctx.claude?.remove();
  });
  return ctx;
}

const seconds = (since) => ((Date.now() - since) / 1000).toFixed(1);
const instruction = async (server, id) => (await server.api("GET", `/api/instructions/${id}`)).body.item;

describe("Claude Code's REPL with MCP tasks", { concurrency: true }, () => {
  describe("a task completes while the model is idle", () => {
    const c = claudeRun("claude-idle");
    const agent = "tasks-idle";
    test("the call gets a task at once, the model ends its turn, and the instruction queued later starts a turn by itself, once", { timeout: 240_000 }, async (t) => {
      const { server, model } = c;
      let turn = await c.next("the first prompt", 120_000);
      turn.call({ agent_id: agent });
      const called = Date.now();
      turn = await c.next("the call's result (a task, moved to the background)");
      const answeredIn = seconds(called);
      const note = backgroundNote(turn);
      assert.ok(answeredIn < 20, `the call was answered after ${answeredIn} s: a wait, not a task`);
      // The server's own note, shown to the model (modelImmediateResponse).
      assert.match(note.text, /<mcp-server-note>\s*local-mcp keeps this call open as a background task[^]*End your turn now/, turn.show());
      assert.equal(taskLog(server, note.task).created.length, 1, `the server opened no task ${note.task}:\n${server.log.join("\n")}`);
      await until(async () => (await server.agent(agent))?.in_task, { timeout: 30_000, what: `${agent} to be shown waiting in a task (polled)` });
      turn.say("Waiting for the next instruction.");
      // Idle for two polls: the end of turn ends the model's work; Claude Code polls on its own.
      assert.ok(await model.quiet(4000), "the model was asked again while nothing was queued");
      assert.ok((await server.agent(agent)).in_task, "the task is no longer polled");

      const item = await server.add(TEXTS[2]);
      const queued = Date.now();
      turn = await c.next("the turn Claude Code starts by itself when the task completes", 30_000);
      const startedIn = seconds(queued);
      // Nothing from the user: the model's own end of turn, then the notification.
      const since = turn.sinceCall.filter((e) => e.kind !== "result");
      assert.deepEqual(
        since.map((e) => e.kind),
        ["assistant", "user"],
        `expected the model's end of turn and one user message after the call:\n${turn.show()}`,
      );
      assert.equal(since[0].text, "Waiting for the next instruction.");
      const told = notifications(since);
      assert.equal(told.length, 1, turn.show());
      assert.match(told[0].text, /\[SYSTEM NOTIFICATION - NOT USER INPUT\]/);
      assert.equal(told[0].status, "completed");
      assert.equal(told[0].background, note.background);
      assert.equal(told[0].task, note.task);
      assert.equal(told[0].served?.result_type, "instruction", told[0].text);
      assert.equal(told[0].served.instruction.id, item.id);
      // Claude Code escapes <, > and & in a notification's result (`an()` in its code):
      // the model reads "&lt;b&gt;not HTML&lt;/b&gt; &amp; …"; the JSON around it is intact.
      assert.notEqual(TEXTS[2], inNotification(TEXTS[2]));
      assert.equal(told[0].served.instruction.content, inNotification(TEXTS[2]));
      // Bound by a poll of that task, and written out.
      assert.equal(taskLog(server, note.task).bound.length, 1, server.log.join("\n"));
      await until(async () => (await instruction(server, item.id)).delivery === "sent", { timeout: 10_000, what: "the instruction's delivery to be sent" });
      t.diagnostic(`call answered with a task in ${answeredIn} s; turn started by Claude Code ${startedIn} s after the instruction was queued`);

      // The loop goes on: the next call (with its report) gets a new task.
      turn.call({ agent_id: agent, report: "Renamed it." });
      turn = await c.next("the next call's result");
      const second = backgroundNote(turn);
      assert.notEqual(second.task, note.task);
      await until(async () => (await instruction(server, item.id)).delivery === "confirmed", { timeout: 10_000, what: "the delivery to be confirmed by the next call" });
      const consumed = (await server.api("GET", "/api/instructions?status=consumed")).body.items;
      assert.deepEqual(
        consumed.map((i) => [i.id, i.consumed_by_agent_id, i.delivery, i.report?.content]),
        [[item.id, agent, "confirmed", "Renamed it."]],
        "consumed on the server: that one instruction, by this agent, with the report the next call made",
      );
      turn.say("Waiting for the next instruction.");
      assert.ok(await model.quiet(3000), "the model was asked again: the instruction came twice, or the new task ended");
      // Exactly once in the model's history.
      const last = model.turns.at(-1);
      assert.equal(notifications(last.events).filter((n) => n.served?.instruction?.id === item.id).length, 1);
      assert.equal(last.events.filter((e) => e.kind === "result" && e.texts.join("").includes(item.id)).length, 0);
    });
  });

  describe("CLAUDE_CODE_DISABLE_MCP_TASKS=1", () => {
    const c = claudeRun("claude-notasks", { waitSeconds: 60, env: { CLAUDE_CODE_DISABLE_MCP_TASKS: "1" } });
    const agent = "tasks-off";
    test("no task: the call waits on the server, and the instruction comes back as its result", { timeout: 240_000 }, async () => {
      const { server } = c;
      let turn = await c.next("the first prompt", 120_000);
      turn.call({ agent_id: agent });
      const a = await until(async () => (await server.agent(agent))?.waiting && (await server.agent(agent)), {
        timeout: 30_000,
        what: `${agent}'s call to wait on the server`,
      });
      assert.ok(!a.in_task, `waiting in a task: ${JSON.stringify(a)}`);
      const item = await server.add(TEXTS[2]);
      turn = await c.next("the instruction, as the call's result");
      const v = received(turn, "the instruction");
      assert.equal(v.result_type, "instruction", turn.show());
      assert.equal(v.instruction.id, item.id);
      assert.equal(v.instruction.content, TEXTS[2], "a tool result is not escaped");
      assert.equal(notifications(turn.events).length, 0, turn.show());
      assert.equal(tasksOpened(server), 0, server.log.join("\n"));
      await until(async () => (await instruction(server, item.id)).delivery === "sent", { timeout: 10_000, what: "the instruction's delivery to be sent" });
      turn.say("Done.");
    });
  });

  describe("the server restarts between the call and the instruction", () => {
    const c = claudeRun("claude-restart");
    const agent = "tasks-restart";
    test("stopped and started again on the same port and database within a few seconds: the same task is polled and delivers", { timeout: 240_000 }, async (t) => {
      const { model } = c;
      let server = c.server;
      let turn = await c.next("the first prompt", 120_000);
      turn.call({ agent_id: agent });
      turn = await c.next("the call's result (a task)");
      const note = backgroundNote(turn);
      await until(async () => (await server.agent(agent))?.in_task, { timeout: 30_000, what: `${agent}'s task to be polled` });
      turn.say("Waiting for the next instruction.");
      assert.ok(await model.quiet(1000));

      // Down until a poll of Claude Code's fails (one poll interval, 2 s), then back.
      const failed = new RegExp(`task ${note.task}: poll failure 1/5: (\\w+)`);
      assert.doesNotMatch(c.claude.debugLog(), failed);
      const down = Date.now();
      await server.stop();
      const failure = await until(() => failed.exec(c.claude.debugLog()), { timeout: 15_000, what: "a poll of Claude Code's to fail while the server is down (its debug log)" });
      c.server = server = await startServer({ dir: server.dir, port: server.port, waitSeconds: 3600, env: SERVER_ENV });
      const downFor = seconds(down);
      assert.ok(downFor < 8, `the server was down ${downFor} s (Claude Code gives up after about 2 × 2 s + 15 s)`);
      // The new process knows the task only from the database: it is polled there.
      await until(async () => (await server.agent(agent))?.in_task, { timeout: 30_000, what: `${agent}'s task to be polled by the restarted server` });
      assert.equal(tasksOpened(server), 0, `a new call reached the restarted server:\n${server.log.join("\n")}`);
      assert.ok(await model.quiet(500), "the model was told something of the restart");

      const item = await server.add(TEXTS[1]);
      turn = await c.next("the turn with the task's result, after the restart", 30_000);
      const told = notifications(turn.sinceCall);
      assert.equal(told.length, 1, turn.show());
      assert.equal(told[0].status, "completed");
      assert.equal(told[0].task, note.task, "a different task delivered");
      assert.equal(told[0].served?.instruction?.id, item.id, told[0].text);
      assert.equal(told[0].served.instruction.content, TEXTS[1]);
      assert.equal(taskLog(server, note.task).bound.length, 1, server.log.join("\n"));
      await until(async () => (await instruction(server, item.id)).delivery === "sent", { timeout: 10_000, what: "the instruction's delivery to be sent" });
      // It lost the server once, and went on: no reconnect given up, no contact lost.
      assert.doesNotMatch(c.claude.debugLog(), /poll failure [3-5]\/5|Lost contact with task|Giving up after reconnection/);
      t.diagnostic(`server down ${downFor} s; Claude Code: "poll failure 1/5: ${failure[1]}"`);
      turn.say("Done.");
      assert.ok(await model.quiet(3000), "the model was asked again after the delivery");
    });
  });
});
