// The phone (issue 43), for real: the phone listener on an address of this
// machine that is not loopback, reached from other hosts — network
// namespaces of their own, each joined to this machine by a veth pair —
// by a phone (Debian's Chromium in mobile emulation, run inside the
// "phone" namespace) and by an attacker (curl inside the "attacker"
// namespace, and as another local account).
//
// The phone accepts the self-signed certificate only by its key
// (--ignore-certificate-errors-spki-list), after the test checked the
// certificate's SHA-256 against the fingerprint the computer's page shows,
// as a person compares them. It pairs by the link, queues with a photo,
// answers a question, sees the agent take it; revoked, it is refused.
// The attacker reaches nothing but the page's files and the pairing
// exchange; used and guessed codes are refused and guessing locks pairing;
// a revoked cookie is refused; cross-site and foreign-Host requests are
// refused; `/mcp` and every documented route a phone may not use are
// refused even with a valid device cookie.
//
// Needs root (network namespaces); fails, naming why, without it.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createHash, X509Certificate } from "node:crypto";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import https from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import tls from "node:tls";

import jsQR from "jsqr";
import { chromium } from "playwright-core";

import { artifacts, launchBrowser, openPage, startServer, until } from "./harness.mjs";

/**
 * Each namespace: its name, the veth pair, and the /24 and the IPv6 /64 it
 * shares with this machine (`.1`/`::1` here, `.2`/`::2` there). The
 * attacker also owns a whole /64 of its own (`pool`): any address in it can
 * be a connection's source, as a host on an IPv6 LAN can pick them.
 */
const tag = String(process.pid % 10000);
const NETS = {
  phone: { ns: `lmcp-phone-${tag}`, here: `lmp${tag}a`, there: `lmp${tag}b`, net: "10.77.1", net6: `fd77:${tag}:1:` },
  attacker: { ns: `lmcp-att-${tag}`, here: `lma${tag}a`, there: `lma${tag}b`, net: "10.77.2", net6: `fd77:${tag}:2:`, pool: `fd77:${tag}:22:` },
};
/** This machine's address on the phone's network: where the listener listens. */
const LAN = `${NETS.phone.net}.1`;

function sh(cmd, args, { ok = true } = {}) {
  const r = spawnSync(cmd, args, { encoding: "utf8", timeout: 30000 });
  if (ok && r.status !== 0) throw new Error(`${cmd} ${args.join(" ")}: exit ${r.status}: ${r.stderr || r.error}`);
  return r;
}

function makeNet({ ns, here, there, net, net6, pool }) {
  sh("ip", ["netns", "add", ns]);
  sh("ip", ["link", "add", here, "type", "veth", "peer", "name", there]);
  sh("ip", ["link", "set", there, "netns", ns]);
  // No link-local address: the kernel would add one with duplicate address detection, whose end
  // a second or more later (under load) is a network change to Chromium, which then fails every
  // request in flight (net::ERR_NETWORK_CHANGED) — a page loading then never started.
  sh("ip", ["link", "set", here, "addrgenmode", "none"]);
  sh("ip", ["netns", "exec", ns, "ip", "link", "set", there, "addrgenmode", "none"]);
  sh("ip", ["addr", "add", `${net}.1/24`, "dev", here]);
  sh("ip", ["link", "set", here, "up"]);
  sh("ip", ["netns", "exec", ns, "ip", "addr", "add", `${net}.2/24`, "dev", there]);
  sh("ip", ["netns", "exec", ns, "ip", "link", "set", there, "up"]);
  sh("ip", ["netns", "exec", ns, "ip", "link", "set", "lo", "up"]);
  sh("ip", ["netns", "exec", ns, "ip", "route", "add", "default", "via", `${net}.1`]);
  sh("ip", ["addr", "add", `${net6}:1/64`, "dev", here, "nodad"]);
  sh("ip", ["netns", "exec", ns, "ip", "addr", "add", `${net6}:2/64`, "dev", there, "nodad"]);
  sh("ip", ["netns", "exec", ns, "ip", "-6", "route", "add", "default", "via", `${net6}:1`]);
  if (pool) {
    sh("ip", ["netns", "exec", ns, "ip", "-6", "route", "add", "local", `${pool}:/64`, "dev", "lo", "table", "local"]);
    sh("ip", ["netns", "exec", ns, "sysctl", "-qw", "net.ipv6.ip_nonlocal_bind=1"]);
    sh("ip", ["-6", "route", "add", `${pool}:/64`, "via", `${net6}:2`]);
  }
}

/**
 * Wait (bounded) until the networks made here have settled — each link up
 * with its carrier, no address still tentative — so that no change reaches
 * a browser after it starts (see makeNet).
 */
async function netsSettled() {
  await until(
    () => {
      const links = Object.values(NETS).every((n) => /LOWER_UP/.test(sh("ip", ["-o", "link", "show", "dev", n.here]).stdout));
      const tentative = sh("ip", ["-6", "-o", "addr", "show", "tentative"]).stdout.trim();
      return links && tentative === "";
    },
    { timeout: 15000, what: "the test networks to settle (links up, no tentative address)" },
  );
}

