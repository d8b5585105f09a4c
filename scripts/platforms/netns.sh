#!/usr/bin/env bash
# Runs a command in a private network namespace holding only loopback, where
# closed connections do not linger (at most 64 in TIME_WAIT), when this runs
# as root (as CI does); otherwise runs it as it is, and says so.
#
# Why: under Wine, each lookup of a socket's owning process (GetExtendedTcpTable,
# which the server's guard makes for every new connection) walks every socket
# of the machine and, for each, every descriptor of every Wine process —
# thousands of lingering test connections made each lookup take a second.
# It also keeps the tests' sockets and the machine's apart.
#
# Wine programs' sockets are made by wineserver: one left running outside
# would serve the programs inside, so ours is stopped first (our prefix only).
set -euo pipefail
export WINEPREFIX="${WINEPREFIX:-${LOCAL_MCP_CACHE:-$HOME/.cache/local-mcp}/wine}"
export LOCAL_MCP_IN_NETNS=1
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then
  wineserver -k 2>/dev/null || true
  # wineserver ends with the command, so none is left serving from inside.
  exec unshare -n bash -c 'ip link set lo up && sysctl -qw net.ipv4.tcp_max_tw_buckets=64 || exit 1
    rc=0; "$@" || rc=$?; wineserver -k 2>/dev/null; exit "$rc"' bash "$@"
fi
echo "netns.sh: not root, so in this machine's network namespace (slower under Wine when many sockets linger)" >&2
exec "$@"
