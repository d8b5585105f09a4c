#!/usr/bin/env bash
# The Windows end-to-end run (docs/PLATFORMS.md): local-mcp-server.exe under
# Wine, reached from Linux over loopback.
#   1. Same account, no token: the Windows CLI (another Wine process) queues
#      and lists through the server's guard, which finds the CLI's socket in
#      the TCP table, its process's token and its SID — ours. A Linux
#      process is no Windows process (its socket has no owner there): 403.
#   2. With a token: the Linux process is let in with it (200), not without.
#   3. Other accounts allowed, no token (a Linux browser's session cookie
#      never counts for another account): the Linux Python MCP SDK waits in
#      get_user_request; the page, in Chromium, queues an instruction from
#      the composer; the waiting call is woken with it, the agent reports on
#      its next call, and the page shows the instruction delivered.
# Usage: windows-e2e.sh path/to/local-mcp-server.exe
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
exe="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
run="$root/scripts/wine/run.sh"
tmp="$(mktemp -d)"
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT

# The Python SDK: the test suite's venv when `npm test` made it, else ours.
python="$root/tests/.venv/bin/python"
if ! { [ -x "$python" ] && "$python" -c "import mcp" 2>/dev/null; }; then
  venv="${LOCAL_MCP_CACHE:-$HOME/.cache/local-mcp}/platforms-venv"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  python="$venv/bin/python"
  "$python" -c "import mcp" 2>/dev/null ||
    "$python" -m pip install --quiet --disable-pip-version-check "$(grep -E '^mcp==' "$root/tests/python/requirements.txt")"
fi
# playwright-core for the page: the browser tests' own.
[ -d "$root/tests/ui/node_modules/playwright-core" ] || (cd "$root/tests/ui" && npm ci --no-audit --no-fund --silent)

# The rest runs in a private network namespace (scripts/platforms/netns.sh).
if [ -z "${LOCAL_MCP_IN_NETNS:-}" ]; then
  trap - EXIT
  rm -rf "$tmp"
  exec "$root/scripts/platforms/netns.sh" bash "$0" "$@"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Start the server under Wine with the given environment; wait (≤ 90 s) until it answers.
start_server() {
  local name="$1"
  shift
  port="$(free_port)"
  url="http://127.0.0.1:$port"
  mkdir -p "$tmp/$name"
  : >"$tmp/$name/config.toml" # no settings but ours
  env "$@" HTTP_PORT="$port" DB_PATH="$tmp/$name/db.sqlite3" LOCAL_MCP_LOG_DIR=off \
    LOCAL_MCP_CONFIG="$tmp/$name/config.toml" LOCAL_MCP_CONNECTION_FILE="$tmp/$name/connection.json" \
    LOCAL_MCP_TOKEN_FILE="$tmp/$name/token" \
    "$run" "$exe" --no-port-fallback >"$tmp/$name/server.log" 2>&1 &
  server_pid=$!
  local deadline=$((SECONDS + 90))
  until curl -s -o /dev/null "$url/"; do
    if ! kill -0 "$server_pid" 2>/dev/null || [ "$SECONDS" -gt "$deadline" ]; then
      cat "$tmp/$name/server.log" >&2
      echo "the server under Wine did not answer on $url within 90 s" >&2
      exit 1
    fi
    sleep 0.5
  done
  echo "server under Wine: $url ($name)"
}

stop_server() {
  kill "$server_pid" 2>/dev/null || true
  local deadline=$((SECONDS + 20))
  while kill -0 "$server_pid" 2>/dev/null; do
    [ "$SECONDS" -gt "$deadline" ] && { kill -9 "$server_pid" 2>/dev/null || true; break; }
    sleep 0.2
  done
  server_pid=""
}

# The Windows CLI, with the server's own settings (it finds the server by them).
cli() {
  env HTTP_PORT="$port" DB_PATH="$tmp/same/db.sqlite3" LOCAL_MCP_LOG_DIR=off LOCAL_MCP_CONFIG="$tmp/same/config.toml" \
    LOCAL_MCP_CONNECTION_FILE="$tmp/same/connection.json" LOCAL_MCP_TOKEN_FILE="$tmp/same/token" \
    timeout 60 "$run" "$exe" "$@"
}

# 1. Same account, no token.
start_server same
cli add "queued by the Windows CLI" >"$tmp/add.out" 2>&1 || { cat "$tmp/add.out" >&2; echo "the Windows CLI could not queue" >&2; exit 1; }
cli list >"$tmp/list.out" 2>&1 || { cat "$tmp/list.out" >&2; exit 1; }
grep -q "queued by the Windows CLI" "$tmp/list.out" || { cat "$tmp/list.out" >&2; echo "the CLI's list lacks its instruction" >&2; exit 1; }
echo "same account: the Windows CLI queued and listed through the guard"
code="$(curl -s -o "$tmp/linux.out" -w '%{http_code}' "$url/api/instructions")"
[ "$code" = 403 ] || { cat "$tmp/linux.out" >&2; echo "a Linux process (no Windows owner) got $code, not 403" >&2; exit 1; }
echo "a socket with no Windows owner: 403 ($(head -c 160 "$tmp/linux.out"))"
stop_server

# 2. The token lets a Linux process in.
token="$(python3 -c 'import secrets; print(secrets.token_hex(16))')"
start_server token API_TOKEN="$token"
for auth in "" "Bearer $token"; do
  code="$(curl -s -o /dev/null -w '%{http_code}' ${auth:+-H "Authorization: $auth"} "$url/api/instructions")"
  want=200
  [ -z "$auth" ] && want=403
  [ "$code" = "$want" ] || { echo "a Linux process ${auth:+with the token }got $code, not $want" >&2; exit 1; }
done
echo "the token lets a socket with no Windows owner in (200; 403 without)"
stop_server

# 3. The loop and the page, from Linux.
start_server open SAME_USER_ONLY=false
ready="$tmp/agent-waiting"
timeout 180 "$python" "$root/scripts/platforms/e2e_loop.py" "$url" "$ready" >"$tmp/loop.out" 2>&1 &
loop_pid=$!
page_rc=0
timeout 180 node "$root/scripts/platforms/e2e_page.mjs" "$url" "$ready" \
  "${LOCAL_MCP_CACHE:-$HOME/.cache/local-mcp}/logs/wine-e2e-page.png" || page_rc=$?
loop_rc=0
wait "$loop_pid" || loop_rc=$?
cat "$tmp/loop.out"
stop_server
if [ "$page_rc" != 0 ] || [ "$loop_rc" != 0 ]; then
  cat "$tmp/open/server.log" >&2
  echo "end to end under Wine failed (page exit $page_rc, Python SDK exit $loop_rc)" >&2
  exit 1
fi
echo "end to end under Wine: passed"
