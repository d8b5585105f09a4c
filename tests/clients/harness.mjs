// The real local-mcp-server binary for the third-party client tests
// (tests/server.mjs, shared with the page tests), in either MCP mode.

export { serverBin, startServer, until } from "../server.mjs";

export const MODES = ["stateless", "sessions"];
