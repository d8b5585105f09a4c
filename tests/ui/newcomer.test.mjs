// The page as a newcomer finds it, round two (issue 39): what to say to the
// agent; a held queue promises nothing; another queue's question is one
// click away and answerable from anywhere; answered questions lose their
// box; a queue name is checked where it is typed; a file that cannot be
// attached is refused when attached; every control of the queue bar in
// view; agents before the ledger in one column; focus kept on the rail; the
// fly-out inside the rail; a plain zero in prose.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import { artifacts, launchBrowser, openPage, startServer, until } from "./harness.mjs";

/** The words a person says to a connected agent (ui/js/text.js; the README and the CLI say the same). */
const SENTENCE =
  "Call the get_user_request tool of local-mcp and do what it returns. When you finish, call it again with a short report of what you did, and keep calling it; never end your turn on your own.";

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

const shot = (page, name) => page.screenshot({ path: join(artifacts, "screenshots", `${name}.png`), fullPage: true });
const rect = (page, sel) => page.locator(sel).first().evaluate((e) => e.getBoundingClientRect().toJSON());
const railTexts = (page) => page.locator("#rail .ticket__text").allTextContents();
/** The text of what `locator` finds, or "" while it is not there (no auto-wait). */
const textOf = async (locator) => ((await locator.count()) ? locator.first().textContent() : "");
/** Whether the queue tab `name` is there and pressed (no auto-wait). */
const tabPressed = async (page, name) => {
  const tab = page.locator(`#queue-tabs [data-queue="${name}"]`);
  return (await tab.count()) === 1 && (await tab.getAttribute("aria-pressed")) === "true";
};
/** What has focus, as the test can name it. */
const focused = (page) =>
  page.evaluate(() => {
    const a = document.activeElement;
    return { id: a?.id ?? "", tag: a?.tagName ?? "", action: a?.dataset?.action ?? "", ticket: a?.closest?.("#rail li[data-id]")?.dataset.id ?? null, text: a?.textContent ?? "" };
  });

describe("a newcomer's first minute", () => {
  test("the empty rail shows one path: connect, the sentence to say (copied whole), a first instruction", async () => {
    const server = await startServer({ waitSeconds: 60 });
    try {
      for (const [width, scheme] of VIEWS) {
        const { page, errors, context } = await openPage(browser, server, { width, height: 900, colorScheme: scheme });
        const where = `${width} px ${scheme}`;
        await until(() => page.locator("#rail-empty").isVisible(), { what: `${where}: the empty rail` });
        // One path, in order: connect (the snippet to copy), the sentence (to copy), queue.
        const steps = page.locator("#rail-empty-how > li");
        assert.equal(await steps.count(), 3, where);
        assert.match(await steps.nth(0).textContent(), /Connect your agent/);
        assert.ok(await steps.nth(0).locator("#client-snippet").isVisible(), `${where}: the config to copy is in step 1, not folded away`);
        assert.equal(await steps.nth(1).locator("blockquote").textContent(), SENTENCE, `${where}: the sentence, exactly`);
        assert.match(await steps.nth(2).textContent(), /Queue a first instruction/);
        const [one, two, three] = [await rect(page, "#rail-empty-how > li:nth-child(1)"), await rect(page, "#rail-empty-how > li:nth-child(2)"), await rect(page, "#rail-empty-how > li:nth-child(3)")];
        assert.ok(one.bottom <= two.top && two.bottom <= three.top, `${where}: the steps read top to bottom`);
        await until(async () => (await page.locator("#client-pick option").count()) > 1, { what: "the clients' snippets" });
        await page.evaluate(() => document.fonts.ready);
        await shot(page, `newcomer-empty-${width}-${scheme}`);
        if (width === 1280 && scheme === "light") {
          // Copy puts the sentence on the clipboard, whole.
          await steps.nth(1).getByRole("button", { name: "Copy" }).click();
          await until(async () => (await page.evaluate(() => navigator.clipboard.readText())) === SENTENCE, { what: "the sentence copied" });
          // The Connect agents panel says it too: what to say once an agent is connected.
          await page.locator("#clients-details > summary").click();
          await until(() => page.locator("#start-sentence-2").isVisible(), { what: "the sentence in Connect agents" });
          assert.equal(await page.locator("#start-sentence-2").textContent(), SENTENCE);
        }
        assert.deepEqual(errors, []);
        await context.close();
      }
    } finally {
      await server.stop();
    }
  });

  test("a held queue promises nothing: the listening agent's line says nothing goes to it while held", async () => {
    const server = await startServer({ waitSeconds: 60 });
    try {
      const call = server.consume("newbie").catch(() => null);
      await until(async () => (await server.agent("newbie"))?.waiting, { what: "newbie listening" });
      for (const [width, scheme] of VIEWS) {
        const { page, errors, context } = await openPage(browser, server, { width, height: 800, colorScheme: scheme });
        const where = `${width} px ${scheme}`;
        const ready = page.locator("#rail-empty-ready");
        await until(async () => (await ready.textContent()) === "newbie is listening: what you queue goes to it at once.", { what: `${where}: the listening line` });
        // Hold this queue: the same agent, and no promise of delivery.
        await page.locator("#queue-hold").click();
        await until(() => page.locator("#rail-held").isVisible(), { what: `${where}: the held note` });
        await until(async () => (await ready.textContent()) === "newbie is listening; nothing goes to it while the queue is held.", { what: `${where}: the held line` });
        await page.evaluate(() => document.fonts.ready);
        await shot(page, `newcomer-held-${width}-${scheme}`);
        await page.locator("#queue-hold").click();
        await until(async () => /at once/.test(await ready.textContent()), { what: `${where}: released` });
        // Every queue held: the same.
        await page.locator("#queue-hold-all").click();
        await until(async () => (await ready.textContent()) === "newbie is listening; nothing goes to it while the queue is held.", { what: `${where}: the held line after Hold all` });
        await page.locator("#queue-release-all").click();
        await until(async () => /at once/.test(await ready.textContent()), { what: `${where}: all released` });
        assert.deepEqual(errors, []);
        await context.close();
      }
      await server.api("POST", "/api/agents/stop", { queue: "default", agent_id: "newbie" });
      await call;
    } finally {
      await server.stop();
    }
  });
});

