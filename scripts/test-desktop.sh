#!/usr/bin/env bash
# End-to-end test of the real tray app: a private X server (Xvfb) and a private
# D-Bus session, WebDriver through tauri-driver + WebKitWebDriver.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in xvfb-run dbus-run-session dbus-monitor WebKitWebDriver tauri-driver xclip notify-send; do
  command -v "$tool" >/dev/null || { echo "missing $tool: see README (Development)" >&2; exit 1; }
done
# The tests' own notification server and panel (tests/desktop/notifyd.mjs, panel.mjs) speak D-Bus through dbus-next.
npm ci --prefix tests/desktop --no-audit --no-fund --silent
# Each test, and each file as a whole, has five minutes (a file takes under
# one on a quiet machine): one that hangs fails with its name instead of
# holding the suite to its ceiling (its own waits, 20 to 60 s, name what they
# waited for). --test-force-exit: once every file has reported, the runner
# ends even if a process a test left behind still holds a file's output (it
# would otherwise wait for that process for ever).
exec xvfb-run -a -s "-screen 0 1280x900x24" dbus-run-session -- node --test --test-force-exit --test-concurrency=1 --test-timeout=300000 tests/desktop/
