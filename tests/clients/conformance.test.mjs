// The official MCP conformance suite (@modelcontextprotocol/conformance):
// every server scenario that applies to local-mcp, in both MCP modes. A
// scenario passes when it ran checks and none failed. (Scenarios left out
// test fixtures a conformance test server must carry — sample images,
// elicitation, sampling, subscriptions — not features local-mcp has.)

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";

import { startServer } from "./harness.mjs";

const run = promisify(execFile);

const SCENARIOS = [
  "server-initialize",
  "ping",
  "tools-list",
  "dns-rebinding-protection",
  "logging-set-level",
  "resources-list",
  "prompts-list",
];

async function scenario(server, name, url = server.mcpUrl) {
  let out;
  try {
    out = await run("conformance", ["server", "--url", url, "--scenario", name], { timeout: 120_000 });
  } catch (err) {
    assert.fail(`conformance ${name} failed (exit ${err.code}):\n${err.stdout}\n${err.stderr}`);
  }
  const m = /Passed: (\d+)\/(\d+), (\d+) failed/.exec(out.stdout);
  assert.ok(m, `no summary in:\n${out.stdout}`);
  return { passed: Number(m[1]), total: Number(m[2]), failed: Number(m[3]), stdout: out.stdout };
}

for (const mode of ["stateless", "sessions"]) {
  describe(`conformance — ${mode}`, () => {
    let server;
    before(async () => {
      server = await startServer({ mode, waitSeconds: 2 });
    });
    after(() => server?.stop());

    for (const name of SCENARIOS) {
      test(name, async () => {
        const r = await scenario(server, name);
        assert.ok(r.total > 0 && r.passed === r.total && r.failed === 0, r.stdout);
      });
      // A queue's endpoint (/mcp/q/<name>) is the same MCP server.
      test(`${name} on a queue URL`, async () => {
        const r = await scenario(server, name, `${server.mcpUrl}/q/conformance`);
        assert.ok(r.total > 0 && r.passed === r.total && r.failed === 0, r.stdout);
      });
    }

    // Multiple concurrent SSE streams are checked on a session; without one
    // the suite can only warn, so stateless mode must merely not fail it.
    test("server-sse-multiple-streams", async () => {
      const r = await scenario(server, "server-sse-multiple-streams");
      assert.equal(r.failed, 0, r.stdout);
      if (mode === "sessions") assert.ok(r.total >= 2 && r.passed === r.total, r.stdout);
    });
  });
}