describe("a question from another queue", () => {
  test("the pill leads to it; the question, its answers and a reply box show wherever the person is; whole at 400 px; the tab's title says needs you", async () => {
    const server = await startServer({ waitSeconds: 60 });
    try {
      await server.api("POST", "/api/queues", { name: "webapp" });
      await server.add("Tidy the changelog"); // work in default, where the page opens
      const asker = server.consume("asker", "webapp", { report: "The build needs a **new key**. Which one?", options: ["Rotate it", "Keep the old one"] }).catch(() => null);
      await until(async () => (await server.agent("asker", "webapp"))?.waiting, { what: "asker waiting in webapp" });
      for (const [width, scheme] of VIEWS) {
        const { page, errors, context } = await openPage(browser, server, { width, height: 900, colorScheme: scheme });
        const where = `${width} px ${scheme}`;
        const pill = page.locator("#agent-word");
        await until(async () => (await pill.textContent()) === "Needs you · asker in webapp", { what: `${where}: the pill` });
        assert.equal(await pill.evaluate((e) => e.tagName), "BUTTON", "the pill is a control");
        await until(async () => (await page.title()) === "(1) needs you · local-mcp", { what: `${where}: the title says needs you` });
        // Answerable from here (default is shown): the question, its answers, a reply box.
        const ask = page.locator('#asks li[data-agent="asker"][data-queue="webapp"]');
        await until(() => ask.isVisible(), { what: `${where}: webapp's question above default's rail` });
        assert.equal(await ask.locator(".report__body strong").textContent(), "new key");
        assert.deepEqual(await ask.locator(".report__options button").allTextContents(), ["Rotate it", "Keep the old one"]);
        assert.ok(await ask.locator(".report__reply input").isVisible());
        assert.match(await ask.locator(".ask__head").textContent(), /in webapp/);
        // The agent panel, which says it waits for an answer, shows what it asked and leads to it.
        const row = page.locator('#agents li[data-agent="asker"][data-queue="webapp"]');
        await until(async () => (await row.locator(".report__body").count()) === 1, { what: `${where}: the question in the agent panel` });
        assert.match(await row.locator(".report__body").textContent(), /Which one\?/);
        assert.equal(await row.getByRole("button", { name: "Answer it: asker's question" }).count(), 1);
        // At 400 px the pill is whole: nothing cut, inside the header's one row.
        const cut = await pill.evaluate((b) => [...b.querySelectorAll("span")].some((s) => s.scrollWidth > s.clientWidth + 1) || b.scrollWidth > b.clientWidth + 1);
        assert.equal(cut, false, `${where}: the pill is cut`);
        const [p, toggle, strip] = [await rect(page, "#agent-word"), await rect(page, "#theme-toggle"), await rect(page, ".strip")];
        assert.ok(p.right <= toggle.left, `${where}: the pill (to ${p.right}) runs under the theme button (from ${toggle.left})`);
        assert.ok(strip.height < 64, `${where}: the header is ${strip.height} px high`);
        await page.evaluate(() => document.fonts.ready);
        await shot(page, `newcomer-other-queue-${width}-${scheme}`);
        // The pill takes the person to the question: webapp shown, focus on its first answer.
        await pill.click();
        await until(() => tabPressed(page, "webapp"), { what: `${where}: webapp shown` });
        await until(async () => (await focused(page)).text === "Rotate it", { what: `${where}: focus on the first answer` });
        const q = await rect(page, '#asks li[data-agent="asker"]');
        assert.ok(q.top >= 0 && q.top < (await page.evaluate(() => innerHeight)), `${where}: the question in view (top at ${q.top})`);
        // From the agent panel too, after going back to default.
        await page.locator('#queue-tabs [data-queue="default"]').click();
        await until(() => tabPressed(page, "default"), { what: "default shown again" });
        await row.getByRole("button", { name: "Answer it: asker's question" }).click();
        await until(async () => (await focused(page)).text === "Rotate it", { what: `${where}: Answer it leads to the question` });
        assert.deepEqual(errors, []);
        await context.close();
      }
      // Answered from default's page: it reaches asker in webapp.
      const { page, errors, context } = await openPage(browser, server);
      const input = page.locator('#asks li[data-agent="asker"] .report__reply input');
      await until(() => input.isVisible(), { what: "the reply box" });
      await input.fill("Rotate it, and tell me where it is");
      await input.press("Enter");
      assert.equal((await asker).instruction.content, "Rotate it, and tell me where it is");
      await until(async () => !/needs you/.test(await page.title()), { what: "the title calm again" });
      assert.deepEqual(errors, []);
      await context.close();
    } finally {
      await server.stop();
    }
  });
});