function dropNet({ ns, here, pool }) {
  if (pool) sh("ip", ["-6", "route", "del", `${pool}:/64`], { ok: false });
  sh("ip", ["link", "del", here], { ok: false });
  sh("ip", ["netns", "del", ns], { ok: false });
}

let server, phoneUrl, fingerprint, browser, context, page;
const work = mkdtempSync(join(tmpdir(), "local-mcp-phone-"));

before(async () => {
  if (process.getuid?.() !== 0) throw new Error("the phone tests make network namespaces: run them as root (CI does)");
  if (sh("ip", ["netns", "list"], { ok: false }).status !== 0) throw new Error("`ip netns` is missing: install iproute2 (scripts/setup-system.sh test)");
  for (const n of Object.values(NETS)) {
    dropNet(n);
    makeNet(n);
  }
  await netsSettled();
  server = await startServer({ waitSeconds: 60 });
});

after(async () => {
  await browser?.close();
  await desk?.close();
  await server?.stop();
  for (const n of Object.values(NETS)) dropNet(n);
});

/**
 * curl from a namespace (the attacker's by default): { status, headers, body }.
 * `args` are curl's own (-X, -H, --data…); -k because an attacker does not
 * care whose certificate it is.
 */
function curlFrom(ns, path, args = [], base = phoneUrl) {
  // One new connection each, paced under the listener's 20 a second per address (server/tls.rs).
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60);
  const r = sh("ip", ["netns", "exec", ns, "curl", "-sk", "-i", "--max-time", "10", ...args, base + path], { ok: false });
  if (r.status !== 0) return { status: 0, headers: "", body: r.stderr };
  const [head, ...rest] = r.stdout.split(/\r\n\r\n/);
  return { status: Number(/^HTTP\/\S+ (\d+)/.exec(head)?.[1] ?? 0), headers: head, body: rest.join("\r\n\r\n") };
}
const attacker = (path, args) => curlFrom(NETS.attacker.ns, path, args);

/** The listener's certificate as this machine sees it (DER). */
function peerCertificate(url) {
  const { hostname, port } = new URL(url);
  return new Promise((ok, fail) => {
    const s = tls.connect({ host: hostname, port: Number(port), rejectUnauthorized: false }, () => {
      const raw = s.getPeerCertificate().raw;
      s.end();
      ok(raw);
    });
    s.on("error", fail);
  });
}

let desk, deskPage, pairingLink;

test("the computer's page starts the listener on a LAN address and shows a pairing QR code beside the certificate's fingerprint", async () => {
  const off = await server.api("GET", "/api/phone");
  assert.equal(off.status, 200);
  assert.equal(off.body.running, false, "off by default");
  assert.ok(off.body.addresses.includes(LAN), `${LAN} is offered: ${off.body.addresses}`);
  const bad = await server.api("POST", "/api/phone/start", { address: "203.0.113.9" });
  assert.equal(bad.status, 400, "not an address of this machine");
  assert.equal((await server.api("POST", "/api/phone/code")).status, 409, "no code while off");

  desk = await launchBrowser();
  ({ page: deskPage } = await openPage(desk, server, { width: 1280, height: 1000 }));
  // Where the tray's "Phone…" opens the queue window: the panel opens by itself.
  await deskPage.goto(`${server.url}/#phone`);
  await until(() => deskPage.locator("#phone-details").evaluate((d) => d.open), { what: "the Phone panel open at /#phone" });
  await until(async () => (await deskPage.locator("#phone-address option").count()) > 0, { what: "the addresses listed" });
  await deskPage.locator("#phone-address").selectOption(LAN);
  await deskPage.locator("#phone-start").click();
  await until(async () => (await deskPage.locator("#phone-state").textContent()).startsWith("Listening at https://"), { what: "the panel to say it listens" });
  const on = (await server.api("GET", "/api/phone")).body;
  assert.equal(on.running, true);
  phoneUrl = on.url;
  fingerprint = on.fingerprint;
  assert.match(phoneUrl, new RegExp(`^https://${LAN.replaceAll(".", "\\.")}:8443/p/[0-9a-f]{32}$`), "on the default port, under the install's secret path");
  const der = await peerCertificate(phoneUrl);
  const seen = createHash("sha256").update(der).digest("hex").toUpperCase().match(/../g).join(":");
  assert.equal(seen, fingerprint, "the certificate served is the one the page names");

  await deskPage.locator("#phone-pair").click();
  await until(() => deskPage.locator("#phone-pairing").isVisible(), { what: "the pairing QR code" });
  assert.equal(await deskPage.locator("#phone-fingerprint").textContent(), fingerprint, "the fingerprint beside the QR code");
  pairingLink = await deskPage.locator("#phone-link").textContent();
  assert.ok(pairingLink.startsWith(`${phoneUrl}/#pair=`), pairingLink);
  // What a camera reads from the QR code, as drawn: the link, exactly.
  const drawn = await deskPage.locator("#phone-qr").evaluate((img) => {
    const c = document.createElement("canvas");
    [c.width, c.height] = [img.naturalWidth, img.naturalHeight];
    const g = c.getContext("2d");
    g.fillStyle = "#fff";
    g.fillRect(0, 0, c.width, c.height);
    g.drawImage(img, 0, 0);
    return { w: c.width, h: c.height, rgba: [...g.getImageData(0, 0, c.width, c.height).data] };
  });
  const read = jsQR(Uint8ClampedArray.from(drawn.rgba), drawn.w, drawn.h);
  assert.equal(read?.data, pairingLink, "the QR code carries the link");
  await deskPage.locator(".phone").screenshot({ path: join(artifacts, "screenshots", "phone-pairing.png") });
  // The loopback server is unchanged: no phone route opens there.
  assert.equal((await server.api("POST", "/api/phone/pair", { code: "X" })).status, 404);
});

