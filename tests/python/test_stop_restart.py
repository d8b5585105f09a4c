"""A stop or a restart of the server breaks no agent's loop (issue "Every agent loop run for
real", part 2), with the official Python SDK of whichever line this environment has (1.x or
2.x), in both MCP modes:

- a call waiting when the server is asked to stop gets its normal answer (empty or default,
  never an error, never a hang) before the process exits;
- after a restart on the same database and port, the same client's next call reaches the new
  process and the loop goes on (the next instruction arrives)."""

import contextlib
import time
import urllib.request

import anyio
import pytest

from conftest import MCP_MAJOR, Server
from sdk import result_json

# What the server logs once a waiting call has started to wait.
WAITING = "is listening"


@contextlib.asynccontextmanager
async def connect(url: str):
    """The SDK's client over streamable HTTP, as a new user of this line opens it."""
    if MCP_MAJOR >= 2:
        from mcp.client.client import Client

        async with Client(url) as client:
            yield client
    else:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamablehttp_client

        async with streamablehttp_client(url) as (read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def is_error(result) -> bool:
    return bool(result.is_error if MCP_MAJOR >= 2 else result.isError)


def waiting_agents(server: Server) -> list[str]:
    with urllib.request.urlopen(server.url + "/api/status", timeout=10) as r:
        import json

        agents = json.loads(r.read())["agents"]
    return [a["agent_id"] for a in agents if a.get("state") == "listening"]


async def until(what: str, check, seconds: float = 20.0):
    deadline = time.monotonic() + seconds
    while not await anyio.to_thread.run_sync(check):
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {seconds} s for {what}")
        await anyio.sleep(0.05)


@pytest.mark.parametrize("mode", ["stateless", "sessions"])
def test_a_stop_answers_the_waiting_call_and_a_restart_keeps_the_loop(tmp_path, mode):
    first = Server(tmp_path, wait_seconds=600, mode=mode)
    port = int(first.url.rsplit(":", 1)[1])
    second = None
    try:

        async def main():
            nonlocal second
            async with connect(first.mcp_url) as client:
                # An agent lists the tools first (the SDK validates each result against that list).
                assert [t.name for t in (await client.list_tools()).tools] == ["get_user_request"]
                answer = {}

                async def wait_call():
                    answer["result"] = await client.call_tool("get_user_request", {"agent_id": "loop"})

                async with anyio.create_task_group() as tg:
                    tg.start_soon(wait_call)
                    await until("the agent to be listening", lambda: "loop" in waiting_agents(first))
                    stopped_at = time.monotonic()
                    first.proc.terminate()
                    # The call must come back by itself, with its normal answer.
                    with anyio.fail_after(15):
                        while "result" not in answer:
                            await anyio.sleep(0.02)
                got = answer["result"]
                assert not is_error(got), got
                body = result_json(got)
                assert body["result_type"] in ("empty", "default_response"), body
                assert body["instruction"] is None
                assert time.monotonic() - stopped_at < 10
                await anyio.to_thread.run_sync(lambda: first.proc.wait(timeout=15))
                assert first.proc.returncode == 0, "".join(first.log[-20:])

                # The same database and port: the client's next call reaches the new process.
                second = await anyio.to_thread.run_sync(lambda: Server(tmp_path, wait_seconds=600, mode=mode, port=port))
                second.add("after the restart: ünïcødé \"quoted\"\nsecond line")
                with anyio.fail_after(30):
                    again = await client.call_tool("get_user_request", {"agent_id": "loop"})
                assert not is_error(again), again
                body = result_json(again)
                assert body["result_type"] == "instruction", body
                assert body["instruction"]["content"] == "after the restart: ünïcødé \"quoted\"\nsecond line"

        anyio.run(main)
    finally:
        first.stop()
        if second is not None:
            second.stop()
