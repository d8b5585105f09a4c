// The Windows end-to-end run's page half (scripts/platforms/windows-e2e.sh):
// the page local-mcp-server.exe serves under Wine, in Debian's Chromium
// through playwright-core (from tests/ui/node_modules). Chromium on Linux is
// no Windows process, so to the server it is another account, whose page
// session cookie never counts: the server runs with other accounts allowed
// and no token. The page goes live, waits for the Python SDK's agent to be
// listening, queues an instruction from the composer and sees it delivered
// to that agent.
//
// Usage: node e2e_page.mjs URL READY_FILE SCREENSHOT
// Every wait has a bound that names what it waited for.

import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "../..");
const { chromium } = createRequire(join(root, "tests/ui/package.json"))("playwright-core");
const [url, ready, screenshot] = process.argv.slice(2);

async function until(check, what, timeout = 30000) {
  const end = Date.now() + timeout;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
  args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"],
});
const errors = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(url + "/");
  await until(async () => (await page.locator("#conn").textContent()) === "live", "the live event stream");
  await until(async () => existsSync(ready), "the Python agent to be waiting", 60000);
  await page.locator("#composer-text").fill("from the page, under Wine");
  await page.keyboard.press("Control+Enter");
  // Delivered: the instruction moves from the rail to the ledger.
  await until(
    async () => (await page.locator("#ledger .entry__text").allTextContents()).includes("from the page, under Wine"),
    "the instruction in the ledger (delivered to the Python agent)",
    60000,
  );
  await page.screenshot({ path: screenshot });
  if (errors.length) throw new Error(`page errors: ${errors.join("; ")}`);
  console.log("page: live, queued from the composer, delivered to the Python SDK's agent");
} catch (e) {
  const page = browser.contexts()[0]?.pages()[0];
  if (page) {
    await page.screenshot({ path: screenshot }).catch(() => {});
    console.error(`page at failure (${screenshot}): ${(await page.locator("body").innerText().catch(() => "")).slice(0, 400)}`);
  }
  console.error(`page errors: ${errors.join("; ")}`);
  throw e;
} finally {
  await browser.close();
}
