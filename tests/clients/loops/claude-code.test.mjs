// Claude Code (@anthropic-ai/claude-code) runs its own agent loop, `claude
// -p`, against the real server, with the scripted model behind
// ANTHROPIC_BASE_URL (the Messages API, streamed). Its MCP tools are deferred
// behind ToolSearch: the model selects get_user_request first.

import assert from "node:assert/strict";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { PROMPT, WAIT, agentLoop, timeoutLoop, clientHome, received, runTo, serverBin, spawnClient, startModel, startServer, turnOf } from "./harness.mjs";

const client = {
  name: "Claude Code",
  connect: "claude-code",
  known: { name: "Claude Code", version: "2.1.330" },
  timeoutText: /^MCP server "local-mcp" tool "get_user_request" timed out after 3s$/,
  images: "tool-result",
  async configure({ model, home }, { callTimeout } = {}) {
    // User scope, through Claude Code's own `claude mcp add-json`.
    await runTo(serverBin, ["connect", "claude-code"], { env: home.env, cwd: home.project });
    const file = join(home.dir, ".claude.json");
    const config = JSON.parse(readFileSync(file, "utf8"));
    const entry = config.mcpServers["local-mcp"];
    if (callTimeout) {
      entry.timeout = callTimeout * 1000;
      writeFileSync(file, JSON.stringify(config, null, 2));
    }
    return {
      cmd: "claude",
      args: ["-p", PROMPT, "--allowedTools", "mcp__local-mcp__get_user_request"],
      env: { ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: "scripted-model" },
      timeout: entry.timeout / 1000,
    };
  },
};

agentLoop(client);
timeoutLoop(client);

// The Stop hook `connect claude-code --project DIR --hooks` writes
// (`local-mcp-server hook claude-stop`): an end of turn is blocked while the
// agent's queue is live, and Claude Code hands the model the hook's reason;
// held, or that agent stopped (the hook finds which agent it runs for: it is
// given none), the end of turn is allowed and `claude -p` exits.
describe("Claude Code's Stop hook (connect --hooks) around its loop", () => {
  const QUEUE = "hooks";
  const agent = "loop-claude-hooks";
  let server;
  let model;
  let home;
  let run;
  before(async () => {
    server = await startServer({ waitSeconds: WAIT, env: { LOG_LEVEL: "info" } });
    model = await startModel({ name: "Claude Code (hooks)" });
    home = clientHome(server, "claude-hooks");
    await runTo(serverBin, ["connect", "claude-code", "--project", home.project, "--queue", QUEUE, "--hooks"], { env: home.env, cwd: home.project });
    // Claude Code asks once before it uses a project's servers: the person
    // trusts the folder and approves the server (what its dialogs record).
    writeFileSync(join(home.project, ".claude", "settings.local.json"), JSON.stringify({ enabledMcpjsonServers: ["local-mcp"] }));
    writeFileSync(join(home.dir, ".claude.json"), JSON.stringify({ projects: { [home.project]: { hasTrustDialogAccepted: true } } }));
  });
  after(async () => {
    run?.kill();
    await model?.close();
    await server?.stop();
    if (server) rmSync(server.dir, { recursive: true, force: true });
    home?.remove();
  });

  const start = () => {
    run = spawnClient("claude", ["-p", PROMPT, "--allowedTools", "mcp__local-mcp__get_user_request"], {
      env: { ...home.env, ANTHROPIC_BASE_URL: model.url, ANTHROPIC_API_KEY: "scripted-model" },
      cwd: home.project,
    });
  };
  const next = (what) => turnOf(model, run, "Claude Code", what);
  const add = async (content) => {
    const r = await server.api("POST", "/api/instructions", { content, queue: QUEUE });
    assert.equal(r.status, 201);
    return r.body.item;
  };
  const pending = async () => (await server.api("GET", `/api/instructions?status=pending&queue=${QUEUE}`)).body.items.map((i) => i.content);

  test("an end of turn is blocked: the model gets the hook's reason, calls again and gets the next instruction", async () => {
    await add("First, with the hook installed");
    start();
    let turn = await next("the first prompt");
    turn.call({ agent_id: agent });
    turn = await next("the first instruction");
    assert.equal(received(turn, "the first instruction").instruction?.content, "First, with the hook installed");
    await add("Second: queued while the agent ends its turn");
    // The model ends its turn with text, no tool call.
    turn.say("Finished the first one.");
    turn = await next("the Stop hook's feedback");
    const feedback = turn.sinceCall.find((e) => /Stop hook feedback/.test(e.text ?? ""));
    assert.ok(feedback, `no Stop hook feedback after the end of turn:\n${turn.show()}`);
    assert.match(feedback.text, /Stop hook feedback:\n[^]*Do not end your turn: call the MCP tool `get_user_request` \(local-mcp\) now/);
    // Ending the turn consumed nothing.
    assert.deepEqual(await pending(), ["Second: queued while the agent ends its turn"]);
    turn.call({ agent_id: agent });
    turn = await next("the second instruction");
    assert.equal(received(turn, "the second instruction").instruction?.content, "Second: queued while the agent ends its turn");
    // It went on once because of the hook this turn (stop_hook_active): the next end of turn is allowed.
    turn.say("Done.");
    const { code } = await run.ended(60_000, "claude -p after its second end of turn");
    assert.equal(code, 0, run.output());
  });

  test("with the queue held, an end of turn is allowed and claude -p exits; nothing is taken", async () => {
    assert.equal((await server.api("POST", "/api/hold", { queue: QUEUE })).status, 200);
    await add("Third: held");
    const before = model.turns.length;
    start();
    const turn = await next("the first prompt");
    turn.say("Nothing for me now.");
    const { code } = await run.ended(60_000, "claude -p after an allowed end of turn");
    assert.equal(code, 0, run.output());
    assert.equal(model.turns.length, before + 1, "the model was asked again after the end of turn");
    assert.deepEqual(await pending(), ["Third: held"]);
    assert.equal((await server.api("POST", "/api/release", { queue: QUEUE })).status, 200);
  });

  test("with the agent stopped, its end of turn is allowed and claude -p exits (the hook as connect wrote it)", async () => {
    // `connect --hooks` names no agent (an agent's id is the model's to choose):
    // the hook finds the one Claude Code last was in its queue.
    const settings = JSON.parse(readFileSync(join(home.project, ".claude", "settings.json"), "utf8"));
    const hook = settings.hooks.Stop[0].hooks[0];
    assert.ok(hook.command.startsWith(`${serverBin} hook claude-stop `) && hook.command.endsWith(` --queue ${QUEUE}`), hook.command);
    assert.doesNotMatch(hook.command, /--agent/);
    assert.equal((await server.api("POST", "/api/agents/stop", { agent_id: agent, queue: QUEUE })).status, 204);
    start();
    let turn = await next("the first prompt");
    turn.call({ agent_id: agent });
    turn = await next("the stop");
    const v = received(turn, "the stop");
    assert.equal(v.result_type, "stop", turn.show());
    turn.say("Stopping, as asked.");
    const { code } = await run.ended(60_000, "claude -p after it was stopped");
    assert.equal(code, 0, run.output());
    assert.ok(await model.quiet(300));
    assert.deepEqual(await pending(), ["Third: held"], "a stopped agent took nothing");
  });
});