describe("reports and their answers", () => {
  test("an answered question loses its box and shows the answer; a report that asks nothing gets a small Reply; the ledger names the taker once", async () => {
    const server = await startServer({ waitSeconds: 60 });
    try {
      // newbie takes work addressed to it, reports "Done", takes more.
      assert.equal((await server.api("POST", "/api/instructions", { content: "Split the parser", target: "newbie" })).status, 201);
      await server.consume("newbie");
      await server.add("Now the lexer");
      await server.consume("newbie", null, { report: "Done: the parser is split in two." });
      const { page, errors, context } = await openPage(browser, server);
      const row = page.locator('#agents li[data-agent="newbie"]');
      // "Done: …" asks nothing: no box, a small Reply that opens one.
      await until(async () => /Done: the parser/.test(await textOf(row.locator(".report__body"))), { what: "the Done report under newbie" });
      assert.equal(await row.locator(".report__reply").count(), 0, "a Done report gets a reply box");
      await row.getByRole("button", { name: "Reply to newbie" }).click();
      await until(async () => (await focused(page)).tag === "INPUT", { what: "the opened reply box focused" });
      assert.equal(await row.locator(".report__reply input").count(), 1);
      // The ledger: addressed to the agent that took it, said once.
      const split = page.locator("#ledger .entry", { hasText: "Split the parser" });
      const meta = await split.locator(".entry__meta").textContent();
      assert.match(meta, /^newbie · /);
      assert.doesNotMatch(meta, /for newbie/);

      // A question: its box is above the rail, not a second one in the panel.
      const call = server.consume("newbie", null, { report: "Keep the old API?", options: ["Yes", "No"] });
      const ask = page.locator('#asks li[data-agent="newbie"]');
      await until(async () => (await ask.locator(".report__options button").count()) === 2, { what: "the question's answers" });
      await until(async () => (await row.locator(".report__reply").count()) === 0, { what: "no reply box in the panel for the open question" });
      // Held, so the answer waits where the person can see it.
      await page.locator("#queue-hold").click();
      await until(() => page.locator("#rail-held").isVisible(), { what: "held" });
      await ask.locator(".report__options button", { hasText: "Yes" }).click();
      await until(async () => (await ask.locator(".report__answered").count()) === 1, { what: "the answer shown under the question" });
      assert.equal(await ask.locator(".report__answered").textContent(), "You answered “Yes”: it goes to newbie once you release default.");
      assert.equal(await ask.locator(".report__reply, .report__options").count(), 0, "the answered question keeps its box");
      await until(async () => (await row.locator(".report__answered").count()) === 1, { what: "the answer in the agent panel" });
      assert.equal(await row.locator(".report__reply, .report__options, .report__open").count(), 0, "the panel offers to answer it again");
      // Answered, nobody needs the person: not the lamp, the agent, the tab nor the title.
      await until(async () => (await page.locator("#lamp").getAttribute("data-state")) === "listening", { what: "the lamp calm once answered" });
      assert.equal(await row.locator(".agent__state").textContent(), "Listening");
      assert.equal(await page.locator('#queue-tabs [data-queue="default"] .qtab__needs').count(), 0);
      assert.doesNotMatch(await page.title(), /needs you/);
      assert.match(await page.locator("#toast-text").textContent(), /goes once you release default/);
      await page.evaluate(() => document.fonts.ready);
      await shot(page, "newcomer-answered-1280-light");
      // Released: newbie gets it; the ledger's question says so.
      await page.locator("#queue-hold").click();
      assert.equal((await call).instruction.content, "Yes");
      const lexer = page.locator("#ledger .entry", { hasText: "Now the lexer" });
      await until(async () => /^You answered “Yes”; newbie got it /.test(await textOf(lexer.locator(".report__answered"))), { what: "the ledger's question answered" });
      assert.equal(await lexer.locator(".report__reply, .report__options").count(), 0);
      assert.deepEqual(errors, []);
      await context.close();
      for (const [width, scheme] of [[400, "dark"], [400, "light"], [1280, "dark"]]) {
        const opened = await openPage(browser, server, { width, height: 900, colorScheme: scheme });
        await until(async () => (await opened.page.locator("#ledger .report__answered").count()) === 1, { what: `${width} ${scheme}: the answered question in the ledger` });
        await opened.page.evaluate(() => document.fonts.ready);
        await shot(opened.page, `newcomer-answered-${width}-${scheme}`);
        assert.deepEqual(opened.errors, []);
        await opened.context.close();
      }
    } finally {
      await server.stop();
    }
  });
});

