#!/usr/bin/env bash
# Build and run local-mcp. Until the desktop tray app lands this is the
# headless server; it serves http://127.0.0.1:8000/ (MCP at /mcp).
# All flags are passed on: `npm start -- --port 9000`, `npm start -- --help`.
set -euo pipefail
cd "$(dirname "$0")/.."
exec cargo run --release --locked -p local-mcp-engine --bin local-mcp-server -- "$@"
