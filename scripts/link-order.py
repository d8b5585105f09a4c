#!/usr/bin/env python3
"""Write the order files that lay out the release binaries' hot code first.

    python3 scripts/link-order.py server    # engine/build/local-mcp-server.order
    python3 scripts/link-order.py desktop   # src-tauri/local-mcp.order (needs Xvfb, D-Bus)

Builds the release binary, runs it under valgrind's callgrind through
start-up and the requests a person's page and an agent make every day
(the desktop app started hidden, as at login), stops it, and writes the
names of the binary's functions that ran, sorted, one per line. The build
then asks lld to put them first (`engine/build/link_order.rs`). Run it again
after large changes: the bench's idle-RSS row says when the file has gone
stale (its names are skipped, never an error).
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/local-mcp/target"))
KINDS = {
    "server": ("local-mcp-engine", "local-mcp-server", "engine/build/local-mcp-server.order", []),
    "desktop": ("local-mcp", "local-mcp", "src-tauri/local-mcp.order", ["--hidden"]),
}
# Callgrind runs code ~50x slower: start-up takes seconds.
START_WAIT_S = 180
# Loopback only: no proxy, whatever the environment says.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(base, method, path, body=None, timeout=60):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"accept": "application/json, text/event-stream"}
    if data:
        headers["content-type"] = "application/json"
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with DIRECT.open(req, timeout=timeout) as resp:
            return resp.status, resp.read(1 << 20)
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:
        # The event stream never ends: its time-out ends the read.
        return None, b""


def workload(base):
    """What a day brings: the page and its assets, adds, an agent's MCP calls, the event stream."""
    mcp = "/mcp"
    for round_ in range(2):
        status, page = request(base, "GET", "/")
        assert status == 200, f"the page answered {status}"
        for asset in sorted(set(re.findall(rb'(?:src|href)="(/[^"?#]+)"', page))):
            request(base, "GET", asset.decode())
        for path in ("/api/status", "/api/config", "/api/agents", "/api/instructions?status=pending&queue=default"):
            request(base, "GET", path)
        for k in range(3):
            status, _ = request(base, "POST", "/api/instructions", {"content": f"step {round_}.{k}: run the tests", "queue": "default"})
            assert status == 201, f"an add answered {status}"
        request(base, "POST", mcp, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "link-order", "version": "1"}}})
        request(base, "POST", mcp, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
        for _ in range(3):
            status, _ = request(base, "POST", mcp, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
                "name": "get_user_request", "arguments": {"agent_id": "link-order"}}})
            assert status == 200, f"a get_user_request call answered {status}"
        request(base, "GET", "/api/instructions?status=consumed&queue=default&limit=20")
        request(base, "GET", "/api/events", timeout=5)


