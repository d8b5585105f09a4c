"""Fixtures: the real `local-mcp-server` binary on a free port with a temporary database,
in both MCP modes (stateless, the default, and sessions)."""

import importlib.metadata
import json
import os
import pathlib
import subprocess
import threading
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MCP_VERSION = importlib.metadata.version("mcp")
MCP_MAJOR = int(MCP_VERSION.split(".")[0])
MODES = ["stateless", "sessions"]


def server_binary() -> str:
    explicit = os.environ.get("LOCAL_MCP_SERVER_BIN")
    if explicit:
        return explicit
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return str(pathlib.Path(target) / "debug" / "local-mcp-server")


def desktop_binary() -> str:
    """The desktop app's binary (`local-mcp`), which serves the same client commands."""
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    return str(pathlib.Path(target) / "debug" / "local-mcp")


class Server:
    def __init__(self, tmp: pathlib.Path, wait_seconds: int, mode: str = "stateless", port: int = 0,
                 env_extra: dict | None = None):
        self.connection_file = tmp / "connection.json"
        self.env = dict(os.environ, DB_PATH=str(tmp / "queue.sqlite3"), HTTP_PORT=str(port),
                        DEFAULT_WAIT_SECONDS=str(wait_seconds), LOG_LEVEL="info",
                        MCP_STATELESS="true" if mode == "stateless" else "false",
                        LOCAL_MCP_CONNECTION_FILE=str(self.connection_file),
                        LOCAL_MCP_TOKEN_FILE=str(tmp / "token"),
                        LOCAL_MCP_LOG_DIR=str(tmp / "logs"),
                        # A home of its own: /api/connect edits clients' files
                        # under HOME, and a test must never touch the real ones.
                        HOME=str(tmp / "home"), XDG_CONFIG_HOME=str(tmp / "home" / ".config"))
        self.env.update(env_extra or {})
        (tmp / "home").mkdir(exist_ok=True)
        self.mode = mode
        self.proc = subprocess.Popen([server_binary()], env=self.env, stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.log: list[str] = []
        for line in self.proc.stderr:
            self.log.append(line)
            if line.startswith("local-mcp-server ready: "):
                self.url = line.split()[2]
                break
        else:
            raise RuntimeError("server exited before it was ready:\n" + "".join(self.log))
        # Keep draining the log so the server never blocks on a full pipe.
        threading.Thread(target=lambda: [self.log.append(l) for l in self.proc.stderr], daemon=True).start()
        self.mcp_url = self.url + "/mcp"

    def request(self, method: str, path: str, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"content-type": "application/json"})
        with urllib.request.urlopen(req) as r:
            text = r.read()
            return r.status, (json.loads(text) if text else None)

    def add(self, content: str, queue: str | None = None, target: str | None = None) -> dict:
        status, body = self.request("POST", "/api/instructions", {"content": content, "queue": queue, "target": target})
        assert status == 201
        return body["item"]

    def add_with_files(self, content: str, files: list[tuple[str, bytes, str]]) -> dict:
        """Queue `content` with files (name, bytes, declared type) as a multipart form."""
        import uuid

        boundary = uuid.uuid4().hex
        parts = [f'--{boundary}\r\nContent-Disposition: form-data; name="content"\r\n\r\n{content}\r\n'.encode()]
        for name, data, declared in files:
            head = (f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
                    f"Content-Type: {declared}\r\n\r\n")
            parts.append(head.encode() + data + b"\r\n")
        parts.append(f"--{boundary}--\r\n".encode())
        req = urllib.request.Request(self.url + "/api/instructions", data=b"".join(parts), method="POST",
                                     headers={"content-type": f"multipart/form-data; boundary={boundary}"})
        with urllib.request.urlopen(req, timeout=60) as r:
            assert r.status == 201
            return json.loads(r.read())["item"]

    def queue_url(self, queue: str) -> str:
        return f"{self.mcp_url}/q/{queue}"

    def pending(self) -> list:
        return self.request("GET", "/api/instructions?status=pending")[1]["items"]

    def agent(self, agent_id: str, queue: str | None = None):
        agents = self.request("GET", "/api/status")[1]["agents"]
        return next((a for a in agents if a["agent_id"] == agent_id and queue in (None, a["queue"])), None)

    def stop(self):
        if self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise


@pytest.fixture(params=MODES)
def mode(request):
    return request.param


@pytest.fixture
def server(tmp_path, mode):
    s = Server(tmp_path, wait_seconds=2, mode=mode)
    yield s
    s.stop()
    assert s.proc.returncode == 0, "the server stops cleanly on SIGTERM:\n" + "".join(s.log[-20:])


@pytest.fixture
def make_server(tmp_path):
    started = []

    def make(wait_seconds: int, mode: str = "stateless", port: int = 0) -> Server:
        s = Server(tmp_path, wait_seconds, mode, port)
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()
