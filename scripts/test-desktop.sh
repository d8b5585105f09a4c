#!/usr/bin/env bash
# End-to-end test of the real tray app: a private X server (Xvfb) and a private
# D-Bus session, WebDriver through tauri-driver + WebKitWebDriver. Arguments:
# test files to run instead of all of tests/desktop/.
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
# The private session bus may start the system's services on demand — except a
# notification server: the tests run their own (notifyd.mjs), and one the bus
# started first (xfce4-notifyd, which scripts/screenshots-desktop.sh installs,
# is activatable) would own org.freedesktop.Notifications before it.
bus="$(mktemp -d)"
trap 'rm -rf "$bus"' EXIT
mkdir "$bus/services"
for f in /usr/share/dbus-1/services/*.service; do
  [ -e "$f" ] || continue
  grep -q '^Name=org.freedesktop.Notifications$' "$f" || ln -s "$f" "$bus/services/"
done
sed "s|<standard_session_servicedirs */>|<servicedir>$bus/services</servicedir>|" /usr/share/dbus-1/session.conf >"$bus/session.conf"
grep -q "<servicedir>$bus/services</servicedir>" "$bus/session.conf" || { echo "could not make the tests' session bus configuration" >&2; exit 1; }
xvfb-run -a -s "-screen 0 1280x900x24" dbus-run-session --config-file="$bus/session.conf" -- node --test --test-force-exit --test-concurrency=1 --test-timeout=300000 "${@:-tests/desktop/}"
