// Shared helpers for the browser tests: the real local-mcp-server binary
// (tests/server.mjs, with a raw MCP client for consuming instructions) and
// Debian's Chromium through playwright-core.

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

import { root, startServer as startBinary, until } from "../server.mjs";

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
 * `colorScheme` picks the OS theme the page sees. `settled()` waits until the
 * page is live on its event stream with none of its API requests in flight:
 * from then on, a change it shows without a new request came over the stream.
 */
export async function openPage(browser, server, { width = 1280, height = 800, colorScheme = "light", reducedMotion = "reduce" } = {}) {
  const context = await browser.newContext({ viewport: { width, height }, colorScheme, reducedMotion });
  await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: server.url });
  const page = await context.newPage();
  const errors = [];
  const requests = [];
  const inFlight = new Set();
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("request", (r) => {
    requests.push(r.url());
    if (isApiRequest(r.url())) inFlight.add(r);
  });
  page.on("requestfinished", (r) => inFlight.delete(r));
  page.on("requestfailed", (r) => inFlight.delete(r));
  await page.goto(server.url + "/");
  // Quiet twice, 300 ms apart: a request the page has just begun reaches us a moment later.
  const quiet = async () => inFlight.size === 0 && (await page.locator("#conn").getAttribute("data-conn")) === "live";
  const settled = () =>
    until(async () => (await quiet()) && (await new Promise((r) => setTimeout(r, 300))) === undefined && (await quiet()), {
      what: "the page live on its event stream, no API request in flight",
    });
  return { page, context, errors, requests, settled };
}

/** A request to the API other than the event stream (which stays open). */
function isApiRequest(url) {
  const path = new URL(url).pathname;
  return path.startsWith("/api/") && path !== "/api/events";
}

/** The API requests among `requests` from index `from` on (the event stream's excepted). */
export function apiRequestsSince(requests, from) {
  return requests.slice(from).filter(isApiRequest);
}
