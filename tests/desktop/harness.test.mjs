// The desktop suite's own promises (issue 28): a test whose app does not come
// up fails at once with the app's own words, and leaves no WebDriver behind
// for the next test to talk to by mistake (one left running once took the
// next file's calls and held the runner open to its ceiling). Run by
// scripts/test-desktop.sh.

import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { appProcesses, openSession } from "./harness.mjs";

test("a session whose app cannot start fails at once with the app's words, and leaves nothing running", async () => {
  const home = mkdtempSync(join(tmpdir(), "local-mcp-harness-"));
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: join(home, "config"),
    XDG_DATA_HOME: join(home, "data"),
    // A folder that cannot be made: the app says so and exits.
    DB_PATH: "/proc/no-such-folder/queue.sqlite3",
    HTTP_PORT: "0",
  };
  const began = Date.now();
  await assert.rejects(openSession(env), /did not start; it said:\n[^]*could not start: cannot create the database folder \/proc\/no-such-folder/);
  const took = Date.now() - began;
  assert.ok(took < 30000, `failed in ${took} ms, not at the driver's minute`);
  const driverAnswers = await fetch("http://127.0.0.1:4444/status").then(
    () => true,
    () => false,
  );
  assert.equal(driverAnswers, false, "no WebDriver is left answering on its port");
  assert.deepEqual(appProcesses(), [], "no app is left running");
});