test("the phone pairs by the link, queues with a photo, answers a question and sees the agent take it", async () => {
  // Chromium runs inside the phone's namespace; it trusts the certificate by its key only —
  // and, for the cookie check below, another server's on this address that it was (wrongly) told to trust.
  const spkiOf = (der) => createHash("sha256").update(new X509Certificate(der).publicKey.export({ type: "spki", format: "der" })).digest("base64");
  const spki = spkiOf(await peerCertificate(phoneUrl));
  sh("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=other", "-addext", `subjectAltName=IP:${LAN}`, "-keyout", join(work, "other.key"), "-out", join(work, "other.pem")]);
  const otherPem = readFileSync(join(work, "other.pem"), "utf8");
  const otherSpki = spkiOf(new X509Certificate(otherPem).raw);
  const chromiumInNs = join(work, "chromium-in-phone-ns.sh");
  writeFileSync(chromiumInNs, `#!/bin/sh\nexec ip netns exec ${NETS.phone.ns} ${process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"} "$@"\n`);
  chmodSync(chromiumInNs, 0o755);
  browser = await chromium.launch({
    executablePath: chromiumInNs,
    args: ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-quic", `--ignore-certificate-errors-spki-list=${spki},${otherSpki}`],
  });
  context = await browser.newContext({
    viewport: { width: 390, height: 844 },
    deviceScaleFactor: 3,
    isMobile: true,
    hasTouch: true,
    reducedMotion: "reduce",
    userAgent: "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0 Mobile Safari/537.36",
  });
  page = await context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(pairingLink);
  await until(async () => (await page.evaluate(() => document.body.dataset.phone)) === "paired", { what: "the phone paired" });
  await until(async () => (await page.locator("#conn").getAttribute("data-conn")) === "live", { what: "the phone's page live" });
  assert.equal(new URL(page.url()).hash, "", "the code is out of the address bar");
  const cookie = (await context.cookies()).find((c) => c.name === "local-mcp-device");
  assert.ok(cookie, "the device cookie is set");
  assert.deepEqual([cookie.httpOnly, cookie.secure, cookie.sameSite], [true, true, "Strict"]);
  assert.equal(cookie.path, `${new URL(phoneUrl).pathname}/`, "the cookie is sent only under the secret path");
  // Another account's HTTPS server on another port of this address (browsers send a host's cookies
  // to every port): the phone's browser visits it, and the device cookie does not go along.
  const heard = [];
  const other = https.createServer({ key: readFileSync(join(work, "other.key")), cert: otherPem }, (req, res) => {
    heard.push(`${req.url} ${req.headers.cookie ?? ""}`);
    res.end("hello");
  });
  await new Promise((r) => other.listen(9443, LAN, r));
  for (const path of ["/", "/p/", "/api/status"]) await page.goto(`https://${LAN}:9443${path}`);
  other.close();
  assert.ok(heard.length >= 3, heard.join("\n"));
  assert.ok(!heard.some((h) => h.includes("local-mcp-device")), `the device cookie went to another server: ${heard.join("\n")}`);
  await page.goto(`${phoneUrl}/`);
  await until(async () => (await page.locator("#conn").getAttribute("data-conn")) === "live", { what: "the phone's page live again" });
  const devices = (await server.api("GET", "/api/phone")).body.devices;
  assert.equal(devices.length, 1);
  assert.equal(devices[0].name, "Android phone");
  assert.equal(devices[0].last_address, `${NETS.phone.net}.2`, "seen from the phone's own host");
  // The computer's panel lists it and puts the spent code away.
  await until(async () => (await deskPage.locator("#phone-devices").textContent()).includes("Android phone"), { what: "the phone listed on the computer" });
  assert.equal(await deskPage.locator("#phone-pairing").isVisible(), false, "the spent code is put away");

  // Queue with a photo (the camera's picture is a file to the page).
  const photo = spawnSync("python3", ["-c", "import sys,zlib,struct\nw=h=8\nraw=b''.join(b'\\x00'+b'\\xff\\x00\\x00'*w for _ in range(h))\nc=lambda t,d:struct.pack('>I',len(d))+t+d+struct.pack('>I',zlib.crc32(t+d))\nsys.stdout.buffer.write(b'\\x89PNG\\r\\n\\x1a\\n'+c(b'IHDR',struct.pack('>IIBBBBB',w,h,8,2,0,0,0))+c(b'IDAT',zlib.compress(raw))+c(b'IEND',b''))"]).stdout;
  await page.locator("#composer-pick").setInputFiles({ name: "photo.png", mimeType: "image/png", buffer: photo });
  await page.locator("#composer-text").fill("fix the layout in this photo");
  await page.locator("#composer-submit").tap();
  const queued = await until(async () => (await server.pending()).find((i) => i.content === "fix the layout in this photo"), { what: "the phone's instruction queued" });
  assert.equal(queued.attachments.length, 1, "with its photo");
  assert.equal(queued.attachments[0].mime_type, "image/png");

  // The agent takes it; the phone sees it delivered.
  const taken = await server.consume("phone-agent");
  assert.equal(taken.instruction?.content, "fix the layout in this photo");
  await until(async () => (await page.locator("#ledger").textContent()).includes("fix the layout in this photo"), { what: "the delivery in the phone's ledger" });

  // A question: answered from the phone with one tap.
  const asked = server.consume("phone-agent", null, { report: "Ship it now?", options: ["Ship", "Wait"] });
  const ship = page.locator("#asks-list .report__options button", { hasText: "Ship" });
  await until(async () => (await ship.count()) > 0, { what: "the question on the phone" });
  await ship.tap();
  const answered = await asked;
  assert.equal(answered.instruction?.content, "Ship");
  assert.equal(answered.instruction?.in_reply_to?.question, "Ship it now?");

  // The connection drops (the phone slept, the listener was restarted): the page comes back by itself.
  assert.equal((await server.api("POST", "/api/phone/stop")).status, 200);
  await until(async () => (await page.locator("#conn").getAttribute("data-conn")) !== "live", { what: "the phone's page to see its connection gone" });
  const again = await server.api("POST", "/api/phone/start", { address: LAN });
  assert.equal(again.body.url, phoneUrl, "the same address and port");
  assert.equal(again.body.fingerprint, fingerprint, "the same certificate: nothing to accept again");
  // Start again where it runs (a second tab, a client re-applying its settings): nothing
  // changes — it never lets go of its port, which another account could take meanwhile.
  for (let n = 0; n < 3; n++) {
    const same = await server.api("POST", "/api/phone/start", { address: LAN, port: 8443 });
    assert.equal(same.status, 200, JSON.stringify(same.body));
    assert.equal(same.body.running, true);
    assert.equal(same.body.url, phoneUrl);
  }
  await until(async () => (await page.locator("#conn").getAttribute("data-conn")) === "live", { what: "the phone's page live again", timeout: 45000 });
  await server.add("queued while the phone looked away");
  await until(async () => (await page.locator("#rail").textContent()).includes("queued while the phone looked away"), { what: "a change shown after the reconnect" });

  // Made for fingers: every control a phone shows is at least 44 × 44 px, and nothing overflows 360 px.
  await until(async () => (await page.locator(".ticket--leaving").count()) === 0, { what: "the delivered ticket off the rail" });
  for (const width of [430, 360]) {
    await page.setViewportSize({ width, height: 800 });
    const small = await page.evaluate(() =>
      [...document.querySelectorAll("button, .btn, select, summary, input:not([type=hidden]), textarea, [role=tab]")]
        .filter((e) => e.offsetParent !== null && getComputedStyle(e).visibility !== "hidden")
        .map((e) => ({ e, r: e.getBoundingClientRect() }))
        .filter(({ r }) => r.width > 0 && (r.width < 44 || r.height < 44))
        .map(({ e, r }) => `${e.tagName.toLowerCase()}#${e.id}.${e.className} ${Math.round(r.width)}×${Math.round(r.height)}`),
    );
    assert.deepEqual(small, [], `controls under 44 px at ${width} px`);
    const overflow = await page.evaluate(() => document.scrollingElement.scrollWidth - innerWidth);
    const past = await page.evaluate(() =>
      [...document.querySelectorAll("body *")]
        .filter((e) => e.offsetParent !== null && e.getBoundingClientRect().right > innerWidth + 0.5)
        .map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className}`)
        .slice(0, 8),
    );
    assert.ok(overflow <= 0, `${overflow} px wider than the screen at ${width} px: ${past.join(", ")}`);
    // What a phone may not do is not offered.
    for (const id of ["settings-details", "clients-details", "phone-details", "queue-add", "queue-hold-all", "agents-forget-gone"]) {
      assert.equal(await page.locator(`#${id}`).isVisible(), false, id);
    }
  }
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: join(artifacts, "screenshots", "phone-page.png") });
  assert.deepEqual(errors, []);
});

