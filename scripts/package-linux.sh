#!/usr/bin/env bash
# Linux packages: the deb and the rpm, from Tauri's bundler (both work
# offline; the AppImage does not — its tools come from GitHub — so it is the
# release workflow's, docs/PLATFORMS.md). Each holds the desktop app and the
# headless local-mcp-server in /usr/bin. Listings are written beside them.
#
#   --debug   bundle debug builds (quick; for checking the packaging itself)
#
# Cargo's target folder is $CARGO_TARGET_DIR when set (as .ci/run sets it),
# else ./target; the packages land in its release/bundle (debug/bundle).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
profile=release
flag=()
for arg in "$@"; do
  case "$arg" in
    --debug) profile=debug flag=(--debug) ;;
    *) echo "usage: $0 [--debug]" >&2; exit 2 ;;
  esac
done
target_dir="${CARGO_TARGET_DIR:-$root/target}"
server="$target_dir/$profile/local-mcp-server"

bash scripts/setup-system.sh build
[ -x node_modules/.bin/tauri ] || npm ci --no-audit --no-fund --silent
if [ "$profile" = release ]; then
  cargo build --release --locked -p local-mcp-engine --bin local-mcp-server
else
  cargo build --locked -p local-mcp-engine --bin local-mcp-server
fi
# tauri.conf.json names the server at ./target/release; point both packages
# at the one just built, wherever Cargo's target folder is.
patch="$(mktemp --suffix=.json)"
trap 'rm -f "$patch"' EXIT
cat >"$patch" <<EOF
{ "bundle": { "linux": {
  "deb": { "files": { "/usr/bin/local-mcp-server": "$server" } },
  "rpm": { "files": { "/usr/bin/local-mcp-server": "$server" } }
} } }
EOF
node_modules/.bin/tauri build "${flag[@]}" --bundles deb,rpm --config "$patch" -- -p local-mcp

bundle="$target_dir/$profile/bundle"
for deb in "$bundle"/deb/*.deb; do
  dpkg-deb -c "$deb" | awk '{print $6}' >"$deb.txt"
  echo "$deb ($(du -h "$deb" | cut -f1))"
  cat "$deb.txt"
done
for rpm in "$bundle"/rpm/*.rpm; do
  rpm -qlp "$rpm" 2>/dev/null >"$rpm.txt"
  echo "$rpm ($(du -h "$rpm" | cut -f1))"
  cat "$rpm.txt"
done
