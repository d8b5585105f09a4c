"""The stdio bridge (`local-mcp-server stdio`), driven by the official Python SDK's
stdio client (whichever line this environment has): it finds the running server
through the connection-info file, survives a restart of the server behind it,
and a client that leaves cancels its wait."""

import os
import time

import anyio
import pytest

from conftest import desktop_binary, server_binary
from sdk import stdio


def bridge_env(server):
    # A fresh shell: no flags, only where the running app published itself.
    return {"LOCAL_MCP_CONNECTION_FILE": str(server.connection_file), "PATH": "/usr/bin:/bin"}


def until(check, what, timeout=5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for: {what}")


def waiting(server, agent: str) -> bool:
    return bool((server.agent(agent) or {}).get("waiting"))


async def until_waiting(server, agent: str, what: str):
    await anyio.to_thread.run_sync(lambda: until(lambda: waiting(server, agent), what))


@pytest.mark.parametrize("program", ["local-mcp-server", "local-mcp"])
def test_the_bridge_serves_the_tool_over_stdio(server, program):
    binary = server_binary() if program == "local-mcp-server" else desktop_binary()
    if not os.path.exists(binary):
        pytest.skip(f"{binary} is not built (cargo build --workspace builds it)")

    async def main():
        async with stdio(binary, ["stdio"], bridge_env(server)) as client:
            assert await client.tool_names() == ["get_user_request"]
            empty, is_error = await client.get_user_request("stdio-agent")
            assert not is_error and empty["result_type"] == "default_response"

            async def queue_later():
                await anyio.sleep(0.5)
                await anyio.to_thread.run_sync(server.add, "via the bridge")

            async with anyio.create_task_group() as tg:
                tg.start_soon(queue_later)
                got, _ = await client.get_user_request("stdio-agent")
            assert got["result_type"] == "instruction"
            assert got["instruction"]["content"] == "via the bridge"

    anyio.run(main)


def test_images_pass_through_the_bridge(server):
    from images import check_delivery, upload_screenshot_photo_and_notes
    from sdk import result_json

    upload_screenshot_photo_and_notes(server)

    async def main():
        async with stdio(server_binary(), ["stdio"], bridge_env(server)) as client:
            r = await client.call_raw("stdio-eyes")
            check_delivery(r, result_json(r))

    anyio.run(main)


def test_the_bridge_takes_from_the_queue_it_is_given(server):
    server.add("not for the bridge")
    server.add("for the bridge", queue="bridged")

    async def main():
        async with stdio(server_binary(), ["stdio", "--queue", "Bridged"], bridge_env(server)) as client:
            got, is_error = await client.get_user_request("stdio-q")
            assert not is_error and (got["queue"], got["instruction"]["content"]) == ("bridged", "for the bridge")
            empty, _ = await client.get_user_request("stdio-q")
            assert empty["result_type"] == "default_response"
        assert server.agent("stdio-q", queue="bridged") is not None
        assert [i["content"] for i in server.pending()] == ["not for the bridge"]

    anyio.run(main)


def test_a_restart_of_the_server_is_invisible_to_the_stdio_client(make_server, mode):
    """The waiting call gets its normal answer when the server stops; the next call, made
    while the server is away, waits for it to come back (on another port: the connection-info
    file says where) and gets the next instruction."""
    first = make_server(600, mode)

    async def main():
        async with stdio(server_binary(), ["stdio"], bridge_env(first)) as client:
            assert await client.tool_names() == ["get_user_request"]
            result = {}

            async def waiting_call():
                result["value"] = await client.get_user_request("restart-agent")

            async with anyio.create_task_group() as tg:
                tg.start_soon(waiting_call)
                await until_waiting(first, "restart-agent", "the call waits")
                await anyio.to_thread.run_sync(first.stop)
                with anyio.fail_after(15):
                    while "value" not in result:
                        await anyio.sleep(0.02)
            value, is_error = result["value"]
            assert not is_error, value
            assert value["result_type"] in ("empty", "default_response"), value
            assert value["instruction"] is None

            # The next call, while nothing serves: it goes through once the server is back.
            async with anyio.create_task_group() as tg:
                tg.start_soon(waiting_call)
                await anyio.sleep(0.5)
                second = await anyio.to_thread.run_sync(lambda: make_server(600, mode))
                assert second.url != first.url
                second.add("after the restart")
            value, is_error = result["value"]
            assert not is_error, value
            assert value["result_type"] == "instruction"
            assert value["instruction"]["content"] == "after the restart"
            # And the loop carries on.
            second.add("next")
            nxt, _ = await client.get_user_request("restart-agent")
            assert nxt["instruction"]["content"] == "next"

    anyio.run(main)


def test_a_stdio_client_that_exits_cancels_its_wait(make_server, mode):
    server = make_server(60, mode)

    async def main():
        async with stdio(server_binary(), ["stdio"], bridge_env(server)) as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.get_user_request, "leaving-agent")
                await until_waiting(server, "leaving-agent", "the call waits")
                # Let the wait's opening notification land first: mcp 1.x raises on a message
                # that arrives after its session closed (a client quirk, not what is tested here).
                await anyio.sleep(0.5)
                tg.cancel_scope.cancel()
        # The client is gone (the SDK closed the bridge's stdin).

    anyio.run(main)
    # 15 s: the server sees the bridge's connection close at once on a quiet
    # machine; a busy CI machine once took longer than 5 s (the log says why).
    try:
        until(lambda: not server.agent("leaving-agent")["waiting"], "the departed call stops waiting", timeout=15.0)
    except AssertionError as e:
        raise AssertionError(f"{e}; the server's log:\n" + "".join(server.log[-40:])) from None
    item = server.add("for someone still here")
    time.sleep(1.0)
    assert [i["id"] for i in server.pending()] == [item["id"]], "the departed caller consumed nothing"


def test_the_bridge_takes_an_explicit_url(server, tmp_path):
    # No connection-info file at all: --url says where.
    env = {"PATH": "/usr/bin:/bin", "LOCAL_MCP_CONNECTION_FILE": str(tmp_path / "absent.json")}

    async def main():
        async with stdio(server_binary(), ["stdio", "--url", server.mcp_url], env) as client:
            assert await client.tool_names() == ["get_user_request"]
            server.add("by url")
            got, _ = await client.get_user_request("url-agent")
            assert got["instruction"]["content"] == "by url"

    anyio.run(main)