describe("making a queue", () => {
  test("+ Queue says what a name may hold, shows what it will be called, and refuses a bad one in words", async () => {
    const server = await startServer({ waitSeconds: 0 });
    try {
      for (const [width, scheme] of VIEWS) {
        const { page, errors, context } = await openPage(browser, server, { width, height: 700, colorScheme: scheme });
        const where = `${width} px ${scheme}`;
        await page.locator("#queue-add").click();
        const input = page.locator("#queue-new-name");
        const note = page.locator("#queue-new-note");
        await until(() => input.isVisible(), { what: "the name box" });
        assert.match(await note.textContent(), /1–64 of a–z, 0–9, dot, underscore and dash/, `${where}: the rule, before anything is typed`);
        // A space: refused in words, not by the browser's bubble; nothing made.
        await input.fill("My Queue");
        await input.press("Enter");
        await until(async () => /has a space\. Try “my-queue”\./.test(await note.textContent()), { what: `${where}: the refusal` });
        assert.equal(await input.getAttribute("aria-invalid"), "true");
        assert.equal(await input.evaluate((i) => i.validationMessage), "", "the browser's own validation stays quiet");
        assert.ok(!(await server.api("GET", "/api/queues")).body.items.some((q) => /my/.test(q.name)), "nothing made");
        // Upper case: said before it is made, then made as said.
        const name = `Proj${width}${scheme}`;
        await input.fill(name);
        await until(async () => (await note.textContent()) === `It will be called “${name.toLowerCase()}”.`, { what: `${where}: the name it will have` });
        await page.evaluate(() => document.fonts.ready);
        await shot(page, `newcomer-queue-name-${width}-${scheme}`);
        await input.press("Enter");
        await until(() => tabPressed(page, name.toLowerCase()), { what: `${where}: the queue made and shown` });
        assert.ok(await page.locator("#queue-new").isHidden());
        assert.deepEqual(errors, []);
        await context.close();
      }
    } finally {
      await server.stop();
    }
  });
});

