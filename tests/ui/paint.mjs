// The page's first paint in a real Chromium, for `npm run bench` (not a test:
// it asserts nothing). Usage: node paint.mjs URL [RUNS]. Each run opens the
// page in a fresh browser context (no cache, as on a first open) and takes,
// from the start of navigation: the first contentful paint, and the moment
// the ledger holds its first delivered entry (the page's data has arrived and
// been drawn). Prints one JSON object: {"fcp_ms": [...], "ledger_ms": [...]}.

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
} finally {
  await browser.close();
}
console.log(JSON.stringify({ fcp_ms: fcp, ledger_ms: ledger }));
