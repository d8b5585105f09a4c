// The MCP Inspector's CLI (`@modelcontextprotocol/inspector --cli`), as a
// person would run it against local-mcp, in both MCP modes.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import { png } from "../png.mjs";
import { MODES, startServer, until } from "./harness.mjs";

/** A get_user_request result's JSON: its first block, text (there is no structuredContent). */
const resultJson = (r) => JSON.parse(r.content[0].text);

const run = promisify(execFile);
// The Inspector keeps a catalog of servers; keep it out of the user's home.
const catalog = join(mkdtempSync(join(tmpdir(), "inspector-")), "mcp.json");

async function inspector(server, ...args) {
  const { stdout } = await run("inspector", ["--cli", server.mcpUrl, ...args], {
    env: { ...process.env, MCP_CATALOG_PATH: catalog },
    timeout: 60_000,
  });
  return JSON.parse(stdout);
}

for (const mode of MODES) {
  describe(`inspector cli — ${mode}`, () => {
    let server;
    before(async () => {
      server = await startServer({ mode, waitSeconds: 2 });
    });
    after(() => server?.stop());

    test("tools/list passes the Inspector's strict schema portability check", async () => {
      const listed = await inspector(server, "--method", "tools/list", "--strict");
      assert.deepEqual(listed.tools.map((t) => t.name), ["get_user_request"]);
    });

    test("tools/call: the default response on an empty queue, then a queued instruction", async () => {
      const call = () => inspector(server, "--method", "tools/call", "--tool-name", "get_user_request", "--tool-arg", `agent_id=inspector-${mode}`);
      const empty = await call();
      assert.equal(resultJson(empty).result_type, "default_response");
      await server.add("from the HTTP API");
      const got = await call();
      assert.equal(resultJson(got).result_type, "instruction");
      assert.equal(resultJson(got).instruction.content, "from the HTTP API");
    });

    test("a waiting tools/call is woken by an instruction queued over HTTP", async () => {
      const agent = `inspector-${mode}-woken`;
      const call = inspector(server, "--method", "tools/call", "--tool-name", "get_user_request", "--tool-arg", `agent_id=${agent}`);
      await until(async () => (await server.agent(agent))?.waiting, { what: "the call waits", timeout: 10_000 });
      await server.add("woke you");
      assert.equal(resultJson((await call)).instruction.content, "woke you");
    });

    test("tools/call shows an attached image as an image block, readable as a resource too", async () => {
      await server.addWithFiles("see the screenshot", [{ name: "shot.png", bytes: png(64, 48), type: "image/png" }]);
      const got = await inspector(server, "--method", "tools/call", "--tool-name", "get_user_request", "--tool-arg", `agent_id=inspector-${mode}-eyes`);
      const [attachment] = resultJson(got).instruction.attachments;
      assert.deepEqual(got.content.map((c) => c.type), ["text", "image"]);
      assert.deepEqual(Buffer.from(got.content[1].data, "base64"), readFileSync(attachment.path));
      const read = await inspector(server, "--method", "resources/read", "--uri", `local-mcp://attachments/${attachment.id}`);
      assert.equal(read.contents[0].mimeType, "image/png");
      assert.deepEqual(Buffer.from(read.contents[0].blob, "base64"), readFileSync(attachment.path));
    });

    test("resources and the prompt", async () => {
      const resources = await inspector(server, "--method", "resources/list");
      assert.deepEqual(resources.resources.map((r) => r.uri), ["local-mcp://status", "local-mcp://queue", "local-mcp://reports"]);
      await server.add("pending one");
      const queue = await inspector(server, "--method", "resources/read", "--uri", "local-mcp://queue");
      assert.equal(JSON.parse(queue.contents[0].text).items[0].content, "pending one");
      const prompt = await inspector(server, "--method", "prompts/get", "--prompt-name", "agent-loop", "--prompt-args", "agent_id=inspector");
      assert.match(prompt.messages[0].content.text, /get_user_request/);
    });
  });
}
