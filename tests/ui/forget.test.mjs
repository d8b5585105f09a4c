// Offline agents pile up (issue 39: 6 of 7 listed agents offline after an
// hour): each offline agent has a quiet Forget named with it, two or more
// offline one "Forget the N gone"; the list follows the status events, focus
// stays in the panel, an agent listening now is not forgotten (the engine's
// 409 is said), and an agent that calls again comes back.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { artifacts, launchBrowser, openPage, startServer, until } from "./harness.mjs";

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** Both themes at the narrow and the wide width; the wide light one last (the test acts in it). */
const VIEWS = [[400, "light"], [400, "dark"], [1280, "dark"], [1280, "light"]];

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

/** What has focus: its id, its action, the agent row it is in. */
const focused = (page) =>
  page.evaluate(() => {
    const a = document.activeElement;
    return { id: a?.id ?? "", action: a?.dataset?.action ?? "", agent: a?.closest?.("li[data-agent]")?.dataset.agent ?? null, label: a?.getAttribute?.("aria-label") ?? "" };
  });

/** Press Tab until `wanted(focus)` holds, at most 40 times: the control is in the Tab order. */
async function tabTo(page, wanted, what) {
  for (let i = 0; i < 40; i++) {
    await page.keyboard.press("Tab");
    if (wanted(await focused(page))) return;
  }
  assert.fail(`${what} is not reached with Tab`);
}

/** The agent ids the panel lists, in order. */
const listed = (page) => page.locator("#agents li[data-agent]").evaluateAll((lis) => lis.map((li) => li.dataset.agent));
const toastText = (page) => page.locator("#toast-text").textContent();

