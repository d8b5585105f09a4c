// A newcomer's second walk (issue 39): focus that fell to the page when a
// ticket was delivered or a question answered; the agent panel's time of a
// question and its newest report in another queue than the one on screen;
// a held queue's bar and its agents' line; the token's texts; and the toast
// after an answer that reached its agent at once.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { artifacts, launchBrowser, openPage, startServer, until } from "./harness.mjs";

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** Both themes at the narrow and the wide width. */
const VIEWS = [[400, "light"], [400, "dark"], [1280, "light"], [1280, "dark"]];

let browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

const shot = async (page, name) => {
  await page.evaluate(() => document.fonts.ready);
  await page.screenshot({ path: join(artifacts, "screenshots", `${name}.png`), fullPage: true });
};

async function axeClean(page, what) {
  await page.evaluate(AXE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`), [], what);
}

/** What has focus: its tag, id, action, the ticket's text or the question's agent it is in. */
const focused = (page) =>
  page.evaluate(() => {
    const a = document.activeElement;
    return {
      tag: a?.tagName ?? "",
      id: a?.id ?? "",
      action: a?.dataset?.action ?? "",
      text: a?.textContent ?? "",
      ticket: a?.closest?.("#rail li[data-id]")?.querySelector(".ticket__text")?.textContent ?? null,
      onTicket: a?.matches?.("#rail li[data-id]") ?? false,
      ask: a?.closest?.("#asks li[data-agent]")?.dataset.agent ?? null,
      option: a?.matches?.(".report__options button") ?? false,
    };
  });

const railTexts = (page) => page.locator("#rail li:not(.ticket--leaving) .ticket__text").allTextContents();
const toastText = (page) => page.locator("#toast-text").textContent();

async function clearQueue(server) {
  for (const i of await server.pending()) await server.api("DELETE", `/api/instructions/${i.id}`);
}

describe("focus when what holds it goes", () => {
  let server;
  before(async () => {
    server = await startServer({ waitSeconds: 60 });
  });
  after(async () => {
    await server?.stop();
  });

  test("an agent takes the head ticket while focus is on its Move down: focus goes to the next ticket's Move down, then the ticket, then the composer", async () => {
    for (const [width, scheme] of VIEWS) {
      await clearQueue(server);
      for (const t of ["one", "two", "three"]) await server.add(t);
      // The wide light view with motion on: the ticket slides off, and focus moves at once all the same.
      const motion = width === 1280 && scheme === "light" ? "no-preference" : "reduce";
      const { page, errors, context, settled } = await openPage(browser, server, { width, height: 800, colorScheme: scheme, reducedMotion: motion });
      const where = `${width} px ${scheme} (motion: ${motion})`;
      await until(async () => (await railTexts(page)).join() === "one,two,three", { what: `${where}: three tickets` });
      await settled();
      await page.locator("#rail li").first().locator('[data-action="down"]').focus();
      assert.deepEqual([(await focused(page)).action, (await focused(page)).ticket], ["down", "one"]);

      assert.equal((await server.consume("taker")).instruction.content, "one");
      await until(async () => (await railTexts(page)).join() === "two,three", { what: `${where}: one taken` });
      await until(async () => { const f = await focused(page); return f.action === "down" && f.ticket === "two"; }, { what: `${where}: focus on two's Move down (the same control)` });
      // (With motion on, it moved while one was still sliding off.)
      await until(async () => (await page.locator("#rail .ticket--leaving").count()) === 0, { what: `${where}: the taken ticket gone` });
      assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle), "none", `${where}: its focus ring shows`);
      await axeClean(page, `${where}: the rail after a delivery`);
      await shot(page, `walk-focus-delivered-${width}-${scheme}`);

      // The last ticket's Move down is disabled, and so is its Move up: focus goes to the ticket itself.
      assert.equal((await server.consume("taker")).instruction.content, "two");
      await until(async () => { const f = await focused(page); return f.onTicket && f.ticket === "three"; }, { what: `${where}: focus on the ticket three` });
      // The rail empties: focus goes to the composer, where the next instruction is typed.
      assert.equal((await server.consume("taker")).instruction.content, "three");
      await until(async () => (await focused(page)).id === "composer-text", { what: `${where}: focus on the composer once the rail is empty` });
      assert.deepEqual(errors, []);
      await context.close();
    }
  });

  test("an option clicked in Needs you: its agent gets the answer at once, focus goes to the next question, then to the composer; the toast says it was sent", async () => {
    await clearQueue(server);
    for (const [width, scheme] of VIEWS) {
      const where = `${width} px ${scheme}`;
      const alpha = server.consume("alpha", null, { report: "Alpha here: left or right?", options: ["Left", "Right"] });
      const bravo = server.consume("bravo", null, { report: "Bravo here: keep the old API?", options: ["Keep it", "Drop it"] });
      await until(async () => (await server.agent("alpha"))?.waiting && (await server.agent("bravo"))?.waiting, { what: "both waiting on their questions" });
      const { page, errors, context } = await openPage(browser, server, { width, height: 900, colorScheme: scheme });
      const asks = page.locator("#asks li[data-agent]");
      await until(async () => (await asks.count()) === 2 && (await page.locator("#asks .report__options button").count()) === 4, { what: `${where}: two questions` });
      assert.deepEqual(await asks.evaluateAll((lis) => lis.map((li) => li.dataset.agent)), ["alpha", "bravo"]);

      // Clicked in the light views, by keyboard in the dark ones (where the focus ring must show).
      const left = page.locator('#asks li[data-agent="alpha"] .report__options button', { hasText: "Left" });
      const byKeyboard = scheme === "dark";
      if (byKeyboard) {
        await left.focus();
        await page.keyboard.press("Enter");
      } else await left.click();
      assert.equal((await alpha).instruction.content, "Left", "alpha got it at once");
      await until(async () => (await asks.count()) === 1, { what: `${where}: alpha's question gone once it got the answer` });
      await until(async () => { const f = await focused(page); return f.ask === "bravo" && f.option && f.text === "Keep it"; }, { what: `${where}: focus on bravo's first answer` });
      if (byKeyboard) assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle), "none", `${where}: its focus ring shows`);
      // The answer reached alpha: the toast does not say it is next.
      await until(async () => (await toastText(page)) === "Sent to alpha.", { what: `${where}: the toast says sent` });
      await axeClean(page, `${where}: Needs you after an answer`);
      await shot(page, `walk-focus-answered-${width}-${scheme}`);

      // The last question answered by keyboard: focus goes to the composer.
      await page.keyboard.press("Enter");
      assert.equal((await bravo).instruction.content, "Keep it");
      await until(() => page.locator("#asks").isHidden(), { what: `${where}: no question left` });
      await until(async () => (await focused(page)).id === "composer-text", { what: `${where}: focus on the composer` });
      await until(async () => (await toastText(page)) === "Sent to bravo.", { what: `${where}: the toast says sent` });
      assert.deepEqual(errors, []);
      await context.close();
    }
  });

  test("an answer to an agent that is not waiting: the toast says it is next, then sent once the agent takes it", async () => {
    await clearQueue(server);
    assert.equal((await server.api("PATCH", "/api/config", { default_wait_seconds: 1 })).status, 200);
    try {
      // Asked, then its call ended without an answer: it is not waiting now.
      await server.consume("carol", null, { report: "Carol here: go on?", options: ["Yes", "No"] });
      const { page, errors, context } = await openPage(browser, server);
      const yes = page.locator('#asks li[data-agent="carol"] .report__options button', { hasText: "Yes" });
      await until(() => yes.isVisible(), { what: "carol's question" });
      await yes.click();
      await until(async () => (await toastText(page)) === "Sent to carol: it is next.", { what: "the toast says it is next" });
      assert.equal((await server.pending())[0].content, "Yes", "pending, next for carol");
      // Still so a moment later: nothing took it.
      await page.evaluate(() => new Promise((r) => setTimeout(r, 500)));
      assert.equal(await toastText(page), "Sent to carol: it is next.");
      // Carol calls again and takes it: the toast says so.
      assert.equal((await server.consume("carol")).instruction.content, "Yes");
      await until(async () => (await toastText(page)) === "Sent to carol.", { what: "the toast says sent once carol took it" });
      assert.deepEqual(errors, []);
      await context.close();
    } finally {
      await server.api("PATCH", "/api/config", { default_wait_seconds: 60 });
    }
  });
});