test("from another host, without a credential, nothing but the page's files and the pairing exchange answers", async () => {
  // Without the install's secret path (in the QR code's link), nothing at all answers.
  const origin = new URL(phoneUrl).origin;
  for (const path of ["/", "/api/status", "/p/00000000000000000000000000000000/api/status", "/mcp"]) {
    assert.equal(curlFrom(NETS.attacker.ns, path, [], origin).status, 404, path);
  }
  assert.equal(attacker("/").status, 200, "the page's own files (nothing in them is private)");
  for (const path of ["/api/status", "/api/instructions", "/api/events", "/api/reports"]) assert.equal(attacker(path).status, 401, path);
  for (const path of ["/api/config", "/api/token", "/api/backup", "/api/export", "/api/clients", "/api/phone"]) assert.equal(attacker(path).status, 403, path);
  const mcp = attacker("/mcp", ["-X", "POST", "-H", "content-type: application/json", "--data", '{"jsonrpc":"2.0","id":1,"method":"tools/list"}']);
  assert.equal(mcp.status, 403, "no MCP on the phone listener");
  // DNS rebinding: a name that resolves here is still not this listener's address.
  assert.equal(attacker("/", ["-H", "Host: evil.example"]).status, 403);
  // The loopback server is not reachable from another host at all.
  assert.equal(curlFrom(NETS.attacker.ns, "/healthz", [], server.url).status, 0);
  // The one thing a stranger may send is small: a pairing body past 2 KiB is refused unread,
  // whether its length is declared or not.
  const big = JSON.stringify({ code: "A".repeat(3000) });
  assert.equal(attacker("/api/phone/pair", ["-X", "POST", "-H", "content-type: application/json", "--data", big]).status, 413);
  assert.equal(attacker("/api/phone/pair", ["-X", "POST", "-H", "content-type: application/json", "-H", "Transfer-Encoding: chunked", "--data", big]).status, 413);
  // Nor may a stranger make it hold a large request head (hyper's default is ~400 KiB a connection).
  const head = attacker("/", ["-H", `X-Padding: ${"p".repeat(100 * 1024)}`]);
  assert.ok([0, 431].includes(head.status), `a 100 KiB head refused: ${head.status}`);
});

