// What every MCP client must be able to do with local-mcp, in both MCP modes:
// list the tool, time out on an empty queue, be woken by an instruction queued
// over HTTP, get queued instructions in order. `open(server)` returns a small
// adapter over the client under test: { listTools(), call(agent, options), close() }.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { readFileSync } from "node:fs";

import { png } from "../png.mjs";
import { MODES, startServer, until } from "./harness.mjs";

/** A get_user_request result's JSON: its first block, text (there is no structuredContent). */
const resultJson = (r) => JSON.parse(r.content[0].text);


export function clientContract(name, open) {
  for (const mode of MODES) {
    describe(`${name} — ${mode}`, () => {
      let server;
      let client;
      before(async () => {
        server = await startServer({ mode, waitSeconds: 2 });
        client = await open(server);
      });
      after(async () => {
        await client?.close();
        await server?.stop();
      });

      test("lists get_user_request with its input schema (and no output schema)", async () => {
        const tools = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name), ["get_user_request"]);
        assert.equal(tools[0].outputSchema, undefined);
        assert.equal(tools[0].inputSchema.properties.agent_id.maxLength, 128);
      });

      test("an empty queue ends the wait with the default response", async () => {
        const started = Date.now();
        const r = await client.call(`${name}-${mode}`);
        assert.ok(Date.now() - started >= 1900, "it waited");
        assert.equal(r.isError ?? false, false);
        assert.equal(resultJson(r).result_type, "default_response");
        assert.equal(resultJson(r).instruction, null);
        assert.equal(r.structuredContent, undefined, "no structured content: clients drop images beside it");
      });

      test("a waiting call is woken by an instruction queued over HTTP", async () => {
        const agent = `${name}-${mode}-woken`;
        const call = client.call(agent);
        await until(async () => (await server.agent(agent))?.waiting, { what: "the call waits" });
        await server.add("queued while you waited");
        const r = await call;
        assert.equal(resultJson(r).result_type, "instruction");
        assert.equal(resultJson(r).instruction.content, "queued while you waited");
      });

      test("queued instructions come one per call, in order", async () => {
        await server.add("first");
        await server.add("second");
        const a = await client.call(`${name}-${mode}`);
        const b = await client.call(`${name}-${mode}`);
        assert.deepEqual([resultJson(a).instruction.content, resultJson(b).instruction.content], ["first", "second"]);
        assert.equal(resultJson(a).remaining_pending, 1);
        assert.deepEqual(await server.pending(), []);
      });

      test("an attached image arrives as an image block: the delivery copy at its path", async () => {
        const bytes = png(300, 200);
        await server.addWithFiles("what is wrong here?", [{ name: "shot.png", bytes, type: "image/png" }]);
        const r = await client.call(`${name}-${mode}-eyes`);
        const [attachment] = resultJson(r).instruction.attachments;
        assert.deepEqual(r.content.map((c) => c.type), ["text", "image"]);
        assert.equal(r.content[1].mimeType, "image/png");
        assert.deepEqual(Buffer.from(r.content[1].data, "base64"), readFileSync(attachment.path), "the block is the file at path");
        assert.deepEqual([attachment.width, attachment.height, attachment.inline], [300, 200, true]);
      });
    });
  }
}

/**
 * A stop or a restart breaks no loop: a call waiting when the server is asked
 * to stop gets its normal answer (never an error, never a hang), and after a
 * restart on the same database and port the same client's next call reaches
 * the new process and gets the next instruction — in both MCP modes.
 */
export function stopAndRestart(name, open) {
  for (const mode of MODES) {
    test(`${name} — ${mode}: a stop answers the waiting call; after a restart the loop goes on`, async () => {
      const first = await startServer({ mode, waitSeconds: 600 });
      const client = await open(first);
      let second;
      try {
        assert.deepEqual((await client.listTools()).map((t) => t.name), ["get_user_request"]);
        const agent = `${name}-${mode}-restart`;
        const call = client.call(agent);
        await until(async () => (await first.agent(agent))?.waiting, { what: "the call waits" });
        const stopping = first.stop();
        const r = await Promise.race([
          call,
          new Promise((_, fail) => setTimeout(() => fail(new Error("the waiting call got no answer within 15 s of the stop")), 15_000)),
        ]);
        await stopping;
        assert.equal(r.isError ?? false, false, JSON.stringify(r));
        assert.ok(["empty", "default_response"].includes(resultJson(r).result_type), JSON.stringify(resultJson(r)));
        assert.equal(resultJson(r).instruction, null);
        assert.equal(first.child.exitCode, 0, first.log.slice(-20).join("\n"));

        second = await startServer({ mode, waitSeconds: 600, dir: first.dir, port: first.port });
        const text = 'after the restart: "quoted" — ünïcødé\nsecond line';
        await second.add(text);
        const next = await client.call(agent);
        assert.equal(resultJson(next).result_type, "instruction", JSON.stringify(resultJson(next)));
        assert.equal(resultJson(next).instruction.content, text);
      } finally {
        await client.close().catch(() => {});
        await first.stop();
        await second?.stop();
      }
    });
  }
}

const LONG_WAIT = Number(process.env.LOCAL_MCP_TS_LONG_WAIT_SECONDS ?? 70);

/**
 * The TS SDKs give a request 60 s unless progress resets the clock: a longer
 * wait must complete when the caller asks for progress (`onprogress` +
 * `resetTimeoutOnProgress`) and our server sends it.
 */
export function longWait(name, open) {
  test(`${name}: a ${LONG_WAIT}-second wait outlasts the 60-second default timeout`, { skip: LONG_WAIT === 0 && "LOCAL_MCP_TS_LONG_WAIT_SECONDS=0" }, async () => {
    const server = await startServer({ waitSeconds: LONG_WAIT });
    const client = await open(server);
    try {
      let progress = 0;
      const started = Date.now();
      const r = await client.call(`${name}-patient`, { onprogress: () => progress++, resetTimeoutOnProgress: true });
      const waited = (Date.now() - started) / 1000;
      assert.equal(resultJson(r).result_type, "default_response");
      assert.equal(resultJson(r).waited_seconds, LONG_WAIT);
      assert.ok(waited > 60, `waited ${waited} s`);
      assert.ok(progress >= Math.floor(LONG_WAIT / 10), `${progress} progress notifications`);
    } finally {
      await client.close();
      await server.stop();
    }
  });
}