/** "just now", "12 s ago", "2 min ago" in seconds. */
function seconds(phrase) {
  if (phrase === "just now") return 0;
  const m = /^(\d+) (s|min) ago$/.exec(phrase);
  assert.ok(m, `a relative time: ${phrase}`);
  return Number(m[1]) * (m[2] === "min" ? 60 : 1);
}

/** The text of the report shown in an agent's entry, or "" while there is none. */
const reportOf = async (row) => ((await row.locator(".report__body").count()) ? (await row.locator(".report__body").first().textContent()).trim() : "");

describe("the agent panel shows another queue's agents whole", () => {
  let server;
  before(async () => {
    server = await startServer({ waitSeconds: 1 });
  });
  after(async () => {
    await server?.stop();
  });

  test("a question's time is when it was asked, not the agent's last call; an agent's newest report shows whichever queue is on screen", async () => {
    // In proj: worker took an instruction and reported; asker asked, then its call ended.
    assert.equal((await server.api("POST", "/api/instructions", { content: "Build the parser", queue: "proj" })).status, 201);
    assert.equal((await server.consume("worker", "proj")).instruction.content, "Build the parser");
    await server.consume("worker", "proj", { report: "Done: the parser builds." });
    await server.consume("asker", "proj", { report: "Which database?", options: ["SQLite", "Postgres"] });
    // Some seconds later asker calls again, still asking: now it waits on the person.
    await new Promise((r) => setTimeout(r, 8000));
    assert.equal((await server.api("PATCH", "/api/config", { default_wait_seconds: 120 })).status, 200);
    const calls = [server.consume("asker", "proj").catch(() => null)];
    await until(async () => (await server.agent("asker", "proj"))?.waiting, { what: "asker waiting again" });

    for (const [width, scheme] of VIEWS) {
      const where = `${width} px ${scheme}`;
      const { page, errors, context, settled } = await openPage(browser, server, { width, height: 1000, colorScheme: scheme });
      assert.equal(await page.locator('#queue-tabs [aria-pressed="true"]').getAttribute("data-queue"), "default", `${where}: default on screen`);
      const asker = page.locator('#agents li[data-agent="asker"][data-queue="proj"]');
      const worker = page.locator('#agents li[data-agent="worker"][data-queue="proj"]');
      await until(async () => (await asker.count()) === 1 && (await worker.count()) === 1, { what: `${where}: both listed` });
      await until(async () => (await page.locator('#asks li[data-agent="asker"] .ask__when').count()) === 1, { what: `${where}: the question in Needs you` });
      // The panel says the question's own time, as Needs you does: not that of its last call (8 s later).
      const detail = await asker.locator(".agent__detail").textContent();
      const m = /^Asked you (.+); waiting for your answer\.$/.exec(detail);
      assert.ok(m && seconds(m[1]) >= 8, `${where}: the panel's time of the question: ${detail}`);
      const box = (await page.locator('#asks li[data-agent="asker"] .ask__when').textContent()).replace(" · ", "");
      assert.ok(m[1] === box || Math.abs(seconds(m[1]) - seconds(box)) <= 2, `${where}: the panel (${m[1]}) and Needs you (${box}) say the same time`);
      // worker's newest report, although proj is not on screen.
      await until(async () => (await reportOf(worker)) === "Done: the parser builds.", { what: `${where}: worker's report in its entry` });
      assert.equal(await worker.getByRole("button", { name: "Reply to worker" }).count(), 1, `${where}: a Reply under it`);
      await settled();
      await axeClean(page, `${where}: the agent panel`);
      await page.locator(".agents").scrollIntoViewIfNeeded();
      await shot(page, `walk-panel-other-queue-${width}-${scheme}`);
      assert.deepEqual(errors, []);
      await context.close();
    }

    // A new report comes by its event: the entry follows it, with no reload.
    const { page, errors, context, settled } = await openPage(browser, server);
    const worker = page.locator('#agents li[data-agent="worker"][data-queue="proj"]');
    await until(async () => (await reportOf(worker)) === "Done: the parser builds.", { what: "worker's report" });
    await settled();
    calls.push(server.consume("worker", "proj", { report: "Done: the tests pass." }).catch(() => null));
    await until(async () => (await reportOf(worker)) === "Done: the tests pass.", { what: "the new report in worker's entry" });
    // Shown in proj, then back in default: still there.
    await page.locator('#queue-tabs [data-queue="proj"]').click();
    await until(async () => (await page.locator('#queue-tabs [aria-pressed="true"]').getAttribute("data-queue")) === "proj", { what: "proj on screen" });
    await until(async () => (await reportOf(worker)) === "Done: the tests pass.", { what: "worker's report with proj on screen" });
    await page.locator('#queue-tabs [data-queue="default"]').click();
    await settled();
    assert.equal(await reportOf(worker), "Done: the tests pass.", "worker's report with default on screen again");
    assert.deepEqual(errors, []);
    await context.close();
    for (const id of ["asker", "worker"]) await server.api("POST", "/api/agents/stop", { queue: "proj", agent_id: id });
    await Promise.all(calls);
  });
});

