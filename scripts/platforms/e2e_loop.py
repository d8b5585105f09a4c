"""The Windows end-to-end run's MCP half (scripts/platforms/windows-e2e.sh):
the official Python MCP SDK, on Linux, completing a get_user_request loop
against local-mcp-server.exe under Wine — a call that waits and is woken by
an instruction the page queued, then a report sent back on the next call.

Usage: python e2e_loop.py URL READY_FILE. The wait starts first; the
script writes READY_FILE once its call is waiting, so the page can queue.
Every wait has a bound that names what it waited for."""

import json
import sys
import time

import anyio
from mcp.client.client import Client


def result_json(r) -> dict:
    return json.loads(r.content[0].text)


async def main(url: str, ready: str) -> None:
    async with Client(f"{url}/mcp") as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        assert tools == ["get_user_request"], tools
        # Tell the page side the agent is there, then wait for its instruction.
        with open(ready, "w") as f:
            f.write("waiting\n")
        started = time.monotonic()
        got = None
        with anyio.fail_after(120):  # the page queues within this; each call waits ≤ 10 s
            while got is None:
                r = await client.call_tool("get_user_request", {"agent_id": "wine-e2e"})
                body = result_json(r)
                assert not r.is_error, body
                if body["result_type"] == "instruction":
                    got = body
        text = got["instruction"]["content"]
        print(f"delivered after {time.monotonic() - started:.1f} s: {text!r}")
        assert text == "from the page, under Wine", text
        # The loop's other half: the agent reports on its next call.
        with anyio.fail_after(60):  # an empty queue answers within the wait (10 s)
            r = await client.call_tool(
                "get_user_request",
                {"agent_id": "wine-e2e", "report": "Done: **read** it under Wine."},
            )
        assert not r.is_error, result_json(r)
        print("report sent; next result:", result_json(r)["result_type"])


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:3])
