"""The official MCP Python SDK, 1.x line (`pip install "mcp<2"`), against the real server in both modes."""

import os
import time

import anyio
import pytest

from conftest import MCP_MAJOR
from sdk import result_json

if MCP_MAJOR != 1:
    pytest.skip("the mcp 1.x API (this environment has another line)", allow_module_level=True)

from mcp import ClientSession  # noqa: E402
from mcp.client.streamable_http import streamablehttp_client  # noqa: E402


async def call(session, agent):
    return await session.call_tool("get_user_request", {"agent_id": agent})


def test_lists_the_tool_times_out_is_woken_and_keeps_fifo(server):
    async def main():
        async with streamablehttp_client(server.mcp_url) as (read, write, session_id), ClientSession(read, write) as session:
            init = await session.initialize()
            assert "get_user_request" in init.instructions
            # Sessions mode hands out an id; stateless mode does not.
            assert (session_id() is not None) == (server.mode == "sessions")
            tools = (await session.list_tools()).tools
            assert [t.name for t in tools] == ["get_user_request"]
            assert tools[0].outputSchema is None  # no structured content: clients drop images beside it

            started = time.monotonic()
            empty = await call(session, "py1-agent")
            assert time.monotonic() - started >= 1.9
            assert result_json(empty)["result_type"] == "default_response"
            assert result_json(empty)["instruction"] is None

            async def queue_later():
                await anyio.sleep(0.5)
                await anyio.to_thread.run_sync(server.add, "added over HTTP")

            async with anyio.create_task_group() as tg:
                tg.start_soon(queue_later)
                woken = await call(session, "py1-agent")
            assert result_json(woken)["result_type"] == "instruction"
            assert result_json(woken)["instruction"]["content"] == "added over HTTP"
            assert not woken.isError

            for text in ["first", "second"]:
                server.add(text)
            a, b = await call(session, "py1-agent"), await call(session, "py1-agent")
            assert [result_json(a)["instruction"]["content"], result_json(b)["instruction"]["content"]] == ["first", "second"]
            assert result_json(a)["remaining_pending"] == 1

            bad = await session.call_tool("get_user_request", {"agent_id": "x" * 200})
            assert bad.isError

            resources = await session.list_resources()
            assert {str(r.uri) for r in resources.resources} == {"local-mcp://status", "local-mcp://queue", "local-mcp://reports"}
            prompt = await session.get_prompt("agent-loop", {"agent_id": "py1-agent"})
            assert "get_user_request" in prompt.messages[0].content.text

    anyio.run(main)


def test_a_queue_url_takes_only_its_queue(server):
    server.add("elsewhere")
    server.add("mine", queue="py1-q")

    async def main():
        async with streamablehttp_client(server.queue_url("py1-q")) as (read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            got = result_json((await call(session, "py1")))
            assert (got["queue"], got["instruction"]["content"]) == ("py1-q", "mine")
            empty = result_json((await call(session, "py1")))
            assert empty["result_type"] == "default_response"
        assert [i["content"] for i in server.pending()] == ["elsewhere"]

    anyio.run(main)


def test_attached_images_arrive_as_image_blocks_scaled_and_upright(server):
    from images import check_delivery, upload_screenshot_photo_and_notes

    upload_screenshot_photo_and_notes(server)

    async def main():
        async with streamablehttp_client(server.mcp_url) as (read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            r = await session.call_tool("get_user_request", {"agent_id": "py1-eyes"})
            assert r.structuredContent is None
            check_delivery(r, result_json(r))

    anyio.run(main)


LONG_WAIT = int(os.environ.get("LOCAL_MCP_LONG_WAIT_SECONDS", "0"))


@pytest.mark.skipif(LONG_WAIT == 0, reason="set LOCAL_MCP_LONG_WAIT_SECONDS (CI sets 600) to run the long wait")
def test_long_wait_outlasts_the_sdk_silence_limit(make_server):
    """The SDK's HTTP reader gives up after 300 s of silence; keep-alives must keep the stream
    alive (this line speaks 2025-06-18: the wait's first message opens the stream at once)."""
    server = make_server(LONG_WAIT)

    async def main():
        async with streamablehttp_client(server.mcp_url) as (read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            started = time.monotonic()
            result = await call(session, "patient")
            waited = time.monotonic() - started
            assert not result.isError
            assert result_json(result)["result_type"] == "default_response"
            assert result_json(result)["waited_seconds"] == LONG_WAIT
            assert waited >= LONG_WAIT - 1

    anyio.run(main)