describe("attaching a file", () => {
  test("a binary file is refused when attached, by name; the typed text stays; an image and a text file are staged", async () => {
    const server = await startServer({ waitSeconds: 0 });
    try {
      for (const [width, scheme] of VIEWS) {
        const { page, errors, context } = await openPage(browser, server, { width, height: 800, colorScheme: scheme });
        const where = `${width} px ${scheme}`;
        await page.locator("#composer-text").fill("keep me");
        await page.locator("#composer-pick").setInputFiles([
          { name: "build.zip", mimeType: "application/zip", buffer: Buffer.from([0x50, 0x4b, 3, 4, 0, 0, 0xff, 0xfe, 0, 1]) },
          { name: "notes.txt", mimeType: "text/plain", buffer: Buffer.from("plain notes\n") },
          { name: "dot.png", mimeType: "image/png", buffer: Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==", "base64") },
        ]);
        await until(() => page.locator("#composer-error").isVisible(), { what: `${where}: the refusal` });
        assert.match(await page.locator("#composer-error").textContent(), /“build\.zip” is neither an image nor UTF-8 text/);
        await until(async () => (await page.locator("#composer-files .thumb").count()) === 2, { what: `${where}: the other two staged` });
        assert.deepEqual(await page.locator("#composer-files .thumb__open").evaluateAll((bs) => bs.map((b) => b.getAttribute("aria-label"))), ["View notes.txt", "View dot.png"]);
        assert.equal(await page.locator("#composer-text").inputValue(), "keep me");
        // A file of text with a NUL in it is binary too; pasted, it is refused the same way.
        await page.evaluate(() => {
          const dt = new DataTransfer();
          dt.items.add(new File(["text\u0000more"], "dump.log", { type: "text/plain" }));
          document.querySelector("#composer-text").dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true }));
        });
        await until(async () => /“dump\.log” is binary/.test(await page.locator("#composer-error").textContent()), { what: `${where}: the pasted binary refused` });
        assert.equal(await page.locator("#composer-files .thumb").count(), 2);
        await page.evaluate(() => document.fonts.ready);
        await page.evaluate(() => window.scrollTo(0, 0));
        await page.screenshot({ path: join(artifacts, "screenshots", `newcomer-refused-file-${width}-${scheme}.png`) });
        // What is left queues, with the text as typed.
        await page.locator("#composer-submit").click();
        await until(async () => (await server.pending()).some((i) => i.content === "keep me" && i.attachments?.length === 2), { what: `${where}: queued with the two files` });
        assert.deepEqual(errors, []);
        await context.close();
        for (const i of await server.pending()) await server.api("DELETE", `/api/instructions/${i.id}`);
      }
    } finally {
      await server.stop();
    }
  });
});

