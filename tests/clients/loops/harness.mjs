// Real coding agents running their own agent loop, headless, against the
// real local-mcp-server, with the scripted model (model.mjs) in place of the
// vendor's API. One run per client walks through what a person does with an
// agent in a loop, and every step is checked on what the MODEL received:
//
//   - a wait with nothing queued ends normally (the server's short wait,
//     inside the timeout `connect` wrote) and the loop goes on;
//   - three instructions queued at intervals reach the model in order,
//     exactly once, with their exact text (quotes, non-ASCII, newlines);
//   - an instruction with an image reaches the model as an image, or the
//     client drops it (a finding, asserted as what the client does);
//   - the agent's question with options reaches the server, and the answer
//     reaches the model;
//   - the run ends when the model ends its turn, and nothing is marked
//     delivered that the model did not receive.
//
// Each client is configured by what `local-mcp-server connect <client>`
// writes, in a home of its own, beside its own model settings.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { png } from "../../png.mjs";
import { serverBin, startServer, until } from "../harness.mjs";
import { shown, startModel } from "./model.mjs";

export { serverBin, startServer, until, startModel, shown };

const clients = join(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(clients, "node_modules", ".bin");

/** The server's short wait in these runs: a wait that ends, well inside every client's limit. */
export const WAIT = 3;

/** Variables that would point a client at a real account or another server. */
const FOREIGN = /^(ANTHROPIC_|CLAUDE_|OPENAI_|CODEX_|GEMINI_|GOOGLE_|COPILOT_|GH_|GITHUB_|OPENCODE_|LOCAL_MCP_(URL|TOKEN)$)/;

/**
 * A fresh home for one client run: `dir` (HOME), `project` (the working
 * folder), `env` (the client's environment; the server's connection file,
 * the clients' commands on PATH, nothing of the person's accounts);
 * `remove()` when done.
 */
/** One cache for every home of this test process (Copilot CLI unpacks 235 MB there on its first run). */
let cache = null;
after(() => cache && rmSync(cache, { recursive: true, force: true }));

export function clientHome(server, name) {
  cache ??= mkdtempSync(join(tmpdir(), "loop-cache-"));
  const dir = mkdtempSync(join(tmpdir(), `loop-${name}-`));
  const project = join(dir, "work");
  mkdirSync(project);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !FOREIGN.test(k)));
  Object.assign(env, {
    HOME: dir,
    XDG_CONFIG_HOME: join(dir, ".config"),
    XDG_CACHE_HOME: cache,
    XDG_DATA_HOME: join(dir, ".local", "share"),
    XDG_STATE_HOME: join(dir, ".local", "state"),
    LOCAL_MCP_CONNECTION_FILE: server.connectionFile,
    DISABLE_AUTOUPDATER: "1",
    NO_COLOR: "1",
    CI: "1",
    PATH: `${bin}:${process.env.PATH}`,
  });
  return { dir, project, env, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Run `cmd` to its end (connect, a client's own command); its output, or a failure naming it. */
export function runTo(cmd, args, { env, cwd, timeout = 120_000 }) {
  const p = spawnClient(cmd, args, { env, cwd });
  return p.ended(timeout, `${cmd} ${args.join(" ")}`).then(({ code }) => {
    assert.equal(code, 0, `${cmd} ${args.join(" ")} exited ${code}:\n${p.output()}`);
    return p.output();
  });
}

const running = new Set();
after(() => {
  for (const p of running) p.kill();
});

/**
 * Start a client (in a process group of its own, so it ends with all it
 * started); `stdin: "pipe"` to type into it (`child.stdin`). `ended(ms,
 * what)` resolves with {code, signal} or fails naming what it waited for,
 * with the client's output.
 */
export function spawnClient(cmd, args, { env, cwd, stdin = "ignore" }) {
  const child = spawn(cmd, args, { env, cwd, stdio: [stdin, "pipe", "pipe"], detached: true });
  let out = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (out += d));
  let exit = null;
  const exited = new Promise((ok) => {
    child.on("exit", (code, signal) => ok((exit = { code, signal })));
    child.on("error", (e) => ok((exit = { code: -1, signal: null, error: e })));
  });
  const p = {
    child,
    exited,
    output: () => out.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, ""),
    get exit() {
      return exit;
    },
    async ended(ms, what) {
      let timer;
      const r = await Promise.race([exited, new Promise((ok) => (timer = setTimeout(() => ok(null), ms)))]);
      clearTimeout(timer);
      if (!r) throw new Error(`timed out after ${ms} ms waiting for ${what} to exit; its output:\n${p.output().slice(-4000)}`);
      return r;
    },
    kill() {
      running.delete(p);
      if (exit) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {}
    },
  };
  running.add(p);
  exited.then(() => running.delete(p));
  return p;
}

