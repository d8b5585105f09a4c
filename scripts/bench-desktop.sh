#!/usr/bin/env bash
# The desktop app's footprint (tests/desktop/footprint.mjs) on a release
# build, under a private X server and D-Bus as the desktop tests run:
#   bash scripts/bench-desktop.sh [LABEL=BINARY ...]
# With no binaries, builds and measures this checkout's release app. Several
# LABEL=BINARY pairs are measured one after the other, side by side in one
# table (e.g. before=/tmp/old/local-mcp after=target/release/local-mcp).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/local-mcp/target}"
if [ "$#" = 0 ]; then
  cargo build --release --locked -p local-mcp --bin local-mcp
  set -- "this build=$CARGO_TARGET_DIR/release/local-mcp"
fi
exec xvfb-run -a -s "-screen 0 1280x900x24" dbus-run-session -- node tests/desktop/footprint.mjs "$@"