test("a used code is refused; a cookie from another site's page or a foreign origin counts for nothing; every route a phone may not use is refused with a valid device cookie", async () => {
  // A device of the test's own, paired over curl from the attacker's host, to hold a valid cookie.
  const code = (await server.api("POST", "/api/phone/code")).body.link.split("#pair=")[1];
  const paired = attacker("/api/phone/pair", ["-X", "POST", "-H", "content-type: application/json", "--data", JSON.stringify({ code, name: "curl" })]);
  assert.equal(paired.status, 200, paired.body);
  const credential = /set-cookie: local-mcp-device=([^;]+)/i.exec(paired.headers)?.[1];
  assert.ok(credential, paired.headers);
  assert.match(paired.headers, /set-cookie: [^\r\n]*HttpOnly[^\r\n]*Secure[^\r\n]*SameSite=Strict/i);
  const again = attacker("/api/phone/pair", ["-X", "POST", "-H", "content-type: application/json", "--data", JSON.stringify({ code, name: "twice" })]);
  assert.equal(again.status, 403, "a code works once");
  const cookie = ["-H", `Cookie: local-mcp-device=${credential}`];
  const seen = attacker("/api/status", cookie);
  assert.equal(seen.status, 200, "the credential works");
  // What the phone is told names none of this computer's paths, process, port or accounts
  // (the loopback page's report does), in the report and in its stream's first event.
  const mine = (await server.api("GET", "/api/status")).body.server;
  assert.ok(mine.pid > 0 && mine.url && mine.log_dir, `the loopback report has them: ${JSON.stringify(mine)}`);
  const streamed = sh("ip", ["netns", "exec", NETS.attacker.ns, "curl", "-skN", "--max-time", "3", ...cookie, `${phoneUrl}/api/events`], { ok: false }).stdout;
  const hello = /event: ?status\.changed\r?\ndata: ?(.*)/.exec(streamed)?.[1];
  assert.ok(hello, `the stream's status event: ${streamed.slice(0, 300)}`);
  for (const [what, body] of [["report", JSON.parse(seen.body)], ["stream", JSON.parse(hello).data]]) {
    const { pid, url, log_dir } = body.server;
    assert.deepEqual({ pid, url, log_dir }, { pid: 0, url: "", log_dir: undefined }, `the phone's ${what}`);
    assert.ok(!JSON.stringify(body).includes(mine.log_dir), `the phone's ${what} names the log folder`);
    assert.equal(body.server.instance, mine.instance, `the phone's ${what} keeps the instance its page checks`);
  }
  assert.equal(attacker("/api/status", [...cookie, "-H", "Sec-Fetch-Site: cross-site"]).status, 403, "not from another site's page");
  assert.equal(attacker("/api/instructions", [...cookie, "-X", "POST", "-H", "Origin: https://evil.example", "-H", "content-type: application/json", "--data", '{"content":"x"}']).status, 403);
  // Every documented route the gate does not let a phone use, with the valid cookie.
  const doc = (await server.api("GET", "/api/openapi.json")).body;
  const allowed = new Set(["GET /api/status", "GET /api/events", "GET /api/queues", "GET /api/queues/{name}", "GET /api/instructions", "POST /api/instructions", "GET /api/instructions/{id}", "PATCH /api/instructions/{id}", "DELETE /api/instructions/{id}", "POST /api/instructions/{id}/move", "POST /api/instructions/{id}/requeue", "POST /api/instructions/{id}/attachments", "DELETE /api/instructions/{id}/attachments/{attachment_id}", "GET /api/attachments/{attachment_id}", "GET /api/reports", "POST /api/reports/{id}/reply", "GET /api/templates", "GET /api/templates/{name}", "GET /api/templates/{name}/files/{ordinal}", "GET /api/phone/me", "POST /api/phone/pair"]);
  const refused = [];
  let tried = 0;
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const method of Object.keys(ops)) {
      const key = `${method.toUpperCase()} ${path}`;
      if (allowed.has(key)) continue;
      tried++;
      const concrete = path.replace(/\{[^}]+\}/g, "x");
      const r = attacker(concrete, [...cookie, "-X", method.toUpperCase(), "-H", "content-type: application/json", "--data", "{}"]);
      if (r.status !== 403) refused.push(`${key}: ${r.status}`);
    }
  }
  assert.ok(tried > 25, `the documented routes were tried (${tried})`);
  assert.deepEqual(refused, [], "routes a phone reached");
  for (const path of ["/mcp", "/mcp/q/default", "/api/openapi.json", "/api/docs", "/healthz"]) {
    assert.equal(attacker(path, [...cookie, "-X", "POST"]).status, 403, path);
  }
  // Another account of this machine gains nothing new: the listener is the network's, and it has no credential.
  const other = sh("setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "curl", "-sk", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", `${phoneUrl}/api/status`], { ok: false });
  assert.equal(other.stdout, "401", `another account: ${other.stdout} ${other.stderr}`);
});