/**
 * The server's answer as the model received it, from a tool result's text
 * (clients wrap it: "Wall time: …\nOutput:", <untrusted_context>…): the JSON
 * object with `result_type`, or null.
 */
export function served(result) {
  for (const text of result?.texts ?? []) {
    for (const candidate of [text, text.slice(text.indexOf("{"), text.lastIndexOf("}") + 1)]) {
      try {
        const v = JSON.parse(candidate);
        if (v && typeof v === "object" && "result_type" in v) return v;
      } catch {}
    }
  }
  return null;
}

/** What a turn's request says the previous call returned: the server's JSON, or a failure showing the request. */
export function received(turn, what) {
  const result = turn.result;
  assert.ok(result, `${what}: the model request carries no tool result:\n${turn.show()}`);
  assert.equal(result.isError, false, `${what}: the tool result is an error:\n${turn.show()}`);
  const v = served(result);
  assert.ok(v, `${what}: no local-mcp answer in the tool result the model received:\n${turn.show()}`);
  return v;
}

/**
 * The model's next turn from `run`'s loop, within `timeout` ms; fails at once,
 * with the client's output, if the client exits first.
 */
export function turnOf(model, run, name, what, timeout = 60_000) {
  const stop = new AbortController();
  run.exited.then(({ code, signal }) => {
    stop.abort(new Error(`${name} exited (${code ?? signal}) while the test waited for its model request with ${what}:\n${run.output().slice(-3000)}`));
  });
  return model.turn({ timeout, what: `${name}'s model request with ${what}`, signal: stop.signal });
}

