"""The command line against a running server, found through its connection-info
file as a new user's shell would (no flags): status, add, list, hold, release,
stop, config, completions."""

import json
import time
import os
import stat
import subprocess
import tomllib

import pytest

from conftest import server_binary


def cli(server, *args, stdin=None, env_extra=None):
    env = {"PATH": "/usr/bin:/bin", "LOCAL_MCP_CONNECTION_FILE": str(server.connection_file)}
    env.update(env_extra or {})
    return subprocess.run([server_binary(), *args], input=stdin, capture_output=True, text=True, env=env, timeout=30)


def test_connection_info_is_private_and_names_the_running_server(server):
    info = json.loads(server.connection_file.read_text())
    assert info["url"] == server.url and info["mcp_url"] == server.mcp_url
    assert info["tools"] == ["get_user_request"] and info["pid"] == server.proc.pid
    assert stat.S_IMODE(os.stat(server.connection_file).st_mode) == 0o600
    server.stop()
    assert not server.connection_file.exists(), "removed on a clean exit"


def test_status_add_list(server):
    r = cli(server, "status")
    assert r.returncode == 0, r.stderr
    assert server.url in r.stdout and "0 pending" in r.stdout
    assert "log files: " in r.stdout, r.stdout

    assert cli(server, "add", "Fix", "the", "flaky", "test").returncode == 0
    r = cli(server, "add", "-", stdin="Second line\nwith detail\n")
    assert r.returncode == 0 and r.stdout.startswith("queued ")
    assert [i["content"] for i in server.pending()] == ["Fix the flaky test", "Second line\nwith detail"]

    r = cli(server, "list")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    # Grouped by queue, numbered within it.
    assert lines[0].startswith("default — 2 pending"), r.stdout
    assert "1. Fix the flaky test" in lines[1] and "2. Second line …" in lines[2], r.stdout
    assert len(json.loads(cli(server, "list", "--json").stdout)["items"]) == 2

    blank = cli(server, "add", "-", stdin="   \n")
    assert blank.returncode == 1 and "empty" in blank.stderr
    assert len(server.pending()) == 2, "nothing queued"


def test_add_with_attachments(server, tmp_path):
    from images import big_png

    shot = tmp_path / "shot.png"
    shot.write_bytes(big_png(800, 600))
    log = tmp_path / "build.log"
    log.write_text("error[E0308]: mismatched types\n")
    r = cli(server, "add", "--attach", str(shot), "--attach", str(log), "Why", "does", "this", "fail?")
    assert r.returncode == 0, r.stderr
    assert "with 2 attachments" in r.stdout
    # Files alone are an instruction too.
    assert cli(server, "add", "--attach", str(shot)).returncode == 0
    first, second = server.pending()
    assert first["content"] == "Why does this fail?"
    assert [(a["name"], a["kind"]) for a in first["attachments"]] == [("shot.png", "image"), ("build.log", "text")]
    assert (second["content"], len(second["attachments"])) == ("", 1)
    # A file that is not accepted: refused whole, with the reason.
    bad = tmp_path / "archive.zip"
    bad.write_bytes(b"PK\x03\x04\x00\xff\xfe\x00")
    r = cli(server, "add", "--attach", str(bad), "unzip this")
    assert r.returncode == 1 and "accepted" in r.stderr
    missing = cli(server, "add", "--attach", str(tmp_path / "nope.png"), "x")
    assert missing.returncode == 1 and "nope.png" in missing.stderr
    assert len(server.pending()) == 2


