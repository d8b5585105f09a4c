"""One small face over the two lines of the official Python SDK (1.x and 2.x,
whose client APIs differ), for the tests that must run under both: the stdio
bridge. Each test file that exercises a line's own API imports it directly."""

import contextlib

from conftest import MCP_MAJOR
from mcp import StdioServerParameters


class Session:
    def __init__(self, inner):
        self.inner = inner

    async def tool_names(self) -> list[str]:
        return [t.name for t in (await self.inner.list_tools()).tools]

    async def call_raw(self, agent: str):
        """The whole result, content blocks and all."""
        return await self.inner.call_tool("get_user_request", {"agent_id": agent})

    async def get_user_request(self, agent: str) -> tuple[dict, bool]:
        r = await self.inner.call_tool("get_user_request", {"agent_id": agent})
        is_error = r.is_error if MCP_MAJOR >= 2 else r.isError
        return result_json(r), bool(is_error)


def result_json(r) -> dict:
    """A get_user_request result's JSON: its first block, text (there is no structured content)."""
    import json

    return json.loads(r.content[0].text)


@contextlib.asynccontextmanager
async def stdio(command: str, args: list[str], env: dict):
    params = StdioServerParameters(command=command, args=args, env=env)
    if MCP_MAJOR >= 2:
        from mcp.client.client import Client

        async with Client(params) as client:
            yield Session(client)
    else:
        from mcp import ClientSession
        from mcp.client.stdio import stdio_client

        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield Session(session)
