// What needs the person, and whether the page tells the truth about agents
// (issue 25 §2, §3): an agent waiting on an answer is the loudest thing in
// the header, the queue tab and the agent panel, its question comes before
// the rail at 400 px, and Stop does not look like an answer; agents' states
// are the server's, in words; the empty rail and a queue nobody serves say
// what is true.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { artifacts, launchBrowser, openPage, startServer, until } from "./harness.mjs";

let browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

const shot = (page, name) => page.screenshot({ path: join(artifacts, "screenshots", `${name}.png`), fullPage: true });
const box = (page, sel) => page.locator(sel).first().evaluate((e) => e.getBoundingClientRect().toJSON());

describe("an agent that needs you", () => {
  let server;
  before(async () => {
    server = await startServer({ waitSeconds: 60 });
  });
  after(async () => {
    await server?.stop();
  });

  test("is the loudest state everywhere, its question comes before the rail, and Stop is not an answer", async () => {
    // Work the waiting agents cannot take (it is for someone else), so the rail has tickets.
    for (const content of ["Tidy the changelog", "Bump the version"]) {
      assert.equal((await server.api("POST", "/api/instructions", { content, target: "someone-else" })).status, 201);
    }
    // Their calls end when the server stops, should an assertion fail first.
    const listener = server.consume("helper").catch(() => null);
    const asker = server.consume("asker", null, { report: "Both parsers pass. **Which one** do we keep?", options: ["The new one", "The old one"] }).catch(() => null);
    await until(async () => (await server.agent("asker"))?.waiting && (await server.agent("helper"))?.waiting, { what: "both agents waiting" });

    for (const [width, scheme] of [[1280, "light"], [400, "dark"], [400, "light"], [1280, "dark"]]) {
      const { page, errors, context } = await openPage(browser, server, { width, height: 900, colorScheme: scheme });
      const where = `${width} px ${scheme}`;
      await until(async () => (await page.locator("#lamp").getAttribute("data-state")) === "needs_you", { what: `${where}: the header lamp says needs you` });
      assert.match(await page.locator("#agent-word").textContent(), /^Needs you · asker/);
      // Loud: the word sits on the signal colour, unlike "Listening".
      assert.notEqual(await page.locator("#agent-word").evaluate((e) => getComputedStyle(e).backgroundColor), "rgba(0, 0, 0, 0)");
      const tab = page.locator('#queue-tabs [data-queue="default"]');
      assert.equal(await tab.locator(".qtab__needs").textContent(), "needs you");
      assert.match(await tab.textContent(), /1 listening/, "the other agent still counts as listening");
      // The agent panel: the asker first, in the loud word; the other one listening.
      await until(async () => (await page.locator("#agents li[data-agent]").count()) === 2, { what: "both agents listed" });
      assert.equal(await page.locator("#agents li[data-agent]").first().getAttribute("data-agent"), "asker");
      assert.equal(await page.locator('#agents li[data-agent="asker"] .agent__state').textContent(), "Needs you");
      assert.equal(await page.locator('#agents li[data-agent="helper"] .agent__state').textContent(), "Listening");
      // The question with its answers, above the rail at every width.
      const ask = page.locator('#asks li[data-agent="asker"]');
      await until(() => ask.isVisible(), { what: `${where}: the question` });
      assert.equal(await ask.locator(".report__body strong").textContent(), "Which one");
      assert.deepEqual(await ask.locator(".report__options button").allTextContents(), ["The new one", "The old one"]);
      const [question, firstTicket] = [await box(page, "#asks"), await box(page, "#rail .ticket")];
      assert.ok(question.bottom <= firstTicket.top, `${where}: the question (ends at ${question.bottom}) comes before the rail (starts at ${firstTicket.top})`);
      // Stop ends the loop: it is in the agent panel, not among the answers, and does not look like one.
      assert.equal(await page.locator('#asks [data-action="stop"]').count(), 0, "no Stop among the answers");
      const stop = '#agents li[data-agent="asker"] [data-action="stop"]';
      assert.equal(await page.locator(stop).count(), 1);
      // Found and measured in one step: the agent panel is redrawn on every status event.
      const look = (sel) => page.evaluate((sel) => { const s = getComputedStyle(document.querySelector(sel)); return `${s.borderTopWidth} ${s.borderTopStyle} ${s.backgroundColor}`; }, sel);
      assert.notEqual(await look(stop), await look('#asks li[data-agent="asker"] .report__options button'), "Stop is drawn like an answer");
      await page.evaluate(() => document.fonts.ready);
      await shot(page, `needs-you-${width}-${scheme}`);
      assert.deepEqual(errors, []);
      await context.close();
    }

    // Answered, the question goes and the lamp calms down.
    const { page, errors, context } = await openPage(browser, server);
    const ask = page.locator('#asks li[data-agent="asker"]');
    await until(() => ask.isVisible(), { what: "the question" });
    await ask.locator(".report__options button", { hasText: "The new one" }).click();
    assert.equal((await asker).instruction.content, "The new one");
    await until(() => page.locator("#asks").isHidden(), { what: "the question gone once delivered" });
    await until(async () => (await page.locator("#lamp").getAttribute("data-state")) !== "needs_you", { what: "the lamp no longer says needs you" });
    assert.equal(await page.locator('#queue-tabs [data-queue="default"] .qtab__needs').count(), 0);
    assert.deepEqual(errors, []);
    await context.close();
    await server.api("POST", "/api/agents/stop", { queue: "default", agent_id: "helper" });
    await listener;
  });
});

