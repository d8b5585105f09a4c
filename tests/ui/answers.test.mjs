// Answers that land after the event (issue 25 §1): every change the page
// makes is a request whose answer races the event stream. Each test here
// lets the server act at once but holds the answer back until an agent has
// taken the instruction and the page has shown that; the late answer must
// not put a delivered instruction back on the rail (the "ghost ticket").

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";

import { launchBrowser, openPage, startServer, until } from "./harness.mjs";

let browser;
let server;
before(async () => {
  browser = await launchBrowser();
  server = await startServer();
});
after(async () => {
  await server?.stop();
  await browser?.close();
});

const railTexts = (page) => page.locator("#rail .ticket__text").allTextContents();
const ledgerTexts = (page) => page.locator("#ledger .entry__text").allTextContents();

/**
 * Hold back the answers to `method` requests matching `url`: the server does
 * the work at once, the page gets the answer only after `release()`.
 * `delivered()` is true once the held answer has been handed to the page.
 */
async function holdAnswers(page, url, method) {
  let release;
  const released = new Promise((r) => (release = r));
  let held = 0;
  let delivered = 0;
  await page.route(url, async (route) => {
    if (route.request().method() !== method) return route.fallback();
    const response = await route.fetch();
    held += 1;
    await released;
    await route.fulfill({ response });
    delivered += 1;
  });
  return { held: () => held > 0, delivered: () => delivered > 0, release };
}

async function clearQueue() {
  for (const i of await server.pending()) await server.api("DELETE", `/api/instructions/${i.id}`);
}

async function openLive() {
  const opened = await openPage(browser, server);
  await until(() => opened.page.evaluate(() => document.getElementById("conn")?.dataset.conn === "live"), { what: "the page live" });
  return opened;
}

/**
 * The whole race: `act` makes the change whose answer is held; an agent
 * takes `text` (what the change queued or left pending) while the answer
 * travels; then the answer lands. Nothing pending may be left on the page.
 */
async function raceAgainstDelivery(page, errors, { url, method, act, text, agent = "racer", take }) {
  const hold = await holdAnswers(page, url, method);
  await act();
  await until(hold.held, { what: `the server answered the ${method} (answer held)` });
  await (take ? take() : server.consume(agent));
  await until(async () => (await ledgerTexts(page)).includes(text), { what: "the delivery event shown in the ledger" });
  await until(async () => !(await railTexts(page)).includes(text), { what: "the delivered ticket off the rail" });
  hold.release();
  await until(hold.delivered, { what: "the held answer handed to the page" });
  // The page handles the answer in the tasks after it lands.
  await page.evaluate(() => new Promise((r) => setTimeout(r, 300)));
  assert.deepEqual(await railTexts(page), [], "the late answer put the delivered instruction back on the rail");
  assert.equal(await page.locator("#pending-count").textContent(), "0 pending");
  assert.equal(await page.title(), "local-mcp");
  assert.equal(await page.locator('#queue-tabs [data-queue="default"] .qtab__count').textContent(), "0");
  assert.deepEqual(errors, []);
}

