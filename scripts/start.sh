#!/usr/bin/env bash
# Build and run local-mcp: the tray app where there is a display, the headless
# server (same options, same URL) where there is none.
# Options are passed on: `npm start -- --port 9000`, `npm start -- --help`.
set -euo pipefail
cd "$(dirname "$0")/.."
has_display() {
  case "$(uname -s)" in
    Linux) [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ] ;;
    *) true ;;
  esac
}
if has_display; then
  bash scripts/setup-system.sh build
  exec cargo run --release --locked -p local-mcp --bin local-mcp -- "$@"
fi
echo "No display here: starting the headless server (local-mcp-server); its ready line below gives the page's address." >&2
exec cargo run --release --locked -p local-mcp-engine --bin local-mcp-server -- "$@"