describe("a held queue", () => {
  let server;
  before(async () => {
    server = await startServer({ waitSeconds: 60 });
  });
  after(async () => {
    await server?.stop();
  });

  test("with some queues held the bar offers Hold all and Release all, each only while it changes something; a listening agent of a held queue gets nothing, and says so", async () => {
    assert.equal((await server.api("POST", "/api/queues", { name: "proj" })).status, 201);
    const call = server.consume("newbie").catch(() => null);
    await until(async () => (await server.agent("newbie"))?.waiting, { what: "newbie listening" });
    const holdAll = (page) => page.locator("#queue-hold-all");
    const releaseAll = (page) => page.locator("#queue-release-all");
    for (const [width, scheme] of VIEWS) {
      const where = `${width} px ${scheme}`;
      const { page, errors, context, settled } = await openPage(browser, server, { width, height: 900, colorScheme: scheme });
      const row = page.locator('#agents li[data-agent="newbie"]');
      await until(async () => /^Waiting for an instruction/.test(await row.locator(".agent__detail").textContent().catch(() => "")), { what: `${where}: newbie listening` });
      // Nothing held: only Hold all.
      await until(() => holdAll(page).isVisible(), { what: `${where}: Hold all` });
      assert.ok(await releaseAll(page).isHidden(), `${where}: no Release all with nothing held`);

      // default held, proj not: both, each changing something.
      await page.locator("#queue-hold").click();
      await until(() => releaseAll(page).isVisible(), { what: `${where}: Release all once default is held` });
      assert.ok(await holdAll(page).isVisible(), `${where}: Hold all still offered: proj is not held`);
      assert.deepEqual([await holdAll(page).textContent(), await releaseAll(page).textContent()], ["Hold all", "Release all"]);
      // newbie is listening, and gets nothing: said, not "waiting for an instruction".
      await until(async () => (await row.locator(".agent__detail").textContent()) === "Queue held: gets nothing until you release it.", { what: `${where}: newbie's line in a held queue` });
      assert.equal(await row.locator(".agent__state").textContent(), "Listening");
      await settled();
      await axeClean(page, `${where}: a held queue`);
      await shot(page, `walk-held-${width}-${scheme}`);

      // By keyboard: Hold all, then only Release all is left, and has focus; then the reverse.
      await holdAll(page).focus();
      await page.keyboard.press("Enter");
      await until(() => holdAll(page).isHidden(), { what: `${where}: Hold all gone with every queue held` });
      assert.deepEqual((await server.api("GET", "/api/status")).body.queues.map((q) => q.held), [true, true]);
      await until(async () => (await focused(page)).id === "queue-release-all", { what: `${where}: focus on Release all` });
      await page.keyboard.press("Enter");
      await until(() => releaseAll(page).isHidden(), { what: `${where}: Release all gone with nothing held` });
      await until(async () => (await focused(page)).id === "queue-hold-all", { what: `${where}: focus on Hold all` });
      await until(async () => /^Waiting for an instruction/.test(await row.locator(".agent__detail").textContent()), { what: `${where}: newbie waiting again once released` });
      assert.deepEqual(errors, []);
      await context.close();
    }
    await server.api("POST", "/api/agents/stop", { queue: "default", agent_id: "newbie" });
    await call;
  });
});

