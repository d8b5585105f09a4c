// The API token, as a person meets it (issue 39): the gate says the server
// requires a token and where to find it (whoever set it: API_TOKEN or a
// page's Settings); an agent turned away for want of it is said at the top
// of the page, its time kept fresh, with what to do, until dismissed; the
// page's own refused requests (before it signs in) are not an agent's.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { artifacts, launchBrowser, openPage, startServer, until } from "./harness.mjs";

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

const VIEWS = [[400, "light"], [400, "dark"], [1280, "light"], [1280, "dark"]];
const TOKEN = "token-test-7f3a";
const CLAUDE = "claude-code/2.1.330 (cli)";

let browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

const shot = (page, name) => page.screenshot({ path: join(artifacts, "screenshots", `${name}.png`), fullPage: true });

async function axeClean(page, what) {
  await page.evaluate(AXE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`), [], what);
}

/** An agent whose configuration lacks the token: one raw MCP call to /mcp, refused. */
async function callWithoutToken(server, userAgent = CLAUDE) {
  const res = await fetch(server.mcpUrl, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "user-agent": userAgent },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_user_request", arguments: { agent_id: "tokenless" } } }),
  });
  await res.text();
  assert.equal(res.status, 401, "the agent without the token is refused");
  return (await server.api("GET", "/api/status")).body.server.refused_without_token;
}

/** Sign in through the gate; the page goes live. */
async function signIn(page) {
  await until(() => page.locator("#gate").isVisible(), { what: "the token gate" });
  await page.locator("#gate-token").fill(TOKEN);
  await page.keyboard.press("Enter");
  await until(() => page.locator("#gate").isHidden(), { what: "the gate closed" });
  await until(async () => (await page.locator("#conn").getAttribute("data-conn")) === "live", { what: "the page live with its session" });
}

/** What has focus: its id, or the text of a button without one. */
const focused = (page) => page.evaluate(() => document.activeElement?.id || document.activeElement?.textContent || "");

async function tabTo(page, wanted, what) {
  for (let i = 0; i < 40; i++) {
    await page.keyboard.press("Tab");
    if ((await focused(page)) === wanted) return;
  }
  assert.fail(`${what} is not reached with Tab`);
}

/** The note's sentence, for a refusal `ago` ("just now", "12 s ago", "2 min ago"). */
const SAID =
  /^An agent was turned away (just now|\d+ s ago|\d+ min ago): it did not send this server's API token \(claude-code\/2\.1\.330 \(cli\)\)\. Update its configuration: run local-mcp-server connect --update, or use Connect agents\.$/;

describe("a server that requires an API token", () => {
  let server;
  before(async () => {
    server = await startServer({ env: { API_TOKEN: TOKEN } });
  });
  after(async () => {
    await server?.stop();
  });

  test("the gate says the server requires a token and how to print it; an agent turned away is said at the top with what to do", async () => {
    // What a page without a session can ask: whether a token is required (yes), not the token's state (refused).
    const open = await fetch(`${server.url}/api/session`);
    assert.deepEqual(await open.json(), { token_required: true, authenticated: false });
    assert.equal((await fetch(`${server.url}/api/token`)).status, 401, "GET /api/token needs the token: the gate cannot depend on it");

    let first = true;
    for (const [width, scheme] of VIEWS) {
      const { page, errors, context } = await openPage(browser, server, { width, height: 900, colorScheme: scheme });
      const where = `${width} px ${scheme}`;
      const gate = page.locator("#gate");
      await until(() => gate.isVisible(), { what: `${where}: the token gate` });
      assert.equal(await page.locator("#gate-title").textContent(), "This server requires an API token");
      assert.equal(await page.locator("#gate-where").textContent(), "To see it, run local-mcp-server token in a terminal on this computer: it prints the token.");
      assert.equal(await page.locator("#gate-where code").textContent(), "local-mcp-server token");
      assert.doesNotMatch(await gate.textContent(), /started with/, "not said to come from the start: Settings may have set it");
      // Where to find it is read with the box, and the box has focus.
      assert.equal(await page.locator("#gate-token").getAttribute("aria-describedby"), "gate-where gate-error");
      await until(async () => (await focused(page)) === "gate-token", { what: `${where}: the token box focused` });
      await page.evaluate(() => document.fonts.ready);
      await axeClean(page, `${where}: the gate`);
      await shot(page, `gate-${width}-${scheme}`);

      await signIn(page);
      if (first) {
        // The page's own requests before it signed in were refused (not /mcp): that is no agent
        // turned away, and the engine records none of them.
        const own = (await server.api("GET", "/api/status")).body.server.refused_without_token;
        assert.equal(own ?? null, null, `the page's own refusal recorded: ${JSON.stringify(own)}`);
        await until(async () => (await page.locator('#queue-tabs [data-queue="default"]').count()) === 1, { what: "the status drawn" });
        assert.ok(await page.locator("#refused-note").isHidden(), "the page's own refusal is not shown as an agent's");
        first = false;
      }
      // An agent without the token: said live (the status event), where a person looks.
      const refused = await callWithoutToken(server);
      const note = page.locator("#refused-note");
      await until(() => note.isVisible(), { what: `${where}: the note on the agent turned away` });
      await until(async () => SAID.test(await page.locator("#refused-text").textContent()), { what: `${where}: what happened and what to do` });
      assert.equal(await note.locator("time").getAttribute("datetime"), refused.at);
      assert.equal(await note.locator(".mono").first().textContent(), CLAUDE, "the user agent as text");
      await page.evaluate(() => document.fonts.ready);
      await axeClean(page, `${where}: the note`);
      await shot(page, `refused-${width}-${scheme}`);
      assert.deepEqual(errors.filter((e) => !/status of 401/.test(e)), [], `${where}: no error but the gate's 401s`);
      await context.close();
    }
  });

  test("the note's time stays fresh, Connect agents goes there, and Dismiss keeps it away until another agent is turned away", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, reducedMotion: "reduce" });
    // The page's clock, to move it on as the 20-second refresh sees it.
    await context.clock.install();
    const page = await context.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(server.url + "/");
    await signIn(page);
    await callWithoutToken(server);
    const text = page.locator("#refused-text");
    await until(async () => /turned away (just now|\d+ s ago):/.test(await text.textContent()), { what: "the note, turned away just now" });
    await page.clock.fastForward("02:00");
    await until(async () => /^An agent was turned away 2 min ago: /.test(await text.textContent()), { what: "the note's time refreshed to 2 min ago" });
    assert.match(await text.textContent(), SAID);

    // By keyboard: Connect agents, named in the sentence, goes there.
    await page.locator("#theme-toggle").focus();
    await tabTo(page, "Connect agents", "Connect agents in the note");
    await page.keyboard.press("Enter");
    await until(() => page.locator("#clients-details").evaluate((d) => d.open), { what: "Connect agents opened" });
    assert.equal(await page.evaluate(() => document.activeElement.closest("summary")?.parentElement.id), "clients-details");

    // Dismissed, it stays away (remembered), until another agent is turned away.
    await page.locator("#theme-toggle").focus();
    await tabTo(page, "refused-dismiss", "Dismiss");
    await page.keyboard.press("Enter");
    await until(() => page.locator("#refused-note").isHidden(), { what: "the note dismissed" });
    assert.equal(await focused(page), "composer-text", "focus goes on to the composer");
    await page.reload();
    await until(async () => (await page.locator("#conn").getAttribute("data-conn")) === "live", { what: "the page live again" });
    await until(async () => (await page.locator('#queue-tabs [data-queue="default"]').count()) === 1, { what: "the status drawn" });
    assert.ok(await page.locator("#refused-note").isHidden(), "a dismissed refusal stays dismissed");
    await callWithoutToken(server, "");
    await until(() => page.locator("#refused-note").isVisible(), { what: "a new refusal shown again" });
    // No user agent sent: nothing in brackets (the page's clock is 2 min ahead of the server's now).
    assert.match(await text.textContent(), /^An agent was turned away (just now|\d+ s ago|\d+ min ago): it did not send this server's API token\. Update its configuration: /);
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("a first load's late 401, after the person signed in, does not open the gate again", async () => {
    const { page, errors, context } = await openPage(browser, server, { width: 400, height: 900 });
    // Hold the answer to the first load's list of instructions until the
    // person has signed in, as a busy machine can: it was answered 401, for
    // want of a session, and arrives after one was made.
    let release;
    const held = new Promise((r) => (release = r));
    let late = null;
    await page.route("**/api/instructions?*", async (route) => {
      if (late) return route.continue();
      late = route.request().url();
      const response = await route.fetch(); // answered now, without a session
      await held;
      await route.fulfill({ response });
    });
    await page.reload();
    await until(() => page.locator("#gate").isVisible(), { what: "the token gate" });
    await until(() => late, { what: "the first load's request held" });
    await page.locator("#gate-token").fill(TOKEN);
    await page.keyboard.press("Enter");
    await until(() => page.locator("#gate").isHidden(), { what: "the gate closed" });
    const answered = page.waitForResponse((r) => r.url() === late && r.status() === 401);
    release();
    await answered;
    await until(async () => (await page.locator("#conn").getAttribute("data-conn")) === "live", { what: "the page live with its session" });
    // The late answer is handled a few tasks after it arrives: watch a while.
    for (const end = Date.now() + 1000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
      assert.equal(await page.locator("#gate").isHidden(), true, "the gate stays closed");
    }
    assert.deepEqual(errors.filter((e) => !/status of 401/.test(e)), []);
    await context.close();
  });
});
