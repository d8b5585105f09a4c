// The official MCP conformance suite (@modelcontextprotocol/conformance):
// every server scenario that applies to local-mcp, in both MCP modes. A
// scenario passes when it ran checks and none failed. (Scenarios left out
// test fixtures a conformance test server must carry — sample images,
// elicitation, sampling, subscriptions — not features local-mcp has.)

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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

// The 2026-07-28 revision (stateless, per-request _meta, no initialize), from
// the first published release of the suite that has its scenarios
// (0.2.0-alpha.12, installed as `conformance-2026`). A check the suite marks
// untestable (it needs a fixture tool a conformance test server carries,
// such as `test_logging_tool`) is not a failure of local-mcp's; the one such
// check that applies to get_user_request (no log message without a
// logLevel) is engine/tests/it/clients.rs's
// `a_2026_call_gets_log_messages_only_when_it_asked_for_them`.
const SCENARIOS_2026 = [
  "server-stateless",
  "tools-list",
  "resources-list",
  "prompts-list",
  "dns-rebinding-protection",
  "http-header-validation",
  "caching",
  "sep-2164-resource-not-found",
  "server-sse-multiple-streams",
];

const SUITE_2026 = join(import.meta.dirname, "node_modules", "conformance-2026", "dist", "index.js");

/** Every check of one 2026-07-28 scenario, as the suite wrote them. */
async function checks2026(url, name) {
  const out = mkdtempSync(join(tmpdir(), "conformance-2026-"));
  try {
    await run(process.execPath, [SUITE_2026, "server", "--url", url, "--scenario", name, "--spec-version", "2026-07-28", "-o", out], {
      timeout: 120_000,
    });
  } catch (err) {
    // A failed check exits 1; the checks themselves say which.
    if (err.code !== 1) assert.fail(`conformance ${name} did not run (exit ${err.code}):\n${err.stdout}\n${err.stderr}`);
  }
  const files = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name === "checks.json") files.push(join(dir, e.name));
    }
  };
  walk(out);
  assert.ok(files.length > 0, `no checks.json under ${out}`);
  return files.flatMap((f) => JSON.parse(readFileSync(f, "utf8")));
}

for (const mode of ["stateless", "sessions"]) {
  describe(`conformance 2026-07-28 — ${mode}`, () => {
    let server;
    before(async () => {
      server = await startServer({ mode, waitSeconds: 2 });
    });
    after(() => server?.stop());

    for (const name of SCENARIOS_2026) {
      test(name, async () => {
        const checks = await checks2026(server.mcpUrl, name);
        const failed = checks.filter((c) => c.status === "FAILURE" && !c.details?.untestable);
        const passed = checks.filter((c) => c.status === "SUCCESS");
        assert.ok(passed.length > 0, JSON.stringify(checks, null, 1).slice(0, 2000));
        assert.deepEqual(
          failed.map((c) => `${c.id}: ${c.errorMessage ?? c.description}`),
          [],
          `${name} on ${mode}`,
        );
      });
    }
  });
}