describe("what the page says about agents is true", () => {
  test("an empty rail offers to connect an agent only while none is there; work with nobody there says so", async () => {
    const server = await startServer({ waitSeconds: 60 });
    try {
      const { page, errors, context } = await openPage(browser, server);
      await until(() => page.locator("#rail-empty").isVisible(), { what: "the empty rail" });
      assert.ok(await page.locator("#connect").isVisible(), "no agent yet: how to connect one");
      assert.ok(await page.locator("#rail-nobody").isHidden());

      // Queued with nobody there: the rail says nobody will take it.
      await server.add("Write the migration");
      await until(() => page.locator("#rail-nobody").isVisible(), { what: "the nobody-will-take-it note" });
      assert.match(await page.locator("#rail-nobody").textContent(), /nobody will take these/);
      await shot(page, "rail-nobody-1280-light");

      // An agent takes it: working, in words that say what it took.
      await server.consume("worker");
      const worker = page.locator('#agents li[data-agent="worker"]');
      await until(async () => (await worker.locator(".agent__state").textContent()) === "Working", { what: "the agent working" });
      await until(async () => /^Took “Write the migration” (just now|\d+ s ago)\.$/.test(await worker.locator(".agent__detail").textContent()), { what: "what it took, in words" });
      assert.doesNotMatch(await page.locator("#agents").textContent(), /fetched|never/, "no jargon in the agent panel");

      // Listening now, the rail is empty: no "Connect an agent", but who is there.
      const call = server.consume("worker").catch(() => null);
      await until(async () => (await worker.locator(".agent__state").textContent()) === "Listening", { what: "the agent listening" });
      await until(() => page.locator("#rail-empty-ready").isVisible(), { what: "who takes what is queued" });
      assert.ok(await page.locator("#connect").isHidden(), "Connect an agent is offered while an agent is connected");
      assert.ok(await page.locator("#rail-empty-how").isHidden());
      assert.equal(await page.locator("#rail-empty-ready").textContent(), "worker is listening: what you queue goes to it at once.");
      assert.match(await worker.locator(".agent__detail").textContent(), /^Waiting for an instruction for (a few seconds|\d+ s)\.$/);
      await shot(page, "rail-empty-listening-1280-light");
      await server.api("POST", "/api/agents/stop", { queue: "default", agent_id: "worker" });
      await call;
      assert.deepEqual(errors, []);
      await context.close();
    } finally {
      await server.stop();
    }
  });

  test("an agent gone quiet is not working: the page says how long it has not been heard from", async () => {
    const server = await startServer({ waitSeconds: 0 });
    try {
      await server.api("PATCH", "/api/config", { agent_stale_after_seconds: 1 });
      await server.consume("quiet");
      await new Promise((r) => setTimeout(r, 1500));
      const { page, errors, context } = await openPage(browser, server);
      const quiet = page.locator('#agents li[data-agent="quiet"]');
      await until(async () => (await quiet.locator(".agent__state").textContent()) === "Offline", { what: "the agent offline" });
      assert.match(await quiet.locator(".agent__detail").textContent(), /^Not heard from for (a few seconds|\d+ s)\.$/);
      assert.equal(await quiet.locator('[data-action="stop"]').count(), 0, "nothing to stop");
      // And nobody is there to take new work.
      await server.add("Anyone?");
      await until(() => page.locator("#rail-nobody").isVisible(), { what: "the nobody-will-take-it note" });
      assert.deepEqual(errors, []);
      await context.close();
    } finally {
      await server.stop();
    }
  });

  test("the agent's client and its session, when the engine says them", async () => {
    const server = await startServer({ waitSeconds: 60 });
    try {
      // Their calls end when the server stops, should an assertion fail first.
      const lead = server.consume("lead").catch(() => null);
      const sub = server.consume("lead-sub-1").catch(() => null);
      const solo = server.consume("solo").catch(() => null);
      await until(async () => (await server.agent("lead"))?.waiting && (await server.agent("lead-sub-1"))?.waiting && (await server.agent("solo"))?.waiting, { what: "three ids waiting" });
      const context = await browser.newContext({ reducedMotion: "reduce" });
      const page = await context.newPage();
      const errors = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      // The engine's newer fields, added to its status answers (the page polls: no stream).
      await page.route("**/api/events", (route) => route.fulfill({ status: 503, body: "" }));
      await page.route(/\/api\/status$/, async (route) => {
        const response = await route.fetch();
        const status = await response.json();
        for (const a of status.agents) {
          a.client = a.agent_id === "solo" ? { name: "opencode", wait_seconds: 300 } : { name: "Claude Code", version: "2.1.330", wait_seconds: 108 };
          if (a.agent_id !== "solo") a.session = "session-1";
          if (a.agent_id === "lead-sub-1") a.state = "needs_you";
        }
        await route.fulfill({ response, json: status });
      });
      await page.goto(server.url + "/");
      const session = page.locator('#agents li.agent-session[data-session="session-1"]');
      await until(() => session.isVisible(), { what: "one entry for the session" });
      await until(async () => (await page.locator("#agents > li").count()) === 2, { what: "two entries: the session and solo" });
      assert.equal(await session.locator(".agent-session__title").textContent(), "Claude Code 2.1.330 · waits up to 108 s");
      assert.equal(await session.locator(".agent-session__ids").textContent(), "2 agent ids in one session");
      assert.deepEqual(await session.locator("li[data-agent]").evaluateAll((lis) => lis.map((li) => li.dataset.agent)), ["lead-sub-1", "lead"], "the one that needs you first");
      assert.equal(await page.locator('#agents > li[data-agent="solo"] .agent__client').textContent(), "opencode · waits up to 300 s");
      // The engine's own "needs_you" state is the loud one too.
      assert.equal(await session.locator('li[data-agent="lead-sub-1"] .agent__state').textContent(), "Needs you");
      assert.equal(await page.locator("#lamp").getAttribute("data-state"), "needs_you");
      await shot(page, "agents-session-1280-light");
      assert.deepEqual(errors, []);
      await context.close();
      for (const id of ["lead", "lead-sub-1", "solo"]) await server.api("POST", "/api/agents/stop", { queue: "default", agent_id: id });
      await Promise.all([lead, sub, solo]);
    } finally {
      await server.stop();
    }
  });
});
