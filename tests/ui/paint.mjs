// The page's first paint in a real Chromium, for `npm run bench` (not a test:
// it asserts nothing). Usage: node paint.mjs URL [RUNS]. Each run opens the
// page in a fresh browser context (no cache, as on a first open) and takes,
// from the start of navigation: the first contentful paint, and the moment
// the ledger holds its first delivered entry (the page's data has arrived and
// been drawn). Then, in one open page, RUNS times: an instruction is queued,
// an agent's `get_user_request` takes it, and the time from sending that call
// to the delivery's entry in the page's ledger (over the event stream; both
// ends read on the page's clock). If that part fails, "live_ms" is empty and
// the reason goes to stderr.
// Prints one JSON object: {"fcp_ms": [...], "ledger_ms": [...], "live_ms": [...]}.
// The server must answer without a token, in stateless MCP mode.

import { chromium } from "playwright-core";

const [url, runs = "10"] = process.argv.slice(2);
if (!url) {
  console.error("usage: node paint.mjs URL [RUNS]");
  process.exit(2);
}

// Runs in the page before its own scripts: note when the first ledger entry appears.
function watchLedger() {
  new MutationObserver((_, observer) => {
    if (document.querySelector("#ledger li.entry")) {
      window.__ledgerDrawnAt = performance.now();
      observer.disconnect();
    }
  }).observe(document, { childList: true, subtree: true });
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync"],
});
const fcp = [];
const ledger = [];
const liveTimes = [];
try {
  for (let i = 0; i < Number(runs); i++) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await page.addInitScript(watchLedger);
    await page.goto(url);
    await page.waitForFunction(() => window.__ledgerDrawnAt !== undefined, null, { timeout: 30_000 });
    const times = await page.evaluate(() => ({
      fcp: performance.getEntriesByName("first-contentful-paint")[0]?.startTime ?? null,
      ledger: window.__ledgerDrawnAt,
    }));
    if (times.fcp !== null) fcp.push(times.fcp);
    ledger.push(times.ledger);
    await context.close();
  }
  try {
    await live(Number(runs));
  } catch (e) {
    console.error(`the live delivery runs failed: ${e.message}`);
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify({ fcp_ms: fcp, ledger_ms: ledger, live_ms: liveTimes }));

/** Runs in the page: note when a ledger entry with each text first appears (the page's clock). */
function watchDeliveries() {
  window.__drawn = {};
  new MutationObserver(() => {
    for (const e of document.querySelectorAll("#ledger .entry__text")) window.__drawn[e.textContent] ??= performance.now();
  }).observe(document, { childList: true, subtree: true, characterData: true });
}

async function live(n) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  await page.addInitScript(watchDeliveries);
  await page.goto(url);
  await page.waitForFunction(() => document.querySelector("#conn")?.dataset.conn === "live", null, { timeout: 30_000 });
  const post = (path, body, headers = {}) => fetch(new URL(path, url), { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  for (let i = 0; i < n; i++) {
    const content = `live delivery ${i} ${Date.now()}`;
    await post("/api/instructions", { content });
    await page.waitForFunction((c) => [...document.querySelectorAll("#rail .ticket__text")].some((e) => e.textContent.includes(c)), content, { timeout: 30_000 });
    // Read on the page's clock before the call leaves (so the figure includes one DevTools answer).
    const sent = await page.evaluate(() => performance.now());
    const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_user_request", arguments: { agent_id: "bench-live" } } };
    await (await post("/mcp", call, { accept: "application/json, text/event-stream" })).text();
    const drawn = await page.waitForFunction((c) => window.__drawn[c], content, { timeout: 30_000 });
    liveTimes.push((await drawn.jsonValue()) - sent);
  }
  await context.close();
}
