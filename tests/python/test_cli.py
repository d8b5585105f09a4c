"""The command line against a running server, found through its connection-info
file as a new user's shell would (no flags): status, add, list, config, completions."""

import json
import os
import stat
import subprocess
import tomllib

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

    assert cli(server, "add", "Fix", "the", "flaky", "test").returncode == 0
    r = cli(server, "add", "-", stdin="Second line\nwith detail\n")
    assert r.returncode == 0 and r.stdout.startswith("queued ")
    assert [i["content"] for i in server.pending()] == ["Fix the flaky test", "Second line\nwith detail"]

    r = cli(server, "list")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert "1. Fix the flaky test" in lines[0] and "2. Second line …" in lines[1]
    assert len(json.loads(cli(server, "list", "--json").stdout)["items"]) == 2

    blank = cli(server, "add", "-", stdin="   \n")
    assert blank.returncode == 1 and "empty" in blank.stderr
    assert len(server.pending()) == 2, "nothing queued"


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
    assert desktop["args"] == ["stdio"] and os.path.isabs(desktop["command"]) and os.access(desktop["command"], os.X_OK)
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
