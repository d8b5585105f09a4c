// A usable small window (issue 25 §12), at 400 px in both themes: the
// header is one row, the queue bar's controls all on the screen; Agents,
// Connect agents and Settings come before the history, which loads more as
// one scrolls (issue 39); the search box looks like the other boxes; a
// file's tile never breaks its name mid-word; an error under the composer
// leaves Queue in its row.

import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { artifacts, launchBrowser, openPage, startServer, until } from "./harness.mjs";

let browser;
let server;
before(async () => {
  browser = await launchBrowser();
  server = await startServer({ waitSeconds: 0 });
  for (const name of ["proj", "docs-site"]) await server.api("POST", "/api/queues", { name });
  for (let i = 0; i < 30; i++) {
    await server.add(`delivered ${i}`);
    await server.consume("narrow-agent");
  }
  await server.addWithFiles("Read these", [
    { name: "quarterly-report-final.md", bytes: "# q\n", type: "text/markdown" },
    { name: "notes.png.txt", bytes: "n\n", type: "text/plain" },
    { name: "main.rs", bytes: "fn main() {}\n", type: "text/x-rust" },
  ]);
  await server.add("Fix the flaky reconnect test");
});
after(async () => {
  await server?.stop();
  await browser?.close();
});

const rect = (locator) => locator.evaluate((e) => e.getBoundingClientRect().toJSON());
const oneRow = async (locator) =>
  locator.evaluate((row) => {
    const tops = [...row.children].filter((c) => c.offsetParent && c.getBoundingClientRect().width > 0).map((c) => Math.round(c.getBoundingClientRect().top + c.getBoundingClientRect().height / 2));
    return Math.max(...tops) - Math.min(...tops) <= 4;
  });

describe("at 400 px", () => {
  for (const scheme of ["light", "dark"]) {
    test(`${scheme}: one-row header, the queue bar whole, agents and settings before the history, boxes alike, Queue in its row`, async () => {
      const { page, errors, context } = await openPage(browser, server, { width: 400, height: 800, colorScheme: scheme });
      await until(async () => (await page.locator("#rail .ticket").count()) === 2, { what: "two tickets" });
      await until(async () => (await page.locator("#ledger .entry").count()) === 20, { what: "the ledger's first entries" });
      await page.evaluate(() => document.fonts.ready);
      assert.ok(await oneRow(page.locator(".strip")), "the header is one row");
      assert.ok((await rect(page.locator(".strip"))).height < 56, "the header is one row high");
      // The queue bar wraps rather than scroll (issue 39 §7): every one of its controls on the screen.
      assert.ok(await page.locator(".queues").evaluate((b) => b.scrollWidth <= b.clientWidth), "the queue bar scrolls sideways");
      const off = await page.locator(".queues button").evaluateAll((bs) => bs.filter((b) => b.offsetParent && (b.getBoundingClientRect().left < 0 || b.getBoundingClientRect().right > innerWidth)).map((b) => b.textContent));
      assert.deepEqual(off, [], "queue bar controls off the screen");
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `horizontal overflow of ${overflow}px`);

      // Who takes the work and the settings come before the history (issue 39 §7), as in the document.
      const search = await rect(page.locator("#ledger-search"));
      for (const sel of ["#agents-title", "#clients-details", "#settings-details"]) {
        assert.ok((await rect(page.locator(sel))).bottom < search.top, `${sel} comes before the ledger`);
      }
      // The search box, the dates and the pickers look like the composer's box.
      const look = (sel) => page.locator(sel).evaluate((e) => { const s = getComputedStyle(e); return `${s.backgroundColor} ${s.borderTopColor}`; });
      const composer = await look("#composer-text");
      for (const sel of ["#ledger-search", "#ledger-since", "#ledger-agent", "#composer-target"]) assert.equal(await look(sel), composer, `${sel} in the ${scheme} theme`);

      // Scrolled to the end, more of the history comes: nothing after it is pushed away.
      await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
      await until(async () => (await page.locator("#ledger .entry").count()) > 20, { what: "more of the ledger as one scrolls" });
      await page.screenshot({ path: join(artifacts, "screenshots", `narrow-400-${scheme}.png`), fullPage: true });

      // An error under the composer leaves Queue beside Attach.
      await page.locator("#composer-text").fill("   ");
      await page.locator("#composer-submit").click();
      await until(() => page.locator("#composer-error").isVisible(), { what: "the inline error" });
      const [queue, attach] = [await rect(page.locator("#composer-submit")), await rect(page.locator("#composer-attach"))];
      assert.ok(Math.abs(queue.top + queue.height / 2 - (attach.top + attach.height / 2)) < 4, `Queue (at ${queue.top}) left the row of Attach (at ${attach.top})`);
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: join(artifacts, "screenshots", `narrow-400-${scheme}-top.png`) });
      assert.deepEqual(errors, []);
      await context.close();
    });
  }

  test("a file's tile breaks its name only between words", async () => {
    const { page, errors, context } = await openPage(browser, server, { width: 400, height: 800 });
    const names = ["quarterly-report-final.md", "notes.png.txt", "main.rs"];
    await until(async () => (await page.locator("#rail .thumb__name").count()) === 3, { what: "the ticket's three files" });
    // Staged in the composer too.
    await page.locator("#composer-pick").setInputFiles([{ name: "a-rather-long-screenshot-name.txt", mimeType: "text/plain", buffer: Buffer.from("x") }]);
    await until(async () => (await page.locator("#composer-files .thumb__name").count()) === 1, { what: "the staged file" });
    const broken = await page.locator(".thumb__name").evaluateAll((spans) => {
      const bad = [];
      for (const span of spans) {
        // Every word (a run between dots, dashes and underscores) on one line.
        for (const node of [...span.childNodes].filter((n) => n.nodeType === 3)) {
          for (const m of node.data.matchAll(/[^._\-\s]+/g)) {
            const range = document.createRange();
            range.setStart(node, m.index);
            range.setEnd(node, m.index + m[0].length);
            const tops = new Set([...range.getClientRects()].map((r) => Math.round(r.top)));
            if (tops.size > 1) bad.push(`${span.textContent}: "${m[0]}"`);
          }
        }
      }
      return bad;
    });
    assert.deepEqual(broken, [], "a name broken mid-word");
    assert.deepEqual(await page.locator("#rail .thumb__name").allTextContents(), names);
    await page.locator("#rail .thumbs").first().screenshot({ path: join(artifacts, "screenshots", "file-tiles-400-light.png") });
    assert.deepEqual(errors, []);
    await context.close();
  });
});
