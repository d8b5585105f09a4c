// The ledger is readable (issue 25 §11): the person's own words are not the
// faintest line of an entry, "Send again" is one quiet row action, a
// multi-line instruction shows its first lines, and a search marks what it
// matched and says when the match was in the report.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { artifacts, launchBrowser, openPage, startServer, until } from "./harness.mjs";

let browser;
let server;
before(async () => {
  browser = await launchBrowser();
  server = await startServer({ waitSeconds: 0 });
  await server.add("Write the migration for the sessions table");
  await server.consume("scribe");
  await server.consume("scribe", null, { report: "Added the index on the **users** table; the migration runs in 40 ms." });
  await server.add("Step one: read the logs\nStep two: find the slow query\nStep three: say what you found");
  await server.consume("scribe");
  await server.add("Line 1\nLine 2\nLine 3\nLine 4\nLine 5\nLine 6");
  await server.consume("scribe");
});
after(async () => {
  await server?.stop();
  await browser?.close();
});

/**
 * WCAG contrast of an element's text against the page's background. Found
 * and measured in one step: the ledger re-renders (a status event) and a
 * detached element has no style.
 */
const contrastOf = (page, selector) =>
  page.evaluate((selector) => {
    const e = document.querySelector(selector);
    const rgb = (c) => c.match(/[\d.]+/g).slice(0, 3).map(Number);
    const lum = ([r, g, b]) => {
      const f = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
    };
    const [a, b] = [lum(rgb(getComputedStyle(e).color)), lum(rgb(getComputedStyle(document.body).backgroundColor))];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  }, selector);

/** How many lines of text the ledger entry starting with `start` shows. */
const linesOf = (page, start) =>
  page.evaluate((start) => {
    const e = [...document.querySelectorAll("#ledger .entry__text")].find((p) => p.textContent.startsWith(start));
    return Math.round(e.getBoundingClientRect().height / parseFloat(getComputedStyle(e).lineHeight));
  }, start);

/** The page, live and caught up (the catch-up load re-renders the ledger once more). */
async function openSettled(options) {
  const opened = await openPage(browser, server, options);
  await until(() => opened.page.evaluate(() => document.getElementById("conn")?.dataset.conn === "live"), { what: "the page live" });
  await until(async () => (await opened.page.locator("#ledger .entry").count()) === 3, { what: "three delivered" });
  await opened.page.waitForTimeout(300);
  return opened;
}

const entry = (page, start) => page.locator("#ledger .entry").filter({ has: page.locator(".entry__text", { hasText: start }) });

describe("the ledger", () => {
  for (const scheme of ["light", "dark"]) {
    test(`reads well in the ${scheme} theme: the words first, one quiet Send again per entry`, async () => {
      const { page, errors, context } = await openSettled({ colorScheme: scheme });
      const [words, meta] = [await contrastOf(page, "#ledger .entry .entry__text"), await contrastOf(page, "#ledger .entry .entry__meta")];
      assert.ok(words >= 4.5, `the instruction's words have a contrast of ${words.toFixed(2)}`);
      assert.ok(words > meta, `the words (${words.toFixed(2)}) are fainter than the line about them (${meta.toFixed(2)})`);
      for (const li of await page.locator("#ledger .entry").all()) {
        const again = li.locator('[data-action="requeue"]');
        assert.equal(await again.count(), 1, "one Send again per entry");
        assert.equal(await again.evaluate((b) => getComputedStyle(b).borderTopWidth), "0px", "Send again is a row action, not a bordered button");
      }
      await page.screenshot({ path: join(artifacts, "screenshots", `ledger-1280-${scheme}.png`), fullPage: true });
      assert.deepEqual(errors, []);
      await context.close();
    });
  }

  test("a multi-line instruction shows its first lines; a longer one opens with Show all", async () => {
    const { page, errors, context } = await openSettled();
    assert.equal(await linesOf(page, "Step one"), 3, "all three lines of a three-line instruction show");
    assert.equal(await entry(page, "Step one").locator('[data-action="expand"]').count(), 0);
    assert.equal(await linesOf(page, "Line 1"), 3, "a six-line instruction shows its first three lines");
    await entry(page, "Line 1").locator('[data-action="expand"]').click();
    assert.equal(await linesOf(page, "Line 1"), 6, "Show all shows the rest");
    assert.equal(await entry(page, "Line 1").locator('[data-action="expand"]').textContent(), "Show less");
    // And stays open when the ledger is drawn again (status events, the 20 s tick).
    await server.consume("scribe");
    await page.waitForTimeout(500);
    assert.equal(await linesOf(page, "Line 1"), 6, "a redraw closed what Show all opened");
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("a search marks the starts of words it matched, and says when the match was in the report", async () => {
    const { page, errors, context } = await openSettled();
    // Word prefixes, case aside, as the server matches them.
    await page.locator("#ledger-search").fill("MIGR sess");
    await until(async () => (await page.locator("#ledger-aside").textContent()) === "1 found", { what: "one found" });
    const hit = page.locator("#ledger .entry").first();
    assert.deepEqual(await hit.locator(".entry__text mark").allTextContents(), ["migr", "sess"]);
    assert.equal(await hit.locator(".entry__text").textContent(), "Write the migration for the sessions table", "the text itself is unchanged");
    assert.equal(await hit.locator(".entry__found").count(), 0, "found in the instruction");
    // Found by its report's words only: said, and marked there.
    await page.locator("#ledger-search").fill("users index");
    await until(async () => (await page.locator("#ledger-aside").textContent()) === "1 found", { what: "one found by its report" });
    const byReport = page.locator("#ledger .entry").first();
    assert.equal(await byReport.locator(".entry__found").textContent(), "Found in its report:");
    assert.deepEqual(await byReport.locator(".report__body mark").allTextContents(), ["index", "users"]);
    assert.equal(await byReport.locator(".report__body strong").textContent(), "users", "the report's own markup is kept");
    await page.screenshot({ path: join(artifacts, "screenshots", "ledger-search-1280-light.png"), fullPage: true });
    assert.deepEqual(errors, []);
    await context.close();
  });
});
