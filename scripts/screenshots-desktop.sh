#!/usr/bin/env bash
# Regenerate the README's desktop screenshots from the built app, as real
# desktop programs draw them, under Xvfb:
#   docs/screenshots/notification-question.png  an agent's question with its
#       buttons ("Reply…" and two answers), drawn by Debian's xfce4-notifyd
#   docs/screenshots/tray-menu.png  the tray menu opened from the icon in
#       Debian's trayer (no StatusNotifierWatcher on the bus, so
#       libayatana-appindicator falls back to an XEmbed icon; the menu is the
#       app's own GTK menu), with "Needs you" opened when the menu has it
#   docs/screenshots/quick-add-answer.png  quick add opened by that menu's
#       Reply…: the question and every answer its agent suggested
#
#   bash scripts/screenshots-desktop.sh [OUT_DIR]    (default docs/screenshots)
#
# Needs a built target/debug/local-mcp (CARGO_TARGET_DIR is honoured); builds
# nothing. Installs the Debian packages it lacks. Everything runs in a
# temporary folder (HOME, XDG folders, the app's database), on a private X
# server and a private D-Bus session that can start only xfconfd (for
# xfce4-notifyd's settings); scripts/screenshots-desktop.mjs drives the app.
# Every wait is bounded and names what it waited for.
# shellcheck disable=SC2317 # ended, leftovers and cleanup run from traps
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
me="screenshots-desktop"

if [ "${1:-}" = "--inner" ]; then
  # On the private X server and session bus (see the end of this file).
  work="$2" out="$3"
  pids=()
  ended() {
    # xfconfd too (the bus started it; it would complain as the bus goes).
    local xfconfd
    xfconfd="$(dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.GetConnectionUnixProcessID string:org.xfce.Xfconf 2>/dev/null | awk '/uint32/ {print $2}')"
    for p in "${pids[@]}" $xfconfd; do kill "$p" 2>/dev/null || true; done
  }
  trap ended EXIT
  # A compositor: xfce4-notifyd's bubble has rounded corners on a
  # transparent window, black without one (the desktop is xcompmgr's grey).
  xcompmgr -n >"$work/xcompmgr.log" 2>&1 &
  pids+=("$!")
  trayer --edge bottom --align right --widthtype request --height 32 --SetDockType true --transparent false >"$work/trayer.log" 2>&1 &
  pids+=("$!")
  "$work/xfce4-notifyd" >"$work/notifyd.log" 2>&1 &
  pids+=("$!")
  owner() {
    dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
      org.freedesktop.DBus.NameHasOwner "string:$1" 2>/dev/null | grep -q "boolean true"
  }
  for _ in $(seq 100); do
    owner org.freedesktop.Notifications && xdotool search --onlyvisible --class trayer >/dev/null 2>&1 && break
    sleep 0.1
  done
  owner org.freedesktop.Notifications || { echo "$me: xfce4-notifyd did not take org.freedesktop.Notifications within 10 s: $(cat "$work/notifyd.log")" >&2; exit 1; }
  xdotool search --onlyvisible --class trayer >/dev/null || { echo "$me: trayer's panel did not appear within 10 s: $(cat "$work/trayer.log")" >&2; exit 1; }
  node "$root/scripts/screenshots-desktop.mjs" "$out" "$work"
  exit
fi

out="$(mkdir -p "${1:-$root/docs/screenshots}" && cd "${1:-$root/docs/screenshots}" && pwd)"
app="${CARGO_TARGET_DIR:-$root/target}/debug/local-mcp"
if [ ! -x "$app" ]; then
  echo "$me: no built app at $app; build it first: cargo build --locked -p local-mcp --bin local-mcp (see README, Development)" >&2
  exit 1
fi
command -v node >/dev/null || { echo "$me: node is needed (the same one as npm test)" >&2; exit 1; }

pkgs=(xvfb xauth dbus xdotool imagemagick xcompmgr trayer xfce4-notifyd)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "$me: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# The helper reads the tray menu over D-Bus with the desktop tests' dbus-next.
[ -d "$root/tests/desktop/node_modules/dbus-next" ] || npm ci --prefix "$root/tests/desktop" --no-audit --no-fund --silent