test("revoked from the computer: the phone's stream closes, its next request is refused, and its cookie replayed is refused", async () => {
  const devices = (await server.api("GET", "/api/phone")).body.devices;
  const phone = devices.find((d) => d.name === "Android phone");
  const credential = (await context.cookies()).find((c) => c.name === "local-mcp-device").value;
  // The phone's live stream, held open from the phone's host as its browser holds it.
  const stream = spawn("ip", ["netns", "exec", NETS.phone.ns, "curl", "-skN", "--max-time", "60", "-H", `Cookie: local-mcp-device=${credential}`, `${phoneUrl}/api/events`]);
  let streamed = "";
  stream.stdout.on("data", (d) => (streamed += d));
  const ended = new Promise((r) => stream.once("exit", () => r(Date.now())));
  await until(() => streamed.length > 0, { what: "the stream open (its first bytes)" });
  const revokedAt = Date.now();
  const revoked = await server.api("DELETE", `/api/phone/devices/${phone.id}`);
  assert.equal(revoked.status, 200);
  const closedAt = await Promise.race([ended, new Promise((r) => setTimeout(() => r(null), 15000))]);
  assert.ok(closedAt, "the revoked phone's live stream closed (within 15 s)");
  assert.ok(closedAt - revokedAt < 15000);
  await until(async () => (await page.locator("#banner").textContent()).includes("unpaired") || (await page.locator("#conn").getAttribute("data-conn")) !== "live", {
    what: "the phone's live stream closed",
  });
  const status = await page.evaluate(async () => (await fetch("api/status")).status);
  assert.equal(status, 401);
  assert.equal(attacker("/api/status", ["-H", `Cookie: local-mcp-device=${credential}`]).status, 401, "the revoked cookie, replayed");
});

test("guessed codes lock the guessing address out — even a right code from it — and nobody else: the phone still pairs", async () => {
  const code = (await server.api("POST", "/api/phone/code")).body.link.split("#pair=")[1];
  const pair = (ns, c) => curlFrom(ns, "/api/phone/pair", ["-X", "POST", "-H", "content-type: application/json", "--data", JSON.stringify({ code: c })]).status;
  // Five wrong in a row from one address lock it (the used code the test before sent counts as one).
  const statuses = [];
  for (let n = 0; n < 5 && statuses.at(-1) !== 429; n++) statuses.push(pair(NETS.attacker.ns, `GUESS${n}GUESSX`));
  assert.equal(statuses.at(-1), 429, `locked within five guesses: ${statuses}`);
  assert.ok(statuses.slice(0, -1).every((s) => s === 403), `each wrong guess before it refused: ${statuses}`);
  assert.equal(pair(NETS.attacker.ns, code), 429, "locked: the right code too, from that address");
  const seen = (await server.api("GET", "/api/phone")).body;
  assert.ok(seen.refused_codes >= 6, JSON.stringify(seen));
  assert.equal(seen.last_refused.address, `${NETS.attacker.net}.2`);
  assert.ok(seen.locked_until, "the panel says until when");
  assert.equal(seen.locked_addresses, 1);
  // The computer's page says who is locked out, and that nobody else is.
  await deskPage.locator("#phone-details").evaluate((d) => {
    d.open = false;
    d.open = true;
  });
  await until(async () => /^\d+ wrong pairing codes tried\. .*1 address is locked out of pairing until .*; no other address is, so your phone can still pair\.$/.test(await deskPage.locator("#phone-refused").textContent()), {
    what: "the panel naming one address locked out, and nobody else",
  });
  // The person's own phone, elsewhere on the network, is not kept out.
  assert.equal((await server.api("POST", "/api/phone/code")).status, 200, "codes are still made");
  assert.equal(pair(NETS.phone.ns, code), 200, "the phone pairs with the live code");
});

