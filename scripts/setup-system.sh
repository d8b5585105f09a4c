#!/usr/bin/env bash
# Install the system packages local-mcp needs on Debian/Ubuntu, only those
# missing. `build`: what compiling the desktop app needs. `test`: also the
# browser and desktop test tools. `platforms`: what scripts/check-platforms.sh
# needs to build for Windows and check for macOS from here (Debian's second
# Rust toolchain and its standard library's sources, mingw-w64, Wine, NSIS,
# rpm for reading packages, ShellCheck for the workflows). Uses sudo when
# not root; does nothing on other systems (see README for macOS/Windows).
set -euo pipefail
what="${1:-build}"

build_pkgs=(libwebkit2gtk-4.1-dev libayatana-appindicator3-dev librsvg2-dev libxdo-dev libssl-dev build-essential pkg-config)
test_pkgs=(chromium xvfb xauth webkit2gtk-driver dbus curl util-linux iproute2 procps openssl python3 xclip libnotify-bin)
platform_pkgs=(rustc-web cargo-web rust-web-src gcc-mingw-w64-x86-64 wine64 wine nsis rpm shellcheck curl python3)

command -v apt-get >/dev/null 2>&1 || exit 0
pkgs=("${build_pkgs[@]}")
[ "$what" = "test" ] && pkgs+=("${test_pkgs[@]}")
[ "$what" = "platforms" ] && pkgs=("${platform_pkgs[@]}")

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "installing system packages: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  # With recommends: xvfb-run needs xauth, which xvfb only recommends; install what the tests were run with.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ "$what" = "test" ] && ! command -v tauri-driver >/dev/null 2>&1; then
  echo "installing tauri-driver (WebDriver for the desktop app)"
  cargo install tauri-driver --locked --version ^2 --quiet
fi