def symbols_run(callgrind_out, binary):
    """The binary's functions that callgrind saw run (or called)."""
    names, obj, cobj = set(), None, None

    def same(path):
        return path is not None and os.path.realpath(path) == binary

    with open(callgrind_out, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith("ob="):
                obj, cobj = line[3:].strip(), None
            elif line.startswith("fn=") and same(obj):
                names.add(line[3:].strip())
            elif line.startswith("cob="):
                cobj = line[4:].strip()
            elif line.startswith("cfn="):
                if same(cobj or obj):
                    names.add(line[4:].strip())
                cobj = None
    # Callgrind marks recursion depth with 'N; the linker wants the bare name.
    # Code without a symbol shows as an address or "(below main)": no name to order.
    bare = {re.sub(r"'\d+$", "", n) for n in names}
    return sorted(n for n in bare if re.fullmatch(r"[A-Za-z_][\w.$]*", n))


def under_valgrind(session):
    """The processes of `session` that valgrind runs (not the wrappers whose command lines name it)."""
    found = subprocess.run(["pgrep", "-s", str(session)], capture_output=True, text=True).stdout.split()
    pids = []
    for pid in map(int, found):
        try:
            if "callgrind" in os.path.basename(os.readlink(f"/proc/{pid}/exe")):
                pids.append(pid)
        except OSError:
            pass  # gone meanwhile, or not ours to read
    return pids


def stop(app, bin_name, home):
    """SIGTERM to the app under valgrind, then wait for it: callgrind writes its file as the app exits."""
    if app.poll() is not None:
        return
    pids = under_valgrind(app.pid) or [app.pid]
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 120

    def gone(pid):
        # Our own child stays a zombie (its /proc entry too) until it is reaped.
        return app.poll() is not None if pid == app.pid else not os.path.exists(f"/proc/{pid}")

    while not all(gone(pid) for pid in pids):
        if time.monotonic() > deadline:
            os.killpg(app.pid, signal.SIGKILL)
            sys.exit(f"{bin_name} did not leave in 120 s on SIGTERM; see {home}/valgrind.log")
        time.sleep(0.2)
    # The session's wrappers and what they started (Xvfb, the bus) go with it.
    try:
        os.killpg(app.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        app.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(app.pid, signal.SIGKILL)
        app.wait()


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in KINDS:
        sys.exit(__doc__)
    package, bin_name, order_file, args = KINDS[sys.argv[1]]
    for tool in ["valgrind"] + (["xvfb-run", "dbus-run-session"] if sys.argv[1] == "desktop" else []):
        if not shutil.which(tool):
            sys.exit(f"missing {tool} (apt-get install valgrind xvfb dbus)")
    subprocess.run(["cargo", "build", "--locked", "--release", "-p", package, "--bin", bin_name], cwd=ROOT, check=True,
                   env=dict(os.environ, CARGO_TARGET_DIR=TARGET))
    binary = os.path.realpath(os.path.join(TARGET, "release", bin_name))
    home = tempfile.mkdtemp(prefix="local-mcp-link-order-")
    port = free_port()
    # Settings a person may have exported would change what runs (a token, a host, a proxy).
    inherited = {k: v for k, v in os.environ.items()
                 if k not in ("API_TOKEN", "HOST", "LOCAL_MCP_CONFIG") and "proxy" not in k.lower()}
    env = dict(inherited, DB_PATH=f"{home}/queue.sqlite3", HTTP_PORT=str(port), LOG_LEVEL="warn",
               LOCAL_MCP_CONNECTION_FILE=f"{home}/connection.json", LOCAL_MCP_TOKEN_FILE=f"{home}/token",
               XDG_CONFIG_HOME=f"{home}/config", XDG_DATA_HOME=f"{home}/data", XDG_STATE_HOME=f"{home}/state")
    out = f"{home}/callgrind.out"
    cmd = ["valgrind", "--tool=callgrind", "--demangle=no", "--compress-strings=no", "--dump-line=no",
           f"--callgrind-out-file={out}", binary] + args
    if sys.argv[1] == "desktop":
        cmd = ["xvfb-run", "-a", "-s", "-screen 0 1280x900x24", "dbus-run-session", "--"] + cmd
    log = open(f"{home}/valgrind.log", "w")
    app = subprocess.Popen(cmd, env=env, stdout=log, stderr=log, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        started = time.monotonic()
        while request(base, "GET", "/healthz", timeout=5)[0] != 200:
            if app.poll() is not None or time.monotonic() - started > START_WAIT_S:
                sys.exit(f"{bin_name} under callgrind did not answer /healthz in {START_WAIT_S} s; see {home}/valgrind.log")
            time.sleep(0.5)
        workload(base)
        time.sleep(3)  # the periodic work too
    finally:
        stop(app, bin_name, home)
    names = symbols_run(out, binary)
    if len(names) < 1000:
        sys.exit(f"only {len(names)} functions seen: is {binary} the binary that ran? see {home}/valgrind.log")
    with open(os.path.join(ROOT, order_file), "w") as f:
        f.write("\n".join(names) + "\n")
    shutil.rmtree(home, ignore_errors=True)
    print(f"{order_file}: {len(names)} functions")


if __name__ == "__main__":
    main()