test("a stranger holding connections open keeps no paired phone out, and fills no log", async () => {
  const code = (await server.api("POST", "/api/phone/code")).body.link.split("#pair=")[1];
  const paired = curlFrom(NETS.phone.ns, "/api/phone/pair", ["-X", "POST", "-H", "content-type: application/json", "--data", JSON.stringify({ code, name: "held" })]);
  assert.equal(paired.status, 200, paired.body);
  const cookie = ["-H", `Cookie: local-mcp-device=${/set-cookie: local-mcp-device=([^;]+)/i.exec(paired.headers)[1]}`];
  const { hostname, port } = new URL(phoneUrl);
  const logged = server.log.length;
  // 100 connections from the attacker's host that never finish their handshake, held 20 s.
  const hold = spawn("ip", ["netns", "exec", NETS.attacker.ns, "python3", "-c", `import socket,time\ns=[]\nfor _ in range(100):\n  try: s.append(socket.create_connection(("${hostname}", ${port}), timeout=5))\n  except OSError: pass\nprint(len(s), flush=True)\ntime.sleep(20)`]);
  const opened = await new Promise((r) => hold.stdout.once("data", (d) => r(Number(String(d).trim()))));
  assert.equal(opened, 100, "the attacker's connections were accepted (by the kernel: the listener keeps 16 and turns the rest away)");
  const started = Date.now();
  const r = curlFrom(NETS.phone.ns, "/api/status", cookie);
  assert.equal(r.status, 200, `the paired phone got in while they were held (${Date.now() - started} ms)`);
  hold.kill();
  assert.ok(server.log.length - logged < 10, `the log grew by ${server.log.length - logged} lines: ${server.log.slice(logged, logged + 5).join("\n")}`);
});