work="$(mktemp -d "${TMPDIR:-/tmp}/local-mcp-screenshots.XXXXXX")"
# Whatever this run started and is still there (xfconfd, started by the bus,
# outlives it): the processes whose environment carries this run's folder.
leftovers() {
  local p
  for p in /proc/[0-9]*; do
    tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qxF "LOCAL_MCP_SCREENSHOTS=$work" && echo "${p#/proc/}"
  done
  return 0
}
cleanup() {
  local pids
  pids="$(leftovers)"
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill $pids 2>/dev/null || true
    sleep 1
    pids="$(leftovers)"
    # shellcheck disable=SC2086
    [ -z "$pids" ] || kill -KILL $pids 2>/dev/null || true
  fi
  rm -rf --one-file-system "$work"
}
trap cleanup EXIT

# A session bus that can start xfconfd and nothing else (no portals, no
# accessibility bus): what is on it is what this script started.
mkdir -p "$work/services" "$work/home/.config/xfce4/xfconf/xfce-perchannel-xml" "$work/run"
chmod 700 "$work/run"
cp /usr/share/dbus-1/services/org.xfce.Xfconf.service "$work/services/"
notifyd="$(sed -n 's/^Exec=//p' /usr/share/dbus-1/services/org.xfce.xfce4-notifyd.Notifications.service)"
ln -s "$notifyd" "$work/xfce4-notifyd"
cat >"$work/bus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=$work</listen>
  <auth>EXTERNAL</auth>
  <servicedir>$work/services</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
EOF
# xfce4-notifyd: a notification stays a minute (it is shot within seconds), drawn opaque.
cat >"$work/home/.config/xfce4/xfconf/xfce-perchannel-xml/xfce4-notifyd.xml" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<channel name="xfce4-notifyd" version="1.0">
  <property name="expire-timeout" type="int" value="60"/>
  <property name="initial-opacity" type="double" value="1.000000"/>
  <property name="do-fadeout" type="bool" value="false"/>
  <property name="do-slideout" type="bool" value="false"/>
  <property name="notification-log" type="bool" value="false"/>
</channel>
EOF
# The icon the app's notifications name ("local-mcp"), in the sizes its deb installs.
for size in 32x32 128x128; do
  mkdir -p "$work/home/.local/share/icons/hicolor/$size/apps"
  cp "$root/icons/$size.png" "$work/home/.local/share/icons/hicolor/$size/apps/local-mcp.png"
done

# The app runs from a link of its own: the desktop tests end every process
# running the built binary's path (and wait for them to be gone), and they may
# run meanwhile. A hard link (a copy across file systems) also keeps this
# run's binary if a build replaces it.
mkdir -p "$work/bin"
ln "$app" "$work/bin/local-mcp" 2>/dev/null || cp "$app" "$work/bin/local-mcp"

started=$(date +%s)
# The whole run has four minutes (it takes well under one): past that, timeout
# ends it and the cleanup above ends what it left.
status=0
env -u SESSION_MANAGER -u DBUS_SESSION_BUS_ADDRESS -u WAYLAND_DISPLAY \
  LOCAL_MCP_SCREENSHOTS="$work" LOCAL_MCP_SCREENSHOTS_APP="$work/bin/local-mcp" HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" \
  XDG_DATA_HOME="$work/home/.local/share" XDG_CACHE_HOME="$work/home/.cache" \
  XDG_STATE_HOME="$work/home/.local/state" XDG_RUNTIME_DIR="$work/run" NO_AT_BRIDGE=1 \
  GTK_THEME=Adwaita LANG=C.UTF-8 \
  timeout 240 xvfb-run -a -s "-screen 0 1280x900x24" \
  dbus-run-session --config-file="$work/bus.conf" -- bash "$0" --inner "$work" "$out" || status=$?
if [ "$status" = 124 ]; then
  echo "$me: gave up after 240 s (xvfb-run, D-Bus, the daemons or the app did not finish)" >&2
fi
[ "$status" = 0 ] && echo "$me: done in $(($(date +%s) - started)) s: $out/notification-question.png, $out/tray-menu.png, $out/quick-add-answer.png"
exit "$status"
