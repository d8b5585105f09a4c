// Instructions held since an import (issue 38, finding 6, the page's part):
// an export imported through the real API lands held; the page tags each
// held ticket in words and never calls it Next, says above the rail how many
// wait and why, with Release, and which other queues hold some; an agent
// gets none of them until the person releases them, and then the tags go
// with the event stream, without a reload.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { apiRequestsSince, artifacts, launchBrowser, openPage, startServer, until } from "./harness.mjs";

const AXE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

let browser;
before(async () => {
  browser = await launchBrowser();
});
after(async () => {
  await browser?.close();
});

const shot = (page, name) => page.screenshot({ path: join(artifacts, "screenshots", `${name}.png`), fullPage: true });

/** A pending instruction as an export lists it. */
const pending = (id, content, queue, position) => ({
  id,
  content,
  status: "pending",
  created_at: `2026-01-01T00:00:0${position}Z`,
  updated_at: `2026-01-01T00:00:0${position}Z`,
  consumed_at: null,
  consumed_by_agent_id: null,
  position,
  queue,
  target: null,
});

/** A JSON export from another machine: two pending in default, one in webapp. */
const EXPORT = {
  format: "local-mcp-export",
  version: 1,
  exported_at: "2026-01-01T00:00:00Z",
  instructions: [
    pending("shared-1", "Rotate the signing key", "default", 1),
    pending("shared-2", "Then update the changelog", "default", 2),
    pending("shared-3", "Bump the webapp version", "webapp", 3),
  ],
  reports: [],
};

/** The rail as the person reads it: each ticket's stub, tag (if any) and words. */
const rail = (page) =>
  page.locator("#rail li.ticket").evaluateAll((lis) =>
    lis.map((li) => [li.querySelector(".ticket__stub").textContent, li.querySelector(".chip--held")?.textContent ?? "", li.querySelector(".ticket__text").textContent]),
  );

