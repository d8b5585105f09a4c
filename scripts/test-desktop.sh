#!/usr/bin/env bash
# End-to-end test of the real tray app: a private X server (Xvfb) and a private
# D-Bus session, WebDriver through tauri-driver + WebKitWebDriver.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in xvfb-run dbus-run-session dbus-monitor WebKitWebDriver tauri-driver xclip; do
  command -v "$tool" >/dev/null || { echo "missing $tool: see README (Development)" >&2; exit 1; }
done
# Each test has three minutes: one that hangs fails with its name instead of
# holding the suite to its ceiling (its waits name what they waited for).
exec xvfb-run -a -s "-screen 0 1280x900x24" dbus-run-session -- node --test --test-concurrency=1 --test-timeout=180000 tests/desktop/
