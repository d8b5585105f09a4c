#!/usr/bin/env bash
# End-to-end test of the real tray app: a private X server (Xvfb) and a private
# D-Bus session, WebDriver through tauri-driver + WebKitWebDriver.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in xvfb-run dbus-run-session dbus-monitor WebKitWebDriver tauri-driver xclip; do
  command -v "$tool" >/dev/null || { echo "missing $tool: see README (Development)" >&2; exit 1; }
done
exec xvfb-run -a -s "-screen 0 1280x900x24" dbus-run-session -- node --test --test-concurrency=1 tests/desktop/