async function axeClean(page, what) {
  await page.evaluate(AXE);
  const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
  const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`), [], what);
}

describe("instructions held since an import", () => {
  let server;
  before(async () => {
    server = await startServer({ waitSeconds: 60 });
  });
  after(async () => {
    await server?.stop();
  });

  test("are tagged on the rail, never Next, said above it with Release; no agent gets them until released, then the tags go with the events", async () => {
    const { page, errors, requests, settled, context } = await openPage(browser, server);
    await settled();

    // The import, through the real API: the page hears of it on its stream and says the pending ones are held.
    const imported = await server.api("POST", "/api/import", EXPORT);
    assert.equal(imported.status, 200, JSON.stringify(imported.body));
    assert.equal(imported.body.pending, 3);
    await until(async () => /^Imported 3 pending instructions, held: no agent gets them until you release them \(the Release button above the rail\)\.$/.test(await page.locator("#toast-text").textContent()), {
      what: "the import's summary saying its pending ones are held",
    });
    // Queued here after the import: it is the next one, though both held ones are ahead of it.
    await server.add("Queued here, after the import");
    const tag = "Held — from an import";
    await until(async () => (await rail(page)).length === 3, { what: "three tickets" });
    assert.deepEqual(await rail(page), [
      ["HELD", tag, "Rotate the signing key"],
      ["HELD", tag, "Then update the changelog"],
      ["NEXT", "", "Queued here, after the import"],
    ]);
    assert.equal(await page.locator("#rail .ticket--head .ticket__text").textContent(), "Queued here, after the import");
    assert.match(await page.locator('#rail li[data-id="shared-1"]').getAttribute("aria-label"), /^Held — from an import: Rotate the signing key/);
    // Above the rail: how many wait, why, and Release; webapp's held one, as a way there.
    await until(() => page.locator("#held-here").isVisible(), { what: "the held line" });
    assert.equal(await page.locator("#held-text").textContent(), "2 instructions from an import wait for you: no agent gets them until you release them.");
    assert.equal(await page.locator("#held-release").textContent(), "Release them");
    await until(() => page.locator("#held-elsewhere").isVisible(), { what: "the other queues' hint" });
    assert.equal(await page.locator("#held-elsewhere").textContent(), "Also held in another queue, until you release it there: webapp (1).");

    // An agent gets only what was queued here; the held ones are not even counted as there to take.
    const first = await server.consume("worker");
    assert.equal(first.instruction.content, "Queued here, after the import");
    assert.equal(first.remaining_pending, 0, "held ones are not there to take");
    await until(async () => (await rail(page)).length === 2, { what: "the delivered ticket off the rail" });
    assert.deepEqual((await rail(page)).map(([stub]) => stub), ["HELD", "HELD"], "nothing held is Next");
    assert.equal(await page.locator("#rail .ticket--head").count(), 0);
    // Its next call waits: nothing held is offered to it.
    const waiting = server.consume("worker").catch((e) => e);
    await until(async () => (await server.agent("worker"))?.waiting, { what: "the worker waiting" });
    await shot(page, "held-import-1280-light");

    // By keyboard: from Queue, the next stop is Release.
    await settled();
    const mark = requests.length;
    await page.locator("#composer-submit").focus();
    await page.keyboard.press("Tab");
    assert.equal(await page.evaluate(() => document.activeElement?.id), "held-release", "Release is the next Tab stop after Queue");
    await page.keyboard.press("Enter");
    // The waiting agent gets the first released one at once, the rest in order.
    const got = await waiting;
    assert.equal(got.instruction?.content, "Rotate the signing key", JSON.stringify(got));
    assert.equal(got.remaining_pending, 1);
    await until(async () => JSON.stringify(await rail(page)) === JSON.stringify([["NEXT", "", "Then update the changelog"]]), {
      what: "the tags gone and the released one Next",
    });
    await until(() => page.locator("#held-here").isHidden(), { what: "the held line gone" });
    assert.match(await page.locator("#toast-text").textContent(), /^2 instructions released: agents get them now/);
    assert.deepEqual(apiRequestsSince(requests, mark).map((u) => new URL(u).pathname), ["/api/instructions/release"], "one POST, no reload");
    assert.equal(await page.locator("#held-elsewhere").textContent(), "Held in another queue, until you release it there: webapp (1).", "webapp still holds one");

    // The hint leads to webapp, focus on its Release.
    await page.locator('#held-elsewhere [data-held-queue="webapp"]').click();
    await until(async () => (await page.evaluate(() => document.activeElement?.id)) === "held-release", { what: "focus on webapp's Release" });
    assert.equal(await page.locator("#held-text").textContent(), "1 instruction from an import waits for you: no agent gets it until you release it.");
    assert.equal(await page.locator("#held-release").textContent(), "Release it");
    assert.ok(await page.locator("#held-elsewhere").isHidden(), "no other queue holds any");

    // Released elsewhere (the CLI, another page): the tag goes over the event stream alone.
    await settled();
    const before = requests.length;
    const released = await server.api("POST", "/api/instructions/release", { queue: "webapp" });
    assert.equal(released.status, 200);
    assert.deepEqual(released.body.items.map((i) => i.content), ["Bump the webapp version"]);
    await until(async () => JSON.stringify(await rail(page)) === JSON.stringify([["NEXT", "", "Bump the webapp version"]]), { what: "webapp's tag gone" });
    await until(() => page.locator("#held-here").isHidden(), { what: "webapp's held line gone" });
    assert.deepEqual(apiRequestsSince(requests, before), [], "the event stream brought it, no request");
    assert.equal((await server.consume("w2", "webapp")).instruction.content, "Bump the webapp version");
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("what the page says while some are held: no serious or critical violation at 400 and 1280 px in either theme; screenshots", async () => {
    await server.api("POST", "/api/import", {
      ...EXPORT,
      instructions: [pending("again-1", "Review the migration plan", "default", 4), pending("again-2", "Tidy the release notes", "webapp", 5)],
    });
    await server.add("Queued here, not held");
    for (const [width, scheme] of [[400, "light"], [400, "dark"], [1280, "light"], [1280, "dark"]]) {
      const where = `${width} px ${scheme}`;
      const { page, errors, context } = await openPage(browser, server, { width, height: 900, colorScheme: scheme });
      await until(() => page.locator("#held-here").isVisible(), { what: `${where}: the held line` });
      await until(() => page.locator("#held-elsewhere").isVisible(), { what: `${where}: the other queues' hint` });
      await until(async () => (await page.locator("#rail .chip--held").count()) === 1, { what: `${where}: the held tag` });
      // Whole at 400 px: the line and its button inside the viewport, nothing wider than it.
      const line = await page.locator("#held-here").evaluate((e) => e.getBoundingClientRect().toJSON());
      const button = await page.locator("#held-release").evaluate((e) => e.getBoundingClientRect().toJSON());
      assert.ok(line.right <= width && button.right <= width, `${where}: the held line fits (${line.right}, ${button.right})`);
      assert.equal(await page.evaluate(() => document.documentElement.scrollWidth), width, `${where}: nothing scrolls sideways`);
      await axeClean(page, `${where}: the held line, the hint and the tagged ticket`);
      await page.evaluate(() => document.fonts.ready);
      await shot(page, `held-${width}-${scheme}`);
      assert.deepEqual(errors, []);
      await context.close();
    }
    await server.api("POST", "/api/instructions/release", {});
    assert.equal((await server.api("GET", "/api/status")).body.queue.held_count, 0);
  });
});
