// Shared helpers for the browser tests: the real local-mcp-server binary
// (tests/server.mjs, with a raw MCP client for consuming instructions) and
// Debian's Chromium through playwright-core.

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

import { root, startServer as startBinary } from "../server.mjs";

export { root, serverBin, until } from "../server.mjs";
export const artifacts = join(root, "tests/artifacts");
mkdirSync(join(artifacts, "screenshots"), { recursive: true });

/** The shared server, with the page tests' default wait (30 s: calls wait while a test acts). */
export function startServer(options = {}) {
  return startBinary({ waitSeconds: 30, ...options });
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic"],
  });
}

/**
 * A page on the server, recording console errors and every request URL.
 * `colorScheme` picks the OS theme the page sees.
 */
export async function openPage(browser, server, { width = 1280, height = 800, colorScheme = "light", reducedMotion = "reduce" } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme, reducedMotion });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
  const page = await context.newPage();
  const errors = [];
  const requests = [];
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) => requests.push(r.url()));
  await page.goto(server.url + "/");
  return { page, context, errors, requests };
}