def test_queues_targets_hold_and_stop(server):
    r = cli(server, "add", "--queue", "Repo-A", "--to", "claude", "Rebase", "on", "main")
    assert r.returncode == 0 and "in repo-a for claude" in r.stdout, r.stdout + r.stderr
    assert cli(server, "add", "elsewhere").returncode == 0
    listed = cli(server, "list", "--queue", "repo-a")
    assert listed.returncode == 0 and "1. Rebase on main [→ claude]" in listed.stdout and "elsewhere" not in listed.stdout
    everything = cli(server, "list").stdout
    assert "repo-a — 1 pending\n  1. Rebase on main [→ claude]" in everything and "elsewhere" in everything, everything
    bad = cli(server, "list", "--queue", "no/slashes")
    assert bad.returncode == 1 and "not valid" in bad.stderr

    r = cli(server, "hold", "repo-a")
    assert r.returncode == 0 and "held: repo-a" in r.stdout
    assert "queue repo-a was already held" in cli(server, "hold", "repo-a").stdout
    status = cli(server, "status", "--queue", "repo-a")
    assert status.returncode == 0 and "queue repo-a: 1 pending, 0 delivered, HELD" in status.stdout
    assert "/mcp/q/repo-a" in status.stdout and "queue default" not in status.stdout
    assert "released: repo-a" in cli(server, "release").stdout
    assert cli(server, "hold", "nope").returncode == 1

    # Stop needs an agent that has called there.
    missing = cli(server, "stop", "claude", "--queue", "repo-a")
    assert missing.returncode == 1 and "no agent claude" in missing.stderr
    if server.mode == "stateless":  # `consume` is one raw call, which needs no session
        got = consume(server, "claude", "repo-a")
        assert got["instruction"]["content"] == "Rebase on main"
        r = cli(server, "stop", "claude", "--queue", "repo-a")
        assert r.returncode == 0 and "asked claude to stop" in r.stdout
        assert consume(server, "claude", "repo-a")["result_type"] == "stop"

    # The client configuration points at the queue.
    assert json.loads(cli(server, "config", "vscode", "--queue", "repo-a").stdout)["servers"]["local-mcp"]["url"] == server.queue_url("repo-a")
    desktop = json.loads(cli(server, "config", "claude-desktop", "--queue", "repo-a").stdout)
    # This server's database is not the default one: the bridge is told which it is.
    database = str((server.connection_file.parent / "queue.sqlite3").resolve())
    assert desktop["mcpServers"]["local-mcp"]["args"] == ["stdio", "--db-path", database, "--queue", "repo-a"]


def test_reports_and_reply(server):
    if server.mode != "stateless":
        pytest.skip("`consume` is one raw call, which only stateless mode answers without a session")
    assert cli(server, "reports").stdout.strip() == "no reports yet"
    missing = cli(server, "reply", "bob", "hello")
    assert missing.returncode == 1 and "bob has not reported anything yet" in missing.stderr
    consume(server, "bob", "default", report="Which **database**?", options=["SQLite", "Postgres"])
    r = cli(server, "reports", "--agent", "bob")
    assert r.returncode == 0, r.stderr
    assert "bob in default" in r.stdout and "Which **database**?" in r.stdout
    # The answers are numbered: `reply bob 2` picks the second.
    assert "  1. SQLite\n  2. Postgres" in r.stdout, r.stdout
    assert json.loads(cli(server, "reports", "--json").stdout)["items"][0]["options"] == ["SQLite", "Postgres"]
    server.add("queued earlier")
    r = cli(server, "reply", "bob", "-", stdin="SQLite, please\n")
    assert r.returncode == 0 and "sent to bob" in r.stdout, r.stderr
    first = server.pending()[0]
    assert (first["content"], first["target"]) == ("SQLite, please", "bob")
    # Answered: the answer is said, and no box of numbers invites another (issue 39, item 6).
    r = cli(server, "reports", "--agent", "bob")
    assert 'answered: "SQLite, please" (queued, next for it)' in r.stdout, r.stdout
    assert "reply bob NUMBER" not in r.stdout and "  1. SQLite" not in r.stdout, r.stdout


def test_reports_name_their_instruction_and_say_when_in_words(server):
    if server.mode != "stateless":
        pytest.skip("`consume` is one raw call, which only stateless mode answers without a session")
    server.add("Fix the flaky build\nwith details below")
    assert consume(server, "ann", "default")["instruction"]["content"].startswith("Fix the flaky build")
    consume(server, "ann", "default", report="Fixed: a race in the cache.")
    r = cli(server, "reports", "--agent", "ann")
    assert ' · on "Fix the flaky build …"' in r.stdout, r.stdout
    assert "just now (" in r.stdout and " UTC)" in r.stdout, r.stdout
    import re

    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:", r.stdout), "no raw ISO time: " + r.stdout