test("a flood from a whole IPv6 /64 keeps no phone with its stream open out — slow as it is — nor does anyone sharing its address", async () => {
  const HERE6 = `${NETS.phone.net6}:1`;
  const code = (await server.api("POST", "/api/phone/code")).body.link.split("#pair=")[1];
  const paired = curlFrom(NETS.phone.ns, "/api/phone/pair", ["-X", "POST", "-H", "content-type: application/json", "--data", JSON.stringify({ code, name: "six" })]);
  assert.equal(paired.status, 200, paired.body);
  const credential = /set-cookie: local-mcp-device=([^;]+)/i.exec(paired.headers)[1];
  const onSix = await server.api("POST", "/api/phone/start", { address: HERE6 });
  assert.equal(onSix.status, 200, JSON.stringify(onSix.body));
  const url6 = onSix.body.url;
  const { port } = new URL(url6);
  const logged = server.log.length;
  // The phone's page is open: its live stream, from its IPv6 address.
  const stream = spawn("ip", ["netns", "exec", NETS.phone.ns, "curl", "-gskN", "--max-time", "40", "-H", `Cookie: local-mcp-device=${credential}`, `${url6}/api/events`]);
  let streamed = "";
  stream.stdout.on("data", (d) => (streamed += d));
  try {
    await until(() => streamed.length > 0, { what: "the phone's stream open (its first bytes)" });
    // 200 connections a second, each from another address of the attacker's /64 (800 in turn,
    // each under its own rate), never finishing a handshake, held: the listener is full of
    // strangers' young connections most of the time.
    const flood = spawn("ip", ["netns", "exec", NETS.attacker.ns, "python3", "-c", `
import resource, socket, time
resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))
held, t0, n = [], time.time(), 0
while time.time() - t0 < 14:
    s = socket.socket(socket.AF_INET6)
    s.setblocking(False)
    s.bind(("${NETS.attacker.pool}:%x" % (0x100 + n % 800), 0))
    try: s.connect(("${HERE6}", ${port}))
    except BlockingIOError: pass
    held.append(s); n += 1
    if n == 300: print("full", flush=True)
    time.sleep(max(0, t0 + n / 200 - time.time()))
print(n, flush=True)
`]);
    let flooded = "";
    flood.stdout.on("data", (d) => (flooded += d));
    const floodEnded = new Promise((r) => flood.once("exit", r));
    await until(() => flooded.startsWith("full"), { what: "the flood past the listener's 256 connections" });
    // A slow phone: a new connection, its handshake, then 2.5 s before it sends the request.
    const slow = spawnSync("ip", ["netns", "exec", NETS.phone.ns, "python3", "-c", `
import socket, ssl, time
c = ssl.create_default_context(); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE
s = c.wrap_socket(socket.create_connection(("${HERE6}", ${port}), timeout=15))
time.sleep(2.5)
s.sendall(b"GET ${new URL(url6).pathname}/api/status HTTP/1.1\\r\\nHost: [${HERE6}]:${port}\\r\\nCookie: local-mcp-device=${credential}\\r\\nConnection: close\\r\\n\\r\\n")
print(s.recv(64).split(b"\\r\\n")[0].decode())
`], { encoding: "utf8", timeout: 30000 });
    assert.equal(slow.stdout.trim(), "HTTP/1.1 200 OK", `the slow phone's new connection got its answer during the flood: ${slow.stderr}`);
    // Someone sharing the phone's address (behind one router) opens 30 connections a second
    // and holds them, never a handshake: more than an address's rate, and its whole share.
    const sharer = spawn("ip", ["netns", "exec", NETS.phone.ns, "python3", "-c", `
import socket, time
held, t0, n = [], time.time(), 0
while time.time() - t0 < 4:
    try: held.append(socket.create_connection(("${HERE6}", ${port}), timeout=2))
    except OSError: pass
    n += 1
    time.sleep(max(0, t0 + n / 30 - time.time()))
print(n, flush=True)
`]);
    let shared = "";
    sharer.stdout.on("data", (d) => (shared += d));
    const sharerEnded = new Promise((r) => sharer.once("exit", r));
    await new Promise((r) => setTimeout(r, 1500));
    // The phone's new connection still gets its answer (the neighbour's oldest gives way to it).
    const asked = spawnSync("ip", ["netns", "exec", NETS.phone.ns, "curl", "-gsk", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", "-H", `Cookie: local-mcp-device=${credential}`, `${url6}/api/status`], { encoding: "utf8", timeout: 20000 });
    assert.equal(asked.stdout, "200", `the phone got in past what shares its address: ${asked.stderr}`);
    await sharerEnded;
    assert.ok(Number(shared) > 60, `the sharer ran: ${shared}`);
    await floodEnded;
    assert.ok(Number(flooded.split("\n")[1]) > 1500, `the flood ran (200 a second for 14 s): ${flooded}`);
    assert.ok(streamed.length > 0 && stream.exitCode === null, "the phone's stream stayed open");
  } finally {
    stream.kill();
  }
  const lines = server.log.slice(logged).filter((l) => /turned one away|refused/.test(l));
  assert.ok(lines.length <= 24, `the flood's log lines are bounded (${lines.length}): ${lines.slice(0, 5).join("\n")}`);
  const back = await server.api("POST", "/api/phone/start", { address: LAN });
  assert.equal(back.body.url, phoneUrl, "back where it was");
});

test("one paired device holds at most 16 connections: past them its oldest close", async () => {
  const code = (await server.api("POST", "/api/phone/code")).body.link.split("#pair=")[1];
  const paired = curlFrom(NETS.phone.ns, "/api/phone/pair", ["-X", "POST", "-H", "content-type: application/json", "--data", JSON.stringify({ code, name: "greedy" })]);
  assert.equal(paired.status, 200, paired.body);
  const credential = /set-cookie: local-mcp-device=([^;]+)/i.exec(paired.headers)[1];
  const { hostname, port, pathname } = new URL(phoneUrl);
  // 24 connections, each shows the credential once and stays open; then: which are still open?
  const r = spawnSync("ip", ["netns", "exec", NETS.phone.ns, "python3", "-c", `
import socket, ssl, time
c = ssl.create_default_context(); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE
held = []
for _ in range(24):
    s = c.wrap_socket(socket.create_connection(("${hostname}", ${port}), timeout=10))
    s.sendall(b"GET ${pathname}/api/phone/me HTTP/1.1\\r\\nHost: ${hostname}:${port}\\r\\nCookie: local-mcp-device=${credential}\\r\\n\\r\\n")
    s.recv(4096)
    held.append(s)
    time.sleep(0.06)
time.sleep(1)
open_ = 0
for s in held:
    s.settimeout(0.2)
    try:
        open_ += 0 if s.recv(1) == b"" else 1
    except socket.timeout:
        open_ += 1
    except OSError:
        pass
print(open_)
`], { encoding: "utf8", timeout: 60000 });
  assert.equal(r.stdout.trim(), "16", `connections still open: ${r.stdout} ${r.stderr}`);
});

test("starts at once on three ports leave one listener, the last; a start back closes it", async () => {
  const ports = [8444, 8445, 8446];
  const starts = await Promise.all(ports.map((port) => server.api("POST", "/api/phone/start", { address: LAN, port })));
  assert.deepEqual(starts.map((s) => s.status), [200, 200, 200]);
  const on = (await server.api("GET", "/api/phone")).body;
  const running = Number(new URL(on.url).port);
  const answers = (port) => curlFrom(NETS.attacker.ns, "/", [], phoneUrl.replace(":8443", `:${port}`)).status;
  assert.deepEqual(ports.map(answers), ports.map((p) => (p === running ? 200 : 0)), `only ${running} listens`);
  const back = await server.api("POST", "/api/phone/start", { address: LAN, port: 8443 });
  assert.equal(back.body.url, phoneUrl);
  await until(() => ports.every((p) => answers(p) === 0), { what: "the three ports closed" });
});

test("stopping the listener closes it", async () => {
  const off = await server.api("POST", "/api/phone/stop");
  assert.equal(off.body.running, false);
  await until(() => attacker("/").status === 0, { what: "the listener closed" });
});