describe("the token's words", () => {
  test("with a token required, the empty state's snippet says where the token is", async () => {
    const TOKEN = "walk-token-5c1e";
    const server = await startServer({ env: { API_TOKEN: TOKEN } });
    try {
      for (const [width, scheme] of VIEWS) {
        const where = `${width} px ${scheme}`;
        const { page, errors, context, settled } = await openPage(browser, server, { width, height: 1100, colorScheme: scheme });
        await until(() => page.locator("#gate").isVisible(), { what: `${where}: the gate` });
        await page.locator("#gate-token").fill(TOKEN);
        await page.keyboard.press("Enter");
        await until(() => page.locator("#gate").isHidden(), { what: `${where}: signed in` });
        await until(async () => (await page.locator("#client-snippet").textContent()).includes("Bearer <your API token>"), { what: `${where}: the snippet with its placeholder` });
        const pointer = page.locator("#client-token");
        await until(() => pointer.isVisible(), { what: `${where}: the pointer to the token, with the empty rail` });
        assert.equal(await pointer.textContent(), "This server requires a token: put it in place of <your API token> (print it with local-mcp-server token).");
        assert.equal(await pointer.locator("code").nth(1).textContent(), "local-mcp-server token");
        await settled();
        await axeClean(page, `${where}: the empty state with a token`);
        await page.locator("#connect").scrollIntoViewIfNeeded();
        await shot(page, `walk-token-snippet-${width}-${scheme}`);
        assert.deepEqual(errors.filter((e) => !/status of 401/.test(e)), [], `${where}: no error but the gate's 401s`);
        await context.close();
      }
    } finally {
      await server.stop();
    }
  });

  test("no token and only my account: who may use it; requiring a token says what it does to connected agents; the new token can be printed again", async () => {
    const server = await startServer();
    try {
      for (const [width, scheme] of VIEWS) {
        const where = `${width} px ${scheme}`;
        const { page, errors, context, settled } = await openPage(browser, server, { width, height: 1400, colorScheme: scheme });
        const dialogs = [];
        let answer = false;
        page.on("dialog", (d) => {
          dialogs.push(d.message());
          return answer ? d.accept() : d.dismiss();
        });
        // No token here: the snippet has none to point at.
        await until(async () => (await page.locator("#client-snippet").textContent()).includes("/mcp"), { what: `${where}: the snippet` });
        assert.ok(await page.locator("#client-token").isHidden(), `${where}: no pointer without a token`);
        await page.locator("#settings-details summary").click();
        const said = page.locator("#token-state");
        // "Only my account" is on (the default): not "any program".
        assert.equal((await server.api("GET", "/api/config")).body.same_user_only, true);
        await until(async () => (await said.textContent()) === "No token: programs of your account on this computer can use local-mcp.", { what: `${where}: who may use it` });
        assert.equal((await server.api("PATCH", "/api/config", { same_user_only: false })).status, 200);
        await until(async () => (await said.textContent()) === "No token: any program on this computer can use local-mcp.", { what: `${where}: any program once the setting is off` });
        assert.equal((await server.api("PATCH", "/api/config", { same_user_only: true })).status, 200);
        await until(async () => (await said.textContent()) === "No token: programs of your account on this computer can use local-mcp.", { what: `${where}: back` });

        // Require a token: the confirm says what happens to agents connected now. Declined: nothing changes.
        await page.locator("#token-new").click();
        await until(() => dialogs.length === 1, { what: `${where}: the confirm` });
        assert.equal(dialogs[0], "Require a token? Agents connected now will be refused until their configuration has the token (local-mcp-server connect --update rewrites it).");
        assert.equal((await server.api("GET", "/api/token")).body.required, false, "declined: no token");
        answer = true;
        await page.locator("#token-new").click();
        await until(() => page.locator("#token-reveal").isVisible(), { what: `${where}: the new token` });
        server.token = await page.locator("#token-value").inputValue();
        assert.equal(await page.locator('label[for="token-value"]').textContent(), "New token — copy it now (local-mcp-server token prints it again)");
        await until(async () => /required/.test(await said.textContent()), { what: `${where}: required` });
        await settled();
        await axeClean(page, `${where}: the token's settings`);
        await page.locator("#token-box").scrollIntoViewIfNeeded();
        await shot(page, `walk-token-settings-${width}-${scheme}`);

        // Stop requiring it: with only my account on, not "any program".
        await page.locator("#token-remove").click();
        await until(async () => (await said.textContent()).startsWith("No token"), { what: `${where}: no token again` });
        assert.equal(dialogs.at(-1), "Stop requiring a token? Programs of your account on this computer could then use local-mcp without one.");
        server.token = undefined;
        assert.deepEqual(errors, []);
        await context.close();
      }
    } finally {
      await server.stop();
    }
  });
});