def consume(server, agent, queue, **extra):
    """One raw stateless tools/call from `agent` of `queue`."""
    import urllib.request

    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": "get_user_request", "arguments": {"agent_id": agent, **extra}}}).encode()
    req = urllib.request.Request(server.queue_url(queue), data=body, method="POST",
                                 headers={"content-type": "application/json", "accept": "application/json, text/event-stream"})
    with urllib.request.urlopen(req) as r:
        text = r.read().decode()
    line = next(l for l in reversed(text.splitlines()) if l.startswith("data:") and '"result"' in l)
    return json.loads(json.loads(line[5:])["result"]["content"][0]["text"])


def test_config_prints_each_clients_snippet_for_the_running_server(server):
    vscode = json.loads(cli(server, "config", "vscode").stdout)
    assert vscode["servers"]["local-mcp"] == {"type": "http", "url": server.mcp_url}
    claude = cli(server, "config", "claude-code").stdout.strip()
    assert claude == f"claude mcp add --transport http local-mcp {server.mcp_url}"
    assert json.loads(cli(server, "config", "cursor").stdout)["mcpServers"]["local-mcp"]["url"] == server.mcp_url
    assert json.loads(cli(server, "config", "windsurf").stdout)["mcpServers"]["local-mcp"]["serverUrl"] == server.mcp_url
    codex = tomllib.loads(cli(server, "config", "codex").stdout)
    assert codex["mcp_servers"]["local-mcp"]["url"] == server.mcp_url
    desktop = json.loads(cli(server, "config", "claude-desktop").stdout)["mcpServers"]["local-mcp"]
    database = str((server.connection_file.parent / "queue.sqlite3").resolve())
    assert desktop["args"] == ["stdio", "--db-path", database] and os.path.isabs(desktop["command"]) and os.access(desktop["command"], os.X_OK)
    bad = cli(server, "config", "notepad")
    assert bad.returncode == 2 and "claude-desktop" in bad.stderr


