// Gemini CLI (@google/gemini-cli) runs its own agent loop, `gemini -p`,
// against the real server, with the scripted model behind
// GOOGLE_GEMINI_BASE_URL (streamGenerateContent, SSE). With that variable
// alone it picks the "gateway" auth type, which 0.61.0's headless mode
// refuses ("Invalid auth method selected."), so the settings choose the API
// key; the base URL still applies. Its router asks a classifier model first
// (a side request, answered by schema). Images in an MCP result go to the
// model as inlineData parts beside the functionResponse.
//
// Its loop detection stops a fifth identical tool call in a row (same name,
// same arguments: TOOL_CALL_LOOP_THRESHOLD = 5) — what an agent does when
// several waits in a row end empty — and ends the run on the next one.

import assert from "node:assert/strict";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { PROMPT, agentLoop, timeoutLoop, clientHome, received, runTo, serverBin, spawnClient, startModel, startServer, turnOf } from "./harness.mjs";

/** Its settings (the API key, no usage statistics, `extra`), the trusted folder, then `connect gemini-cli`. */
async function configure({ model, home }, { callTimeout, extra = {} } = {}) {
  const dir = join(home.dir, ".gemini");
  mkdirSync(dir);
  const file = join(dir, "settings.json");
  const settings = { security: { auth: { selectedType: "gemini-api-key" } }, privacy: { usageStatisticsEnabled: false }, ...extra };
  writeFileSync(file, JSON.stringify(settings, null, 2));
  // User-level servers are hidden in folders the person has not trusted.
  writeFileSync(join(dir, "trustedFolders.json"), JSON.stringify({ [home.project]: "TRUST_FOLDER" }));
  await runTo(serverBin, ["connect", "gemini-cli"], { env: home.env, cwd: home.project });
  const written = JSON.parse(readFileSync(file, "utf8"));
  const entry = written.mcpServers["local-mcp"];
  if (callTimeout) {
    entry.timeout = callTimeout * 1000;
    writeFileSync(file, JSON.stringify(written, null, 2));
  }
  return {
    cmd: "gemini",
    args: ["-p", PROMPT, "--yolo"],
    env: { GOOGLE_GEMINI_BASE_URL: model.url, GEMINI_API_KEY: "scripted-model" },
    timeout: entry.timeout / 1000,
  };
}

const client = {
  name: "Gemini CLI",
  connect: "gemini-cli",
  known: { name: "Gemini CLI", version: "0.61.0" },
  timeoutText: /"error":\{"message":"MCP error -32001: Request timed out"/,
  // Known bug (local-mcp): after its timeout this client sends notifications/cancelled but keeps
  // the response stream open; the server ignores the cancel, its call waits on and takes the next
  // instruction (delivery "sent", then "confirmed"), which the model never gets.
  images: "beside",
  configure,
};

agentLoop(client);
timeoutLoop(client);

for (const disabled of [false, true]) {
  describe(`Gemini CLI: empty waits in a row, loop detection ${disabled ? "off (model.disableLoopDetection)" : "as installed"}`, () => {
    let server;
    let model;
    let home;
    let run;
    before(async () => {
      server = await startServer({ waitSeconds: 1, env: { LOG_LEVEL: "info" } });
      model = await startModel({ name: "Gemini CLI" });
      home = clientHome(server, "gemini-loop");
      const how = await configure({ model, home }, { extra: disabled ? { model: { disableLoopDetection: true } } : {} });
      run = spawnClient(how.cmd, how.args, { env: { ...home.env, ...how.env }, cwd: home.project });
    });
    after(async () => {
      run?.kill();
      await model?.close();
      await server?.stop();
      if (server) rmSync(server.dir, { recursive: true, force: true });
      home?.remove();
    });

    /** The calls the server served for the agent (its info log has a line for each). */
    const served = () => server.log.filter((l) => l.includes("get_user_request") && l.includes(`agent_id=${args.agent_id} `)).length;
    const args = { agent_id: "loop-gemini-repeat" };

    test(disabled ? "six identical calls all reach the server and their results the model" : "the fifth identical call never reaches the server: the model is told it loops, and the sixth ends the run", async () => {
      let turn = await turnOf(model, run, "Gemini CLI", "the first prompt", 120_000);
      const calls = disabled ? 6 : 5;
      for (let i = 1; i <= calls; i++) {
        turn.call(args);
        turn = await turnOf(model, run, "Gemini CLI", `what came of identical call ${i}`);
        const results = turn.events.filter((e) => e.kind === "result");
        if (!disabled && i === 5) {
          // Four results, no fifth: the call was stopped before it ran.
          assert.equal(results.length, 4, turn.show());
          const told = turn.events.at(-1);
          assert.equal(told.kind, "user", turn.show());
          assert.match(told.text, /^System: Potential loop detected\. Details: Repeated tool call: mcp_local-mcp_get_user_request with arguments \{"agent_id":"loop-gemini-repeat"\}/);
        } else {
          assert.equal(results.length, i, turn.show());
          assert.equal(received(turn, `identical call ${i}`).result_type, "default_response");
        }
      }
      if (!disabled) {
        // Once more, and the headless run ends, exit 0, saying nothing
        // ("Loop detected, stopping execution" goes to its JSON output only).
        turn.call(args);
        const { code } = await run.ended(60_000, "Gemini CLI after a second loop");
        assert.equal(code, 0, run.output());
        assert.ok(await model.quiet(300), "the model was asked again");
        assert.equal(served(), 4, `the server served ${served()} calls:\n${server.log.join("\n")}`);
      } else {
        assert.equal(served(), 6, `the server served ${served()} calls:\n${server.log.join("\n")}`);
        turn.say("Stopping here.");
        const { code } = await run.ended(60_000, "Gemini CLI's headless run");
        assert.equal(code, 0, run.output());
      }
    });
  });
}