/** Width and height of a base64 PNG (its IHDR), or null when it is not one. */
export function pngSize(base64) {
  const b = Buffer.from(base64 ?? "", "base64");
  if (b.length < 24 || b.toString("latin1", 1, 4) !== "PNG") return null;
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

/** Every instruction the model received, by tool call (a call counted once however often the history repeats it). */
export function deliveredToModel(model) {
  const byCall = new Map();
  for (const r of model.turns) {
    for (const e of r.events) {
      if (e.kind !== "result") continue;
      const v = served(e);
      if (v?.instruction && !byCall.has(e.id)) byCall.set(e.id, v.instruction);
    }
  }
  return [...byCall.values()];
}

// The texts queued: quotes, non-ASCII and newlines must arrive untouched.
export const TEXTS = [
  'Rename "Foo" to „Bar“ — Grüße — 日本語\nthen run the tests',
  "Line one\nLine two\n\n\tindented with a tab, a backslash \\ and {\"json\": true}",
  "Emoji 🙂, <b>not HTML</b> & an ampersand; 'single' quotes",
];
/** What the agent reports on each of them, on its next call. */
export const REPORTS = ["Renamed `Foo` to „Bar“; the tests pass.", "Read all **four** lines.", "Noted: no HTML — 🙂"];
export const IMAGE_TEXT = "What is wrong in this screenshot?";
export const QUESTION = "Which database should the cache use?\n\nBoth work; SQLite needs no server.";
export const OPTIONS = ["SQLite", "Postgres — with \"pgbouncer\""];
/** What each run is asked to do (the scripted model decides what happens). */
export const PROMPT = "Call the MCP tool get_user_request (local-mcp) in a loop: do what it returns, then call it again.";
export const ANSWER = "Use SQLite — „keep it simple“, 日本";

/**
 * The agent-loop scenario for one client. `client`:
 *   name        as the tests name it ("Codex")
 *   connect     the `connect` id ("codex")
 *   known       how the server names it in /api/status ({name, version})
 *   images      where an image reaches the model: "tool-result" (in the
 *               tool result), "beside" (in a user message after it),
 *               "dropped" (nowhere; a finding)
 *   configure   async ({server, model, home}) => {cmd, args, env?, timeout?}:
 *               its model settings and `connect`, how to start its headless
 *               run, and the tool-call timeout connect wrote (seconds)
 */
export function agentLoop(client) {
  const agent = `loop-${client.connect}`;
  describe(`${client.name} runs its own agent loop against local-mcp (scripted model)`, () => {
    let server;
    let model;
    let run;
    let turn; // the model's turn waiting for an answer
    let home;
    let broken = null; // the first step that failed: later steps depend on it
    const ids = {}; // instruction ids by step

    before(async () => {
      server = await startServer({ waitSeconds: WAIT, env: { LOG_LEVEL: "info" } });
      model = await startModel({ name: client.name });
      home = clientHome(server, client.connect);
      const how = await client.configure({ server, model, home });
      // The tool-call timeout connect wrote (where the client has one) outlasts the server's wait.
      if (how.timeout !== undefined) assert.ok(how.timeout > WAIT, `${client.name}'s tool-call timeout ${how.timeout} s is not longer than the wait`);
      run = spawnClient(how.cmd, how.args, { env: { ...home.env, ...how.env }, cwd: home.project });
    });
    after(async () => {
      run?.kill();
      await model?.close();
      await server?.stop();
      if (server) rmSync(server.dir, { recursive: true, force: true });
      home?.remove();
    });

    /** A step of the run: skipped once an earlier one failed (it would only time out). */
    const step = (title, fn) =>
      test(title, async (t) => {
        if (broken) return t.skip(`an earlier step failed: ${broken}`);
        try {
          await fn(t);
        } catch (e) {
          broken = title;
          if (run) e.message += `\n--- ${client.name}'s output (last 3000 characters) ---\n${run.output().slice(-3000)}`;
          throw e;
        }
      });

    /** The next turn of the loop; `what` names it in a failure. */
    const next = (what, timeout = 60_000) => turnOf(model, run, client.name, what, timeout);
    const waiting = () =>
      until(async () => (await server.agent(agent))?.waiting, { timeout: 30_000, what: `${agent}'s call to wait on the server` });

    step("starts its loop: the model is offered get_user_request and calls it", async () => {
      turn = await next("the first prompt", 120_000);
      assert.match(turn.offered, /get_user_request/, `the model is not offered the tool:\n${turn.show()}`);
      turn.call({ agent_id: agent });
    });

    step(`a wait with nothing queued ends normally after the server's ${WAIT} s, and the loop goes on`, async () => {
      const started = Date.now();
      turn = await next(`the result of a ${WAIT}-second wait with nothing queued`);
      const v = received(turn, "the empty wait");
      assert.ok(["default_response", "empty"].includes(v.result_type), `expected an empty wait's result, got ${v.result_type}:\n${turn.show()}`);
      assert.equal(v.instruction, null);
      assert.ok(v.waited_seconds >= WAIT - 0.5 && v.waited_seconds < WAIT + 5, `waited ${v.waited_seconds} s, expected about ${WAIT}`);
      assert.ok(Date.now() - started < 60_000);
      // The server knew the client, and the wait it gave it is the one set here.
      const a = await server.agent(agent);
      assert.equal(a?.client?.name, client.known.name, JSON.stringify(a));
      assert.equal(a?.client?.version, client.known.version, JSON.stringify(a));
      assert.equal(a?.client?.wait_seconds, WAIT, JSON.stringify(a));
      turn.call({ agent_id: agent });
    });

    step("three instructions queued at intervals reach the model in order, exactly once, with their exact text", async () => {
      // The first wakes a waiting call.
      await waiting();
      ids.a = (await server.add(TEXTS[0])).id;
      turn = await next("the first instruction");
      let v = received(turn, "the first instruction");
      assert.equal(v.result_type, "instruction", turn.show());
      assert.equal(v.instruction.id, ids.a);
      assert.equal(v.instruction.content, TEXTS[0]);
      // The second a moment into the next wait. Each call after an
      // instruction reports on it, as the tool asks (and Gemini CLI stops a
      // fifth identical call in a row: see gemini-cli.test.mjs).
      turn.call({ agent_id: agent, report: REPORTS[0] });
      await waiting();
      await new Promise((r) => setTimeout(r, 500));
      ids.b = (await server.add(TEXTS[1])).id;
      turn = await next("the second instruction");
      v = received(turn, "the second instruction");
      assert.equal(v.instruction?.id, ids.b, turn.show());
      assert.equal(v.instruction.content, TEXTS[1]);
      // The third is already pending when the call comes.
      ids.c = (await server.add(TEXTS[2])).id;
      turn.call({ agent_id: agent, report: REPORTS[1] });
      turn = await next("the third instruction");
      v = received(turn, "the third instruction");
      assert.equal(v.instruction?.id, ids.c, turn.show());
      assert.equal(v.instruction.content, TEXTS[2]);
      assert.equal(v.remaining_pending, 0);
    });

    const imageTitle = {
      "tool-result": "an image attachment reaches the model as an image in the tool result",
      beside: "an image attachment reaches the model as an image beside the tool result (a user message after it)",
      dropped: "an image attachment does not reach the model (the client drops it); its path does",
    }[client.images];
    step(imageTitle, async () => {
      const item = await server.addWithFiles(IMAGE_TEXT, [{ name: "screenshot.png", bytes: png(48, 20), type: "image/png" }]);
      ids.image = item.id;
      const aid = item.attachments[0].id;
      turn.call({ agent_id: agent, report: REPORTS[2] });
      turn = await next("the instruction with an image");
      const v = received(turn, "the instruction with an image");
      assert.equal(v.instruction?.id, ids.image, turn.show());
      assert.equal(v.instruction.content, IMAGE_TEXT);
      const listed = v.instruction.attachments?.[0];
      assert.equal(listed?.mime_type, "image/png", turn.show());
      assert.ok(listed.path && existsSync(listed.path), `the attachment's path is not a file: ${listed.path}`);
      // The copy agents get, as the server serves it: what the model must see.
      const res = await fetch(`${server.url}/api/attachments/${aid}?variant=delivery`);
      const delivery = Buffer.from(await res.arrayBuffer()).toString("base64");
      const inResult = turn.result.images;
      const beside = turn.sinceCall.filter((e) => e.kind === "user").flatMap((e) => e.images);
      const anywhere = JSON.stringify(turn.request.body).includes(delivery.slice(0, 60));
      if (client.images === "tool-result") {
        assert.equal(inResult.length, 1, `no image in the tool result:\n${turn.show()}`);
        assert.equal(inResult[0].mime, "image/png");
        assert.equal(inResult[0].data, delivery, "the image the model got is not the server's delivery copy");
        assert.deepEqual(pngSize(inResult[0].data), { width: 48, height: 20 });
      } else if (client.images === "beside") {
        assert.equal(inResult.length, 0, turn.show());
        assert.equal(beside.length, 1, `no image after the tool result:\n${turn.show()}`);
        assert.equal(beside[0].mime, "image/png");
        assert.equal(beside[0].data, delivery, "the image the model got is not the server's delivery copy");
        assert.deepEqual(pngSize(beside[0].data), { width: 48, height: 20 });
      } else {
        assert.equal(inResult.length + beside.length, 0, `the image now reaches the model: update docs/CLIENTS.md\n${turn.show()}`);
        assert.ok(!anywhere, "the image's bytes are in the model request after all");
        // What the agent has instead: the path of the delivery copy, to open with its own tools.
        assert.ok(turn.result.texts.some((t) => t.includes(listed.path.replace(/\\/g, "\\\\")) || t.includes(listed.path)), turn.show());
      }
    });

    step("the agent's question with options reaches the server, and the answer reaches the model", async () => {
      turn.call({ agent_id: agent, report: QUESTION, options: OPTIONS });
      const report = await until(
        async () => (await server.api("GET", `/api/reports?agent_id=${agent}`)).body.items.find((r) => r.content === QUESTION),
        { timeout: 30_000, what: `the report of ${agent} on the server` },
      );
      assert.deepEqual(report.options, OPTIONS);
      assert.equal(report.instruction_id, ids.image, "the report attaches to the instruction the previous call delivered");
      assert.equal((await server.agent(agent)).asking, report.id);
      const r = await server.api("POST", `/api/reports/${report.id}/reply`, { content: ANSWER });
      assert.equal(r.status, 201, JSON.stringify(r.body));
      ids.answer = r.body.item.id;
      assert.equal(r.body.item.target, agent, "the answer is for the agent that asked");
      turn = await next("the answer to its question");
      const v = received(turn, "the answer");
      assert.equal(v.instruction?.content, ANSWER, turn.show());
      assert.equal(v.instruction.in_reply_to?.report_id, report.id);
      assert.equal(v.instruction.in_reply_to?.question, QUESTION.split("\n")[0], "the question's first line");
    });

    step("the run ends when the model ends its turn, and nothing is marked delivered that the model did not receive", async () => {
      turn.say("All done.");
      const { code, signal } = await run.ended(60_000, `${client.name}'s headless run`);
      assert.equal(code, 0, `${client.name} exited ${code ?? signal}:\n${run.output().slice(-3000)}`);
      const got = deliveredToModel(model);
      const order = [ids.a, ids.b, ids.c, ids.image, ids.answer];
      assert.deepEqual(
        got.map((i) => i.id),
        order,
        `the model received, by tool call: ${JSON.stringify(got.map((i) => i.content))}`,
      );
      assert.equal(got.at(-1).content, ANSWER);
      const consumed = (await server.api("GET", "/api/instructions?status=consumed&limit=100")).body.items;
      assert.deepEqual(consumed.map((i) => i.id).sort(), [...order].sort(), "consumed on the server, but not received by the model (or the reverse)");
      // The agent's report on each reached the server, attached to it.
      assert.deepEqual(
        order.map((id) => consumed.find((i) => i.id === id)?.report?.content ?? null),
        [...REPORTS, QUESTION, null],
      );
      for (const i of consumed) {
        assert.equal(i.consumed_by_agent_id, agent);
        // Each one but the last was followed by another call ("confirmed"); the last was written out ("sent").
        assert.equal(i.delivery, i.id === order.at(-1) ? "sent" : "confirmed", `${JSON.stringify(i.content)}: delivery ${i.delivery}`);
      }
      // In the last request's history each instruction is in exactly one tool result.
      const last = model.turns.at(-1);
      for (const id of order) {
        const n = last.events.filter((e) => e.kind === "result" && served(e)?.instruction?.id === id).length;
        assert.equal(n, 1, `instruction ${id} is in ${n} tool results of the last request`);
      }
      assert.deepEqual(await server.pending(), []);
      assert.ok(await model.quiet(500), "the model was asked again after the run ended");
    });
  });
}

/**
 * A call that outlasts the client's own tool-call timeout (set to
 * `client.shortTimeout` seconds in its configuration, below the server's
 * 30-second wait): what the model gets when the client gives up, and that an
 * instruction queued right after is not taken by the call the client
 * abandoned — it reaches the model on its next call.
 * `client.configure(ctx, { callTimeout })` writes that timeout;
 * `client.timeoutText` matches what the model is told.
 */
export function timeoutLoop(client) {
  const agent = `timeout-${client.connect}`;
  describe(`${client.name}: a call that outlasts the client's own tool-call timeout`, () => {
    let server;
    let model;
    let run;
    let home;
    before(async () => {
      server = await startServer({ waitSeconds: 30, env: { LOG_LEVEL: "info" } });
      model = await startModel({ name: client.name });
      home = clientHome(server, `${client.connect}-timeout`);
      const how = await client.configure({ server, model, home }, { callTimeout: 3 });
      run = spawnClient(how.cmd, how.args, { env: { ...home.env, ...how.env }, cwd: home.project });
    });
    after(async () => {
      run?.kill();
      await model?.close();
      await server?.stop();
      if (server) rmSync(server.dir, { recursive: true, force: true });
      home?.remove();
    });

    const title = "the client gives up after its own 3 s timeout: the model is told, the server's call ends, and an instruction queued then reaches the next call";
    test(title, async () => {
      let turn = await turnOf(model, run, client.name, "the first prompt", 120_000);
      turn.call({ agent_id: agent });
      const called = Date.now();
      turn = await turnOf(model, run, client.name, "what came of a call past its 3 s timeout", 60_000);
      const elapsed = (Date.now() - called) / 1000;
      assert.ok(elapsed >= 2.5 && elapsed < 25, `the client gave up after ${elapsed} s`);
      assert.ok(turn.result, turn.show());
      assert.equal(served(turn.result), null, `the model got the server's answer:\n${turn.show()}`);
      assert.match(turn.result.texts.join("\n"), client.timeoutText, turn.show());
      // The call the client abandoned must not wait on: it would take the next instruction.
      await until(async () => (await server.agent(agent))?.waiting === false, {
        timeout: 10_000,
        what: `the server's call to end when ${client.name} gave up on it (it still waits)`,
      });
      const item = await server.add("Queued after the client gave up");
      await new Promise((r) => setTimeout(r, 1000));
      const still = (await server.api("GET", `/api/instructions/${item.id}`)).body.item;
      assert.equal(still.status, "pending", `taken by the abandoned call: ${JSON.stringify(still)}`);
      turn.call({ agent_id: agent, report: "The previous call timed out; calling again." });
      turn = await turnOf(model, run, client.name, "the instruction queued after the timeout");
      assert.equal(received(turn, "the instruction after the timeout").instruction?.id, item.id, turn.show());
      turn.say("Done.");
      const { code } = await run.ended(60_000, `${client.name}'s headless run`);
      assert.equal(code, 0, run.output());
      const consumed = (await server.api("GET", "/api/instructions?status=consumed")).body.items;
      assert.deepEqual(consumed.map((i) => [i.id, i.delivery]), [[item.id, "sent"]]);
    });
  });
}