def test_without_a_running_server_it_says_so(tmp_path):
    env = {"PATH": "/usr/bin:/bin", "LOCAL_MCP_CONNECTION_FILE": str(tmp_path / "none.json")}
    r = subprocess.run([server_binary(), "status"], capture_output=True, text=True, env=env)
    assert r.returncode == 3 and "not running" in r.stderr
    # config still helps: the default address, with a note on stderr.
    r = subprocess.run([server_binary(), "config", "vscode"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "127.0.0.1:8000/mcp" in r.stdout and "not running" in r.stderr


def test_shell_completions(tmp_path):
    # bash and zsh complete the client names too; clap's fish script completes commands and flags.
    for shell, marker, word in [("bash", "complete -F", "claude-desktop"), ("zsh", "#compdef", "claude-desktop"), ("fish", "complete -c", "stdio")]:
        r = subprocess.run([server_binary(), "completions", shell], capture_output=True, text=True)
        assert r.returncode == 0 and marker in r.stdout and word in r.stdout, shell


def test_two_servers_on_two_databases_both_stay_reachable(tmp_path):
    """A second server on a database of its own (the README's second set of queues) publishes
    itself beside the first instead of over it: every command finds the server of the database
    it names, and the default database's without a word; with that one stopped, they say which
    run and how to pick one."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_STATE_HOME": str(home / ".local" / "state"),
           "HTTP_PORT": "0", "DEFAULT_WAIT_SECONDS": "1"}
    second_db = tmp_path / "other queues" / "second.sqlite3"

    def run(*args, db=None, stdin=None):
        extra = ["--db-path", str(db)] if db else []
        return subprocess.run([server_binary(), *extra, *args], input=stdin, capture_output=True, text=True,
                              env=env, timeout=60)

    try:
        first = run("start")
        assert first.returncode == 0, first.stderr
        second = run("start", db=second_db)
        assert second.returncode == 0, second.stderr
        url_of = lambda out: out.split("the page at ")[1].split("/ ")[0]  # noqa: E731
        first_url, second_url = url_of(first.stdout), url_of(second.stdout)
        assert first_url != second_url

        # Nothing said: the default database's server, and the other one named.
        status = run("status")
        assert status.returncode == 0, status.stderr
        assert f"the page at {first_url}/" in status.stdout
        assert f"also running: local-mcp on {second_db.resolve()} at {second_url}" in status.stdout, status.stdout
        # Named: that database's server.
        status = run("status", db=second_db)
        assert status.returncode == 0 and f"the page at {second_url}/" in status.stdout, status.stdout
        assert run("add", "for the first").returncode == 0
        assert run("add", "for the second", db=second_db).returncode == 0
        assert run("add", "--queue", "elsewhere", "only on the second", db=second_db).returncode == 0
        assert "for the first" in run("list").stdout and "for the second" not in run("list").stdout
        assert "for the second" in run("list", db=second_db).stdout

        # The bridge and the Stop hook are told the database when it is not the default one.
        snippet = json.loads(run("config", "claude-desktop", db=second_db).stdout)
        assert snippet["mcpServers"]["local-mcp"]["args"] == ["stdio", "--db-path", str(second_db.resolve())]
        assert json.loads(run("config", "claude-desktop").stdout)["mcpServers"]["local-mcp"]["args"] == ["stdio"]
        # The Stop hook asks its own server: a queue held on the second lets it stop there only.
        stop_input = '{"hook_event_name": "Stop", "stop_hook_active": false}'
        assert run("hold", "elsewhere", db=second_db).returncode == 0
        hook = run("hook", "claude-stop", "--queue", "elsewhere", db=second_db, stdin=stop_input)
        assert hook.returncode == 0 and "block" not in hook.stdout, hook.stdout + hook.stderr
        hook = run("hook", "claude-stop", "--queue", "elsewhere", stdin=stop_input)
        assert hook.returncode == 0 and '"decision":"block"' in hook.stdout, "not held on the first: it keeps going"

        # The second one stops: the first is still found by every command, and `start` agrees.
        assert run("stop", db=second_db).returncode == 0
        assert run("status").returncode == 0
        again = run("start")
        assert again.returncode == 4 and "already running" in again.stderr, again.stderr

        # The default one stops while the second runs: asked with nothing said, they name it.
        assert run("start", db=second_db).returncode == 0
        assert run("stop").returncode == 0
        lost = run("status")
        assert lost.returncode == 3, lost.stdout + lost.stderr
        assert f"--db-path {second_db.resolve()}" in lost.stderr or f"--db-path '{second_db.resolve()}'" in lost.stderr, lost.stderr
        assert "not running on" in lost.stderr
    finally:
        run("stop")
        run("stop", db=second_db)


SENTENCE = ("Call the get_user_request tool of local-mcp and do what it returns. When you finish, call it again "
            "with a short report of what you did, and keep calling it; never end your turn on your own.")


def test_errors_a_newcomer_met_say_what_to_do(server, tmp_path):
    """Issue 39, item 11: each error in the person's terms, in printable words."""
    r = cli(server, "templates", "--save", "Bad Name", "text")
    assert r.returncode != 0 and '"Bad Name"' in r.stderr and "Bad+Name" not in r.stderr, r.stderr

    shot = tmp_path / "shot.png"
    shot.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    env_db = {"DB_PATH": str(tmp_path / "other.sqlite3")}
    r = cli(server, "restore", str(shot), env_extra=env_db)
    assert r.returncode != 0 and "is not a tar archive" in r.stderr, r.stderr
    assert r.stderr.isprintable() or all(c.isprintable() or c in "\n\t" for c in r.stderr), repr(r.stderr)

    db = server.connection_file.parent / "queue.sqlite3"
    r = cli(server, "restore", str(shot), env_extra={"DB_PATH": str(db)})
    assert r.returncode == 4 and r.stderr.split(": ", 1)[1].startswith("local-mcp is running on"), r.stderr
    assert "stop it first" in r.stderr.splitlines()[0]

    r = cli(server, "backup", "/nonexistent/dir/bk.tar")
    assert r.returncode == 1 and "the folder /nonexistent/dir does not exist" in r.stderr, r.stderr
    assert ".tmp" not in r.stderr and "local-mcp-" not in r.stderr.split(": ", 1)[1], r.stderr

    r = cli(server, "list", "-q", "nosuchqueue")
    assert r.returncode == 1 and "no queue named nosuchqueue" in r.stderr, r.stdout + r.stderr

    r = cli(server, "config")
    assert r.returncode == 0 and "claude-code" in r.stdout and "vscode" in r.stdout, r.stdout + r.stderr

    home = tmp_path / "fresh-home"
    home.mkdir()
    r = cli(server, "connect", "vscode", "--dry-run", env_extra={"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")})
    assert r.returncode == 0 and "would write" in r.stdout, r.stdout + r.stderr
    # …and says the real run would refuse it (a newcomer's walk: it promised a write that did not come).
    assert "without --force, connect writes nothing" in r.stdout, r.stdout
    r = cli(server, "connect", "claude-code", "--force", "--dry-run",
            env_extra={"HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "PATH": "/usr/bin:/bin"})
    assert r.returncode == 0 and "would run Claude Code's own command" in r.stdout, r.stdout + r.stderr
    assert "would write" not in r.stdout, "local-mcp never writes ~/.claude.json itself: " + r.stdout


def test_config_and_connect_say_what_to_tell_the_agent(server, tmp_path):
    """Issue 39, item 1: the next step after configuring a client is the sentence, word for word."""
    r = cli(server, "config", "claude-code")
    assert r.returncode == 0 and SENTENCE in r.stderr, r.stderr
    assert SENTENCE not in r.stdout, "stdout stays the snippet alone"
    project = tmp_path / "proj"
    project.mkdir()
    r = cli(server, "connect", "claude-code", "--project", str(project))
    assert r.returncode == 0 and SENTENCE in r.stdout, r.stdout + r.stderr


def test_plain_variable_names_never_stop_a_start(tmp_path):
    """Issue 39, item 9: tcsh exports HOST=<hostname>; LOCAL_MCP_* names come first."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state"),
           "HOST": "my-laptop.example", "HTTP_PORT": "not-a-port", "LOCAL_MCP_PORT": "0",
           "DEFAULT_WAIT_SECONDS": "soon"}
    run = lambda *a: subprocess.run([server_binary(), *a], capture_output=True, text=True, env=env, timeout=60)  # noqa: E731
    try:
        started = run("start")
        assert started.returncode == 0, started.stderr
        assert 'ignoring HOST="my-laptop.example"' in started.stderr, started.stderr
        assert "ignoring DEFAULT_WAIT_SECONDS" in started.stderr, started.stderr
        assert "HTTP_PORT" not in started.stderr, "LOCAL_MCP_PORT was given: the plain name is not read"
        assert "started" in started.stdout
        status = run("status")
        assert status.returncode == 0, status.stderr
        # `stop --app` is for the tray app: it leaves a background server alone.
        wrong = run("stop", "--app")
        assert wrong.returncode == 1 and "no tray app serves" in wrong.stderr, wrong.stderr
        assert run("status").returncode == 0, "still running"
        # `stop` says exactly what it stopped.
        stopped = run("stop")
        assert stopped.returncode == 0 and "stopped the background server (local-mcp-server, pid" in stopped.stdout, stopped.stdout
        lost = run("status")
        assert lost.returncode == 3 and "local-mcp-server start" in lost.stderr, lost.stderr
    finally:
        run("stop")


def test_an_inherited_host_never_puts_the_server_on_the_network(tmp_path):
    """A newcomer's walk: an inherited HOST=0.0.0.0 was honoured, and the server listened on every
    address while its ready line said 127.0.0.1. A plain HOST is read only as a loopback address;
    an explicit one beyond this machine is said. Server flags work after the command too."""
    home = tmp_path / "home"
    home.mkdir()
    base = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / "data"), "XDG_STATE_HOME": str(home / "state"), "LOCAL_MCP_PORT": "0",
            "LOCAL_MCP_LOG_DIR": "off"}
    run = lambda env, *a: subprocess.run([server_binary(), *a], capture_output=True, text=True,  # noqa: E731
                                         env={**base, **env}, timeout=60)
    try:
        started = run({"HOST": "0.0.0.0", "API_TOKEN": "tok-lan"}, "start", "--mcp-stateless", "false")
        assert started.returncode == 0, started.stderr
        assert 'ignoring HOST="0.0.0.0"' in started.stderr and "LOCAL_MCP_HOST" in started.stderr, started.stderr
        status = run({"API_TOKEN": "tok-lan"}, "status", "--json")
        url = json.loads(status.stdout)["server"]["url"]
        assert url.startswith("http://127.0.0.1:"), status.stdout
        port = url.rsplit(":", 1)[1]
        # The kernel's own list of listening sockets: address and port in hex, state 0A.
        listening = [line.split()[1] for line in open("/proc/net/tcp").read().splitlines()[1:]
                     if line.split()[3] == "0A" and line.split()[1].endswith(f":{int(port):04X}")]
        assert listening == [f"0100007F:{int(port):04X}"], listening
    finally:
        run({}, "stop")
    db = tmp_path / "lan.sqlite3"
    served = subprocess.Popen([server_binary(), "--db-path", str(db)], stderr=subprocess.PIPE, text=True,
                              env={**base, "LOCAL_MCP_HOST": "0.0.0.0", "LOCAL_MCP_API_TOKEN": "tok-lan"})
    try:
        said = ""
        deadline = time.monotonic() + 30
        while "other machines can reach it" not in said:
            assert time.monotonic() < deadline, f"no word of listening beyond this machine within 30 s: {said}"
            said += served.stderr.readline()
        assert "listening on 0.0.0.0:" in said, said
    finally:
        served.terminate()
        served.wait(timeout=30)


def test_the_token_command_prints_what_the_server_requires(tmp_path):
    from conftest import Server

    s = Server(tmp_path, wait_seconds=1, mode="stateless")
    try:
        r = cli(s, "token")
        assert r.returncode == 0 and r.stdout == "" and "requires no token" in r.stderr
    finally:
        s.stop()
    s = Server(tmp_path, wait_seconds=1, mode="stateless", env_extra={"API_TOKEN": "tok-for-the-cli"})
    try:
        assert cli(s, "token").stdout.strip() == "tok-for-the-cli"
        assert json.loads(cli(s, "token", "--header-json").stdout) == {"Authorization": "Bearer tok-for-the-cli"}
    finally:
        s.stop()


def test_each_command_help_lists_its_own_flags():
    """Issue 39, item 2: `config --help` listed seventeen server flags."""
    run = lambda *a: subprocess.run([server_binary(), *a], capture_output=True, text=True, timeout=30)  # noqa: E731
    config = run("config", "--help").stdout
    assert "--queue" in config and "--db-path" in config
    for server_flag in ["--default-wait-seconds", "--port", "--host", "--api-token", "--log-level"]:
        assert server_flag not in config, f"{server_flag} in `config --help`:\n{config}"
    # The flags that pick which server a command means sit under their own heading, after its own
    # (a newcomer's walk: `--db-path` sat between `add`'s `--attach` and `--template`).
    add = run("add", "--help").stdout
    assert "Which local-mcp:" in add, add
    own, which = add.split("Which local-mcp:", 1)
    assert "--template" in own and "--attach" in own and "--db-path" not in own, add
    assert "--db-path" in which and "--url" in which, add
    top = run("--help").stdout
    assert "Server options" in top and "--default-wait-seconds" in top and "LOCAL_MCP_PORT" in top, top
    assert "--default-wait-seconds" in run("start", "--help").stdout
    # Hidden, still taken where it always was.
    assert run("--port", "0", "config", "vscode").returncode == 0