describe("an answer that lands after the delivery event", () => {
  test("queueing from the composer (Ctrl+Enter)", async () => {
    await clearQueue();
    const { page, errors, context } = await openLive();
    await raceAgainstDelivery(page, errors, {
      url: /\/api\/instructions$/,
      method: "POST",
      text: "queued while an agent waits",
      act: async () => {
        await page.locator("#composer-text").fill("queued while an agent waits");
        await page.keyboard.press("Control+Enter");
      },
    });
    assert.equal(await page.locator("#composer-text").inputValue(), "", "the composer was cleared by the answer");
    await context.close();
  });

  test("queueing from the composer with a file", async () => {
    await clearQueue();
    const { page, errors, context } = await openLive();
    await raceAgainstDelivery(page, errors, {
      url: /\/api\/instructions$/,
      method: "POST",
      text: "with a note attached",
      act: async () => {
        await page.locator("#composer-pick").setInputFiles({ name: "note.txt", mimeType: "text/plain", buffer: Buffer.from("a note\n") });
        await until(async () => (await page.locator("#composer-files .thumb").count()) === 1, { what: "the file staged" });
        await page.locator("#composer-text").fill("with a note attached");
        await page.locator("#composer-submit").click();
      },
    });
    await until(async () => (await page.locator("#composer-files").isHidden()), { what: "the staged file cleared" });
    await context.close();
  });

  for (const how of ["an option button", "the reply box"]) {
    test(`answering a question with ${how}`, async () => {
      await clearQueue();
      // The agent asks and waits for the answer (the case: it gets it at once).
      const call = server.consume("asker", null, { report: "Which way?", options: ["Left", "Right"] });
      await until(async () => (await server.agent("asker"))?.waiting, { what: "the agent waiting on its question" });
      const { page, errors, context } = await openLive();
      const question = page.locator('[data-report] .report__reply input[aria-label="Reply to asker"]');
      await until(() => question.isVisible(), { what: "the question with its reply box" });
      const text = how === "the reply box" ? "Left, and keep it short" : "Left";
      await raceAgainstDelivery(page, errors, {
        url: /\/api\/reports\/[^/]+\/reply$/,
        method: "POST",
        text,
        take: () => call,
        act: async () => {
          if (how === "the reply box") {
            await question.fill(text);
            await question.press("Enter");
          } else {
            await page.locator(".report__options button", { hasText: "Left" }).first().click();
          }
        },
      });
      assert.equal((await call).instruction.content, text);
      await context.close();
    });
  }

  test("saving an edit", async () => {
    await clearQueue();
    await server.add("edit me");
    const { page, errors, context } = await openLive();
    await until(async () => (await railTexts(page)).includes("edit me"), { what: "the ticket" });
    await raceAgainstDelivery(page, errors, {
      url: /\/api\/instructions\/[^/]+$/,
      method: "PATCH",
      text: "edited before it was taken",
      act: async () => {
        await page.locator('#rail [data-action="edit"]').first().click();
        await page.locator("#rail textarea.ticket__editor").fill("edited before it was taken");
        await page.locator("#rail textarea.ticket__editor").press("Control+Enter");
      },
    });
    // The edit was saved before the agent took it: the page must not say it was lost.
    assert.equal(await page.locator(".ticket--conflict").count(), 0, "a conflict panel says the saved edit was not applied");
    await context.close();
  });

  test("Undo after a delete", async () => {
    await clearQueue();
    await server.add("deleted, then undone");
    const { page, errors, context } = await openLive();
    await until(async () => (await railTexts(page)).includes("deleted, then undone"), { what: "the ticket" });
    await page.locator('#rail [data-action="delete"]').first().click();
    await until(async () => (await server.pending()).length === 0, { what: "deleted on the server" });
    await raceAgainstDelivery(page, errors, {
      url: /\/api\/instructions$/,
      method: "POST",
      text: "deleted, then undone",
      act: () => page.locator("#toast-action").click(),
    });
    await context.close();
  });

  test("Send again from the ledger", async () => {
    await clearQueue();
    await server.add("send me twice");
    await server.consume("first-taker");
    const { page, errors, context } = await openLive();
    await until(async () => (await ledgerTexts(page))[0] === "send me twice", { what: "the ledger entry" });
    const hold = await holdAnswers(page, /\/requeue$/, "POST");
    await page.locator('#ledger [data-action="requeue"]').first().click();
    await until(hold.held, { what: "the server sent it again (answer held)" });
    await server.consume("racer");
    await until(async () => (await ledgerTexts(page)).filter((t) => t === "send me twice").length === 2, { what: "the second delivery in the ledger" });
    hold.release();
    await until(hold.delivered, { what: "the held answer handed to the page" });
    await page.evaluate(() => new Promise((r) => setTimeout(r, 300)));
    assert.deepEqual(await railTexts(page), [], "the late answer put the delivered instruction back on the rail");
    assert.equal(await page.locator("#pending-count").textContent(), "0 pending");
    assert.deepEqual(errors, []);
    await context.close();
  });

  test("dropping a file on a ticket", async () => {
    await clearQueue();
    await server.add("gets a file");
    const { page, errors, context } = await openLive();
    await until(async () => (await railTexts(page)).includes("gets a file"), { what: "the ticket" });
    await raceAgainstDelivery(page, errors, {
      url: /\/api\/instructions\/[^/]+\/attachments$/,
      method: "POST",
      text: "gets a file",
      act: () =>
        page.locator("#rail .ticket").first().evaluate((li) => {
          const dt = new DataTransfer();
          dt.items.add(new File(["fn main() {}\n"], "main.rs", { type: "text/x-rust" }));
          li.dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
        }),
    });
    await context.close();
  });

  test("removing a file from a ticket", async () => {
    await clearQueue();
    await server.addWithFiles("loses a file", [{ name: "a.txt", bytes: "a\n", type: "text/plain" }, { name: "b.txt", bytes: "b\n", type: "text/plain" }]);
    const { page, errors, context } = await openLive();
    await until(async () => (await page.locator("#rail .ticket .thumb").count()) === 2, { what: "the ticket's two files" });
    await raceAgainstDelivery(page, errors, {
      url: /\/api\/instructions\/[^/]+\/attachments\/[^/]+$/,
      method: "DELETE",
      text: "loses a file",
      act: () => page.locator('#rail .ticket [aria-label="Remove b.txt"]').click(),
    });
    await context.close();
  });

  test("queueing one's kept text as new after a conflict", async () => {
    await clearQueue();
    await server.add("taken mid-edit");
    const { page, errors, context } = await openLive();
    await until(async () => (await railTexts(page)).includes("taken mid-edit"), { what: "the ticket" });
    await page.locator('#rail [data-action="edit"]').first().click();
    await page.locator("#rail textarea.ticket__editor").fill("my kept version");
    await server.consume("fast-agent");
    await until(() => page.locator(".ticket--conflict").isVisible(), { what: "the conflict panel" });
    await raceAgainstDelivery(page, errors, {
      url: /\/api\/instructions$/,
      method: "POST",
      text: "my kept version",
      act: () => page.getByRole("button", { name: "Queue my version as new" }).click(),
    });
    await context.close();
  });
});