describe("layout and keyboard", () => {
  let server;
  before(async () => {
    server = await startServer({ waitSeconds: 0 });
    for (const name of ["proj", "docs-site", "mobile-app", "infra"]) await server.api("POST", "/api/queues", { name });
    for (let i = 0; i < 25; i++) {
      await server.add(`delivered ${i}`);
      await server.consume("layout-agent");
    }
    // Then gone: nobody takes what is queued here (the rail says so, and points to Connect agents).
    await server.consume("layout-agent");
    await server.api("PATCH", "/api/config", { agent_stale_after_seconds: 1 });
    await until(async () => (await server.agent("layout-agent")).state === "offline", { what: "layout-agent gone" });
  });
  after(async () => {
    await server?.stop();
  });

  test("every control of the queue bar is in view at 400 and 760 px, and in one column the agents come before the ledger", async () => {
    await server.add("Something for nobody");
    for (const [width, scheme] of [[400, "light"], [400, "dark"], [760, "light"], [760, "dark"], [1280, "light"], [1280, "dark"]]) {
      const { page, errors, context } = await openPage(browser, server, { width, height: 800, colorScheme: scheme });
      const where = `${width} px ${scheme}`;
      await until(async () => (await page.locator("#queue-tabs .qtab").count()) === 5, { what: `${where}: five queues` });
      await page.evaluate(() => document.fonts.ready);
      // The bar does not scroll sideways, and each of its controls is whole on the screen.
      const bar = await page.locator(".queues").evaluate((b) => ({ scroll: b.scrollWidth - b.clientWidth }));
      assert.ok(bar.scroll <= 0, `${where}: the queue bar scrolls sideways by ${bar.scroll} px`);
      const out = await page.locator(".queues button").evaluateAll((bs) =>
        bs.filter((b) => b.offsetParent).filter((b) => { const r = b.getBoundingClientRect(); return r.left < 0 || r.right > innerWidth; }).map((b) => b.textContent),
      );
      assert.deepEqual(out, [], `${where}: controls off the screen`);
      for (const id of ["#queue-add", "#queue-suffix", "#queue-hold", "#queue-hold-all"]) assert.ok(await page.locator(id).isVisible(), `${where}: ${id}`);
      // One column: Agents and Connect agents before the ledger, in the document too (reading and Tab order).
      const [agents, clients, ledger] = [await rect(page, ".agents"), await rect(page, ".clients"), await rect(page, ".ledger")];
      assert.ok(await page.evaluate(() => Boolean(document.querySelector(".agents").compareDocumentPosition(document.querySelector(".ledger")) & Node.DOCUMENT_POSITION_FOLLOWING)), "Agents come before the ledger in the document");
      if (width < 860) {
        assert.ok(agents.bottom <= ledger.top && clients.bottom <= ledger.top, `${where}: agents (${agents.top}) and Connect agents (${clients.top}) before the ledger (${ledger.top})`);
      } else {
        assert.ok(agents.left >= ledger.right, `${where}: the side panel beside the ledger`);
      }
      // The rail's pointer to Connect agents is true in every layout: it opens it and goes there.
      await until(() => page.locator("#rail-nobody").isVisible(), { what: `${where}: the nobody note` });
      await page.locator("#rail-nobody").getByRole("button", { name: "Connect agents" }).click();
      await until(() => page.locator("#clients-details").evaluate((d) => d.open), { what: `${where}: Connect agents open` });
      assert.equal((await focused(page)).text, "Connect agents");
      const summary = await rect(page, "#clients-details > summary");
      assert.ok(summary.top >= 0 && summary.bottom <= 800, `${where}: Connect agents in view (at ${summary.top})`);
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.screenshot({ path: join(artifacts, "screenshots", `newcomer-queue-bar-${width}-${scheme}.png`) });
      await shot(page, `newcomer-one-column-${width}-${scheme}`);
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      assert.ok(overflow <= 0, `${where}: the page scrolls sideways by ${overflow} px`);
      assert.deepEqual(errors, []);
      await context.close();
    }
    for (const i of await server.pending()) await server.api("DELETE", `/api/instructions/${i.id}`);
  });

  test("focus stays on a ticket moved to the end of the rail; after Delete it is on the next ticket, then the composer", async () => {
    for (const i of await server.pending()) await server.api("DELETE", `/api/instructions/${i.id}`);
    const [a, b, c] = [await server.add("alpha"), await server.add("bravo"), await server.add("charlie")];
    const { page, errors, context } = await openPage(browser, server);
    await until(async () => (await railTexts(page)).length === 3, { what: "three tickets" });
    // Each time the rail's tickets change, is focus still in the rail? (Moving a node in the DOM
    // blurs it: without putting focus back in the same redraw, an Enter pressed then is lost.)
    await page.evaluate(() => {
      window.__focusOff = [];
      new MutationObserver(() => {
        if (!document.activeElement?.closest?.("#rail")) window.__focusOff.push(document.activeElement?.tagName ?? "none");
      }).observe(document.getElementById("rail"), { childList: true });
    });
    // bravo down by keyboard: it is now last, and focus is still on it.
    await page.locator(`#rail li[data-id="${b.id}"] [data-action="down"]`).focus();
    await page.keyboard.press("Enter");
    await until(async () => (await railTexts(page)).join() === "alpha,charlie,bravo", { what: "bravo at the end" });
    await until(async () => (await focused(page)).ticket === b.id, { what: "focus on the moved ticket" });
    assert.equal((await focused(page)).action, "up", "on its Move up (Move down is disabled now)");
    // Back up to the head: focus stays with it.
    await page.keyboard.press("Enter");
    await until(async () => (await railTexts(page)).join() === "alpha,bravo,charlie", { what: "bravo up" });
    await until(async () => (await focused(page)).ticket === b.id, { what: "focus on bravo moved up" });
    await page.keyboard.press("Enter");
    await until(async () => (await railTexts(page)).join() === "bravo,alpha,charlie", { what: "bravo at the head" });
    await until(async () => (await focused(page)).ticket === b.id, { what: "focus on the ticket at the head" });
    assert.equal((await focused(page)).action, "down");
    assert.deepEqual(await page.evaluate(() => window.__focusOff), [], "focus fell off the rail while tickets moved");
    // Delete alpha by keyboard: focus on charlie itself, not on its Delete.
    await page.locator(`#rail li[data-id="${a.id}"] [data-action="delete"]`).focus();
    await page.keyboard.press("Enter");
    await until(async () => !(await railTexts(page)).includes("alpha"), { what: "alpha deleted" });
    await until(async () => (await focused(page)).ticket === c.id, { what: "focus on the next ticket" });
    assert.equal((await focused(page)).tag, "LI", "on the ticket, not on one of its buttons");
    // The last one deleted: the one before it; the only one left: the composer.
    await page.locator(`#rail li[data-id="${c.id}"] [data-action="delete"]`).focus();
    await page.keyboard.press("Enter");
    await until(async () => (await focused(page)).ticket === b.id, { what: "focus on the ticket before" });
    await page.locator(`#rail li[data-id="${b.id}"] [data-action="delete"]`).focus();
    await page.keyboard.press("Enter");
    await until(async () => (await focused(page)).id === "composer-text", { what: "focus on the composer" });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("a delivered ticket's fly-out stays inside the rail, off the agents column", async () => {
    await server.add("fly out");
    const { page, errors, context, settled } = await openPage(browser, server, { reducedMotion: "no-preference" });
    await until(async () => (await railTexts(page)).includes("fly out"), { what: "the ticket" });
    // Live on the stream first: a delivery the page learns by reloading leaves without flying.
    await settled();
    await page.evaluate(() => {
      // Stop the departure part of the way, and look there and then (a timer removes the ticket soon after).
      new MutationObserver(() => {
        const leaving = document.querySelector(".ticket--leaving");
        if (!leaving || window.__flyout) return;
        for (const a of leaving.getAnimations()) {
          a.pause();
          a.currentTime = 120;
        }
        leaving.remove = () => {}; // kept for the screenshot
        const rail = document.getElementById("rail").getBoundingClientRect();
        const box = leaving.getBoundingClientRect();
        // Just right of the rail, level with the ticket: is any of it drawn there?
        const over = document.elementsFromPoint(rail.right + 12, box.top + box.height / 2).some((e) => e.closest(".ticket--leaving"));
        window.__flyout = { over, moved: box.right - rail.right };
      }).observe(document.getElementById("rail"), { subtree: true, attributes: true, attributeFilter: ["class"] });
    });
    await server.consume("flyer");
    const { over, moved } = await until(() => page.evaluate(() => window.__flyout), { what: "the fly-out paused" });
    assert.ok(moved > 12, `the ticket has moved right (its box ends ${moved} px past the rail)`);
    assert.equal(over, false, "the leaving ticket is drawn right of the rail, over the side column");
    await page.screenshot({ path: join(artifacts, "screenshots", "newcomer-fly-out-1280-light.png") });
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("prose shows a plain zero; ids and counts in monospace keep theirs", async () => {
    const { page, errors, context } = await openPage(browser, server);
    await until(async () => (await page.locator('#queue-tabs [data-queue="infra"] .qtab__count').textContent()) === "0", { what: "a tab's count of 0" });
    const cdp = await context.newCDPSession(page);
    await cdp.send("DOM.enable");
    await cdp.send("CSS.enable");
    const { root } = await cdp.send("DOM.getDocument", { depth: -1 });
    const fontsOf = async (selector) => {
      const { nodeId } = await cdp.send("DOM.querySelector", { nodeId: root.nodeId, selector });
      const { fonts } = await cdp.send("CSS.getPlatformFontsForNode", { nodeId });
      return fonts.map((f) => f.familyName);
    };
    await page.evaluate(() => document.fonts.ready);
    // The count's only character is its 0 (its "· " comes before it, in the text face).
    const prose = await fontsOf('#queue-tabs [data-queue="infra"] .qtab__count');
    assert.ok(prose.includes("Atkinson Plain Zero"), `a 0 in prose is drawn with ${prose}`);
    assert.deepEqual(await fontsOf("#pending-count"), ["IBM Plex Mono"], "a count in monospace keeps its own 0");
    assert.deepEqual(errors, []);
    await context.close();
  });
});

describe("accessibility of what is new", () => {
  test("the steps, another queue's question, an answered one, the queue form and its refusal: no serious or critical violation at 400 and 1280 px in either theme", async () => {
    const server = await startServer({ waitSeconds: 60 });
    try {
      await server.api("POST", "/api/queues", { name: "webapp" });
      await server.add("Read the logs");
      await server.consume("scribe");
      await server.add("Then the tests");
      await server.consume("scribe", null, { report: "Done: nothing odd in the logs." });
      const asker = server.consume("asker", "webapp", { report: "Which key?", options: ["New", "Old"] }).catch(() => null);
      await until(async () => (await server.agent("asker", "webapp"))?.waiting, { what: "asker waiting" });
      for (const [width, scheme] of VIEWS) {
        const { page, context } = await openPage(browser, server, { width, height: 900, colorScheme: scheme });
        await until(() => page.locator('#asks li[data-agent="asker"]').isVisible(), { what: "the question" });
        await until(async () => (await page.locator('#agents li[data-agent="scribe"] .report__open').count()) === 1, { what: "scribe's Reply" });
        // With the queue form open and refusing a name, and Connect agents open (its sentence to copy).
        await page.locator("#queue-add").click();
        await page.locator("#queue-new-name").fill("a b");
        await page.locator("#queue-new-name").press("Enter");
        await until(async () => (await page.locator("#queue-new-name").getAttribute("aria-invalid")) === "true", { what: "the refusal" });
        await page.locator("#clients-details > summary").click();
        await page.evaluate(AXE);
        const scan = async (what) => {
          const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
          const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
          assert.deepEqual(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`), [], `${width} px ${scheme}: ${what}`);
        };
        await scan("the question from webapp, scribe's report, the queue form");
        await context.close();
      }
      // Answered on a held queue (once, from the first page): the answer waits, said in words.
      await server.api("POST", "/api/hold", { queue: "webapp" });
      for (const [width, scheme] of VIEWS) {
        const { page, context } = await openPage(browser, server, { width, height: 900, colorScheme: scheme });
        await page.locator('#queue-tabs [data-queue="webapp"]').click();
        await until(() => page.locator("#rail-held").isVisible(), { what: "webapp held" });
        const ask = page.locator('#asks li[data-agent="asker"]');
        await until(() => ask.isVisible(), { what: "the question" });
        if ((await ask.locator(".report__answered").count()) === 0) await ask.locator(".report__options button", { hasText: "Old" }).click();
        await until(async () => (await ask.locator(".report__answered").count()) === 1, { what: "answered" });
        await page.evaluate(AXE);
        const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
        const bad = result.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
        assert.deepEqual(bad.map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(" ")).join(", ")}`), [], `${width} px ${scheme}: an answered question on a held queue`);
        await page.evaluate(() => document.fonts.ready);
        await shot(page, `newcomer-answered-held-${width}-${scheme}`);
        await context.close();
      }
      await server.api("POST", "/api/release", { queue: "webapp" });
      await asker;
      // A fresh queue, nobody there: the three steps.
      const { page, context } = await openPage(browser, server, { width: 400, colorScheme: "dark" });
      await page.locator("#queue-add").click();
      await page.locator("#queue-new-name").fill("fresh");
      await page.locator("#queue-new-name").press("Enter");
      await until(() => page.locator("#rail-empty-how").isVisible(), { what: "the steps" });
      await page.evaluate(AXE);
      const result = await page.evaluate(() => window.axe.run(document, { resultTypes: ["violations"] }));
      assert.deepEqual(result.violations.filter((v) => v.impact === "serious" || v.impact === "critical").map((v) => v.id), [], "the steps");
      await context.close();
    } finally {
      await server.stop();
    }
  });
});
