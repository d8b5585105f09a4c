#!/usr/bin/env bash
# Runs a Windows program under Wine: Cargo's target runner for
# x86_64-pc-windows-gnu (CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER), and how
# scripts/check-platforms.sh starts local-mcp-server.exe. The Wine prefix is
# ours, kept between runs ($HOME/.cache/local-mcp/wine, made on first use in
# ~15 s), with the ProcessPrng stand-in Wine 8 lacks in its system32
# (bcryptprimitives.c; test-only, never shipped). Wine's own chatter is off.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
export WINEPREFIX="${WINEPREFIX:-$HOME/.cache/local-mcp/wine}"
export WINEDEBUG="${WINEDEBUG:--all}"
# No prompts to install Mono or Gecko: nothing here needs them.
export WINEDLLOVERRIDES="${WINEDLLOVERRIDES:-mscoree,mshtml=}"
shim="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
if [ ! -f "$shim" ]; then
  mkdir -p "$WINEPREFIX"
  (
    flock 9
    if [ ! -f "$shim" ]; then
      wine wineboot --init >/dev/null 2>&1 || true
      wineserver -w
      [ -d "$(dirname "$shim")" ] || { echo "wine: the prefix $WINEPREFIX was not created" >&2; exit 1; }
      x86_64-w64-mingw32-gcc -shared -O2 -o "$shim.tmp" "$here/bcryptprimitives.c" -ladvapi32
      mv "$shim.tmp" "$shim"
    fi
  ) 9>"$WINEPREFIX.lock"
fi
exec wine "$@"