describe("agents that are gone", () => {
  let server;
  before(async () => {
    // Gone after 1 s of silence (the setting's minimum); calls answer at once until a test says otherwise.
    server = await startServer({ waitSeconds: 0, env: { LOCAL_MCP_AGENT_STALE_AFTER_SECONDS: "1" } });
  });
  after(async () => {
    await server?.stop();
  });

  test("each offline agent has a Forget named with it, two or more one Forget the N gone; the list follows the events; one that calls again comes back", async () => {
    const fields = (await server.api("GET", "/api/config/fields")).body.fields;
    assert.equal(fields.find((f) => f.name === "agent_stale_after_seconds").min, 1, "the stale setting's minimum");
    for (const id of ["old-a", "old-b", "old-c"]) await server.consume(id);
    await until(async () => (await Promise.all(["old-a", "old-b", "old-c"].map((id) => server.agent(id)))).every((a) => a?.state === "offline"), { what: "the three agents offline" });
    // One agent listening now: it has Stop, not Forget. Its calls end when the server stops, should an assertion fail first.
    assert.equal((await server.api("PATCH", "/api/config", { default_wait_seconds: 600 })).status, 200);
    const calls = [server.consume("here").catch(() => null)];
    await until(async () => (await server.agent("here"))?.waiting, { what: "here listening" });

    let page;
    let errors;
    let context;
    for (const [width, scheme] of VIEWS) {
      ({ page, errors, context } = await openPage(browser, server, { width, height: 900, colorScheme: scheme }));
      const where = `${width} px ${scheme}`;
      await until(async () => (await listed(page)).length === 4, { what: `${where}: four agents listed` });
      assert.deepEqual(await listed(page), ["here", "old-a", "old-b", "old-c"], `${where}: the listening one first`);
      for (const id of ["old-a", "old-b", "old-c"]) {
        const row = page.locator(`#agents li[data-agent="${id}"]`);
        assert.equal(await row.locator(".agent__state").textContent(), "Offline");
        // A real button, named with the agent for screen readers, its word on screen.
        const forget = row.getByRole("button", { name: `Forget ${id} in default`, exact: true });
        assert.equal(await forget.count(), 1, `${where}: ${id}'s Forget`);
        assert.equal(await forget.evaluate((b) => b.tagName), "BUTTON");
        assert.equal(await forget.textContent(), "Forget");
        assert.equal(await row.locator('[data-action="stop"]').count(), 0, `${where}: nothing to stop on ${id}`);
      }
      const here = page.locator('#agents li[data-agent="here"]');
      assert.equal(await here.locator('[data-action="forget"]').count(), 0, `${where}: no Forget for an agent listening now`);
      assert.equal(await here.locator('[data-action="stop"]').count(), 1);
      const all = page.locator("#agents-forget-gone");
      assert.ok(await all.isVisible(), `${where}: one control for all`);
      assert.equal(await all.textContent(), "Forget the 3 gone");
      // Forget sits at the end of the agent's line, like Stop, not under it.
      // Both read in one go: the list is drawn again as time passes (its
      // "not heard from" words), and a box read between two draws is of a
      // line no longer there.
      const { id, btn } = await page.evaluate(() => {
        const line = document.querySelector('#agents li[data-agent="old-a"]');
        const box = (el) => {
          const r = el.getBoundingClientRect();
          return { x: r.x, y: r.y, width: r.width, height: r.height };
        };
        return { id: box(line.querySelector(".agent__id")), btn: box(line.querySelector('[data-action="forget"]')) };
      });
      assert.ok(btn.y < id.y + id.height && btn.x > id.x + id.width, `${where}: Forget beside the id (${JSON.stringify({ id, btn })})`);
      await axeClean(page, `${where}: the agent panel with offline agents`);
      await page.evaluate(() => document.fonts.ready);
      await page.locator(".agents").scrollIntoViewIfNeeded();
      await shot(page, `forget-${width}-${scheme}`);
      if (width !== 1280 || scheme !== "light") {
        assert.deepEqual(errors, []);
        await context.close();
      }
    }

    // By keyboard: Tab reaches "Forget the 3 gone", then each agent's own controls.
    await page.locator("#agents-title").focus();
    await tabTo(page, (f) => f.id === "agents-forget-gone", "Forget the 3 gone");
    await tabTo(page, (f) => f.action === "forget" && f.agent === "old-a", "old-a's Forget");
    // Its focus ring shows.
    assert.notEqual(await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle), "none");
    await shot(page, "forget-focus-1280-light");
    await page.keyboard.press("Enter");
    await until(async () => !(await listed(page)).includes("old-a"), { what: "old-a gone from the list (the status event)" });
    assert.equal(await server.agent("old-a"), undefined, "forgotten by the server");
    await until(async () => (await toastText(page)) === "Forgot old-a. It comes back if it calls again.", { what: "the toast" });
    // Focus stays in the panel: on the Forget of the agent that took old-a's place.
    await until(async () => { const f = await focused(page); return f.action === "forget" && f.agent === "old-b"; }, { what: "focus on old-b's Forget" });
    await until(async () => (await page.locator("#agents-forget-gone").textContent()) === "Forget the 2 gone", { what: "the count down to 2" });

    // An agent that calls in the meantime (once Forget is pressed, before the server hears of it)
    // is listening, and is not forgotten: the engine's 409 is said.
    await page.route("**/api/agents/forget", async (route) => {
      calls.push(server.consume("old-b").catch(() => null));
      await until(async () => (await server.agent("old-b"))?.waiting, { what: "old-b listening again" });
      await route.continue();
    });
    await page.keyboard.press("Enter");
    await until(async () => /^Not forgotten: old-b is listening now/.test(await toastText(page)), { what: "the 409 said" });
    await page.unroute("**/api/agents/forget");
    const oldB = page.locator('#agents li[data-agent="old-b"]');
    await until(async () => (await oldB.locator(".agent__state").textContent()) === "Listening", { what: "old-b listed as listening" });
    assert.equal(await oldB.locator('[data-action="forget"]').count(), 0);
    // One offline agent is no "all".
    await until(() => page.locator("#agents-forget-gone").isHidden(), { what: "Forget the N gone hidden with one offline" });
    assert.equal(await page.locator('#agents li[data-agent="old-c"] [data-action="forget"]').count(), 1);

    // Told to stop, old-b is offline again: two offline, and one control forgets both.
    await server.api("POST", "/api/agents/stop", { queue: "default", agent_id: "old-b" });
    await until(async () => (await oldB.locator(".agent__state").textContent()) === "Offline", { what: "old-b offline once stopped" });
    const all = page.locator("#agents-forget-gone");
    await until(async () => (await all.isVisible()) && (await all.textContent()) === "Forget the 2 gone", { what: "Forget the 2 gone" });
    await page.locator("#agents-title").focus();
    await tabTo(page, (f) => f.id === "agents-forget-gone", "Forget the 2 gone");
    await page.keyboard.press("Enter");
    await until(async () => (await listed(page)).join() === "here", { what: "only here left" });
    await until(async () => /^Forgot old-(b|c) and old-(b|c)\.$/.test(await toastText(page)), { what: "the toast naming both" });
    assert.ok(await all.isHidden());
    assert.equal((await focused(page)).id, "agents-title", "focus in the panel, not lost to the page's start");
    assert.deepEqual((await server.api("GET", "/api/status")).body.agents.map((a) => a.agent_id), ["here"]);

    // An agent that calls again simply comes back.
    calls.push(server.consume("old-a").catch(() => null));
    await until(async () => (await listed(page)).includes("old-a"), { what: "old-a back once it calls" });
    await until(async () => (await page.locator('#agents li[data-agent="old-a"] .agent__state').textContent()) === "Listening", { what: "old-a listening" });
    assert.deepEqual(errors.filter((e) => !/status of 409/.test(e)), [], "no error but the 409 asked for");
    await context.close();
    for (const id of ["here", "old-a"]) await server.api("POST", "/api/agents/stop", { queue: "default", agent_id: id });
    await Promise.all(calls);
  });
});
