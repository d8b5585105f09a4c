"""The official MCP Python SDK, 2.x line (`pip install mcp`), against the real server in both modes."""

import os
import time

import anyio
import pytest

from conftest import MCP_MAJOR
from sdk import result_json

if MCP_MAJOR != 2:
    pytest.skip("the mcp 2.x API (this environment has another line)", allow_module_level=True)

from mcp.client.client import Client  # noqa: E402


def call(client, agent):
    return client.call_tool("get_user_request", {"agent_id": agent})


def test_lists_the_tool_and_times_out_then_is_woken(server):
    async def main():
        async with Client(server.mcp_url) as client:
            tools = (await client.list_tools()).tools
            assert [t.name for t in tools] == ["get_user_request"]
            assert tools[0].output_schema is None  # no structured content: clients drop images beside it

            started = time.monotonic()
            empty = await call(client, "py-agent")
            assert time.monotonic() - started >= 1.9
            assert result_json(empty)["result_type"] == "default_response"
            assert result_json(empty)["instruction"] is None

            # A waiting call gets an instruction queued over plain HTTP, at once.
            async def queue_later():
                await anyio.sleep(0.5)
                await anyio.to_thread.run_sync(server.add, "added with curl")

            async with anyio.create_task_group() as tg:
                tg.start_soon(queue_later)
                woken = await call(client, "py-agent")
            got = result_json(woken)
            assert got["result_type"] == "instruction"
            assert got["instruction"]["content"] == "added with curl"
            assert got["remaining_pending"] == 0
            assert not woken.is_error

    anyio.run(main)


def test_fifo_and_tool_errors(server):
    for text in ["first", "second"]:
        server.add(text)

    async def main():
        async with Client(server.mcp_url) as client:
            a = await call(client, "fifo")
            b = await call(client, "fifo")
            assert [result_json(a)["instruction"]["content"], result_json(b)["instruction"]["content"]] == ["first", "second"]
            assert result_json(a)["remaining_pending"] == 1
            bad = await client.call_tool("get_user_request", {"agent_id": "x" * 200})
            assert bad.is_error

    anyio.run(main)
    status, items = server.request("GET", "/api/instructions?status=consumed")
    assert [i["consumed_by_agent_id"] for i in items["items"]] == ["fifo", "fifo"]


LONG_WAIT = int(os.environ.get("LOCAL_MCP_LONG_WAIT_SECONDS", "0"))


@pytest.mark.skipif(LONG_WAIT == 0, reason="set LOCAL_MCP_LONG_WAIT_SECONDS (CI sets 600) to run the long wait")
def test_long_wait_ends_inside_the_sdk_read_timeout_when_nothing_can_be_sent(make_server):
    """This SDK speaks 2026-07-28 and asks for neither progress nor log messages, so the server
    may send nothing before the answer (SEP-2575) and the HTTP response cannot begin: its reader
    gives up after 300 s without a response. The wait must end inside that, not at the server's
    600 s (the 1.x line's test proves a 600 s wait kept alive where a stream can open)."""
    server = make_server(LONG_WAIT)

    async def main():
        async with Client(server.mcp_url) as client:
            started = time.monotonic()
            result = await call(client, "patient")
            waited = time.monotonic() - started
            assert not result.is_error
            assert result_json(result)["result_type"] == "default_response"
            assert result_json(result)["waited_seconds"] == 270, result_json(result)
            assert 269 <= waited < 300

    anyio.run(main)


def test_a_queue_url_keeps_agents_apart_and_targets_reach_only_their_agent(server):
    server.add("for repo a", queue="repo-a")
    server.add("for bob only", queue="repo-a", target="bob")
    server.add("for the default queue")

    async def main():
        async with Client(server.queue_url("repo-a")) as alice, Client(server.queue_url("repo-a")) as bob:
            a = result_json((await alice.call_tool("get_user_request", {"agent_id": "alice", "queue": "default"})))
            assert (a["queue"], a["instruction"]["content"]) == ("repo-a", "for repo a"), "the URL wins"
            # Bob's instruction stays for Bob: Alice waits and gets nothing.
            empty = result_json((await alice.call_tool("get_user_request", {"agent_id": "alice"})))
            assert empty["result_type"] == "default_response" and empty["remaining_pending"] == 0
            b = result_json((await bob.call_tool("get_user_request", {"agent_id": "bob"})))
            assert (b["instruction"]["content"], b["instruction"]["target"]) == ("for bob only", "bob")
        assert [i["content"] for i in server.pending()] == ["for the default queue"]

    anyio.run(main)


def test_reports_are_stored_linked_and_answerable(server):
    item = server.add("Write the release notes")

    async def main():
        async with Client(server.mcp_url) as client:
            got = result_json((await client.call_tool("get_user_request", {"agent_id": "py-rep"})))
            assert got["instruction"]["id"] == item["id"]
            args = {"agent_id": "py-rep", "report": "Drafted them. Publish now?", "options": ["Publish", "Wait"]}
            await client.call_tool("get_user_request", args)
            await client.call_tool("get_user_request", args)  # a retry: stored once
            too_long = await client.call_tool("get_user_request", {"agent_id": "py-rep", "report": "x" * 65537})
            assert too_long.is_error and "the limit is 65536" in too_long.content[0].text

    anyio.run(main)
    reports = server.request("GET", "/api/reports?agent_id=py-rep")[1]["items"]
    assert len(reports) == 1
    assert (reports[0]["instruction_id"], reports[0]["options"]) == (item["id"], ["Publish", "Wait"])


def test_attached_images_arrive_as_image_blocks_scaled_and_upright(server):
    from images import check_delivery, upload_screenshot_photo_and_notes

    upload_screenshot_photo_and_notes(server)

    async def main():
        async with Client(server.mcp_url) as client:
            r = await client.call_tool("get_user_request", {"agent_id": "py-eyes"})
            assert r.structured_content is None
            check_delivery(r, result_json(r))

    anyio.run(main)
