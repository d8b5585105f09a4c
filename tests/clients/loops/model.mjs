// A scripted stand-in for a coding agent's model, served on 127.0.0.1, so a
// real client (Claude Code, Codex, Gemini CLI, opencode, Copilot CLI) can run
// its own agent loop headless against the real local-mcp-server. Node
// built-ins only.
//
// It speaks the four API shapes those clients use, streamed as they expect:
//   - Anthropic Messages   POST /v1/messages            (SSE: message_start, content_block_*, message_delta, message_stop)
//   - OpenAI Responses     POST /v1/responses           (SSE: response.created, response.output_item.done, response.completed)
//   - OpenAI Chat          POST /v1/chat/completions    (SSE: chat.completion.chunk …, [DONE])
//   - Gemini               POST /v1beta/models/M:streamGenerateContent?alt=sse (SSE of GenerateContentResponse)
//
// Every request is recorded, parsed into one vendor-neutral conversation
// (user text, assistant text, tool calls, tool results with their text and
// image parts), so a test asserts on what the MODEL received — not on what
// the server sent. A request that offers the local-mcp tool (or, for Claude
// Code, its ToolSearch tool, behind which MCP tools are deferred) is a turn
// of the agent loop: it waits until the test answers it (`await
// model.turn()` then `turn.call(args)`, `turn.say(text)`). Anything else (a
// title, a classifier, a token count) is a side request, answered at once.

import { createServer } from "node:http";

const TOOL = "get_user_request";

/** Every string inside `v`, depth first (keys skipped). */
function strings(v, out = []) {
  if (typeof v === "string") out.push(v);
  else if (Array.isArray(v)) for (const x of v) strings(x, out);
  else if (v && typeof v === "object") for (const x of Object.values(v)) strings(x, out);
  return out;
}

/** Parse what a data URL or a base64 field holds into {mime, data}. */
function imageOf(mime, data) {
  const m = /^data:([^;,]+);base64,(.*)$/s.exec(data ?? "");
  return m ? { mime: m[1], data: m[2] } : { mime, data };
}

// ---------------------------------------------------------------------------
// Each vendor's request parsed into events:
//   {kind: "user", text, images}          a user message (text and images)
//   {kind: "assistant", text}             the model's own text
//   {kind: "call", id, name, args}        a tool call the model made
//   {kind: "result", id, name, texts, images, isError}   what came back for it
// Text that is not in these (system prompts, tool lists) stays in `raw`.

function anthropicEvents(body) {
  const events = [];
  for (const m of body.messages ?? []) {
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content ?? []);
    const user = { kind: m.role, text: "", images: [] };
    for (const b of blocks) {
      if (b.type === "text") user.text += (user.text ? "\n" : "") + b.text;
      else if (b.type === "image") user.images.push(imageOf(b.source?.media_type, b.source?.data));
      else if (b.type === "tool_use") events.push({ kind: "call", id: b.id, name: b.name, args: b.input });
      else if (b.type === "tool_result") {
        const parts = typeof b.content === "string" ? [{ type: "text", text: b.content }] : (b.content ?? []);
        events.push({
          kind: "result",
          id: b.tool_use_id,
          texts: parts.filter((p) => p.type === "text").map((p) => p.text),
          images: parts.filter((p) => p.type === "image").map((p) => imageOf(p.source?.media_type, p.source?.data)),
          other: parts.filter((p) => p.type !== "text" && p.type !== "image"),
          isError: !!b.is_error,
        });
      }
    }
    if (user.text || user.images.length) events.push(user);
  }
  return events;
}

function responsesEvents(body) {
  const events = [];
  const input = typeof body.input === "string" ? [{ type: "message", role: "user", content: body.input }] : (body.input ?? []);
  for (const item of input) {
    const type = item.type ?? (item.role ? "message" : undefined);
    if (type === "message") {
      const parts = typeof item.content === "string" ? [{ type: "input_text", text: item.content }] : (item.content ?? []);
      const text = parts.filter((p) => p.type === "input_text" || p.type === "output_text" || p.type === "text").map((p) => p.text).join("\n");
      const images = parts.filter((p) => p.type === "input_image").map((p) => imageOf(undefined, p.image_url));
      if (item.role === "assistant") events.push({ kind: "assistant", text });
      else if (item.role === "user") events.push({ kind: "user", text, images });
      // developer/system messages are instructions, not the conversation
    } else if (type === "function_call" || type === "custom_tool_call") {
      let args = item.arguments ?? item.input;
      try {
        args = JSON.parse(args);
      } catch {}
      events.push({ kind: "call", id: item.call_id, name: item.namespace ? `${item.namespace}::${item.name}` : item.name, args });
    } else if (type === "function_call_output" || type === "custom_tool_call_output") {
      const out = item.output;
      const parts = typeof out === "string" ? [{ type: "input_text", text: out }] : Array.isArray(out) ? out : Array.isArray(out?.content) ? out.content : [{ type: "input_text", text: JSON.stringify(out) }];
      events.push({
        kind: "result",
        id: item.call_id,
        texts: parts.filter((p) => p.type === "input_text" || p.type === "output_text" || p.type === "text").map((p) => p.text),
        images: parts.filter((p) => p.type === "input_image").map((p) => imageOf(undefined, p.image_url)),
        other: parts.filter((p) => !["input_text", "output_text", "text", "input_image"].includes(p.type)),
        isError: out?.success === false,
      });
    }
  }
  return events;
}

function chatEvents(body) {
  const events = [];
  const names = new Map();
  for (const m of body.messages ?? []) {
    const parts = typeof m.content === "string" ? [{ type: "text", text: m.content }] : (m.content ?? []);
    const text = parts.filter((p) => p.type === "text").map((p) => p.text).join("\n");
    const images = parts.filter((p) => p.type === "image_url").map((p) => imageOf(undefined, p.image_url?.url ?? p.image_url));
    if (m.role === "user") events.push({ kind: "user", text, images });
    else if (m.role === "assistant") {
      if (text) events.push({ kind: "assistant", text });
      for (const c of m.tool_calls ?? []) {
        let args = c.function?.arguments;
        try {
          args = JSON.parse(args);
        } catch {}
        names.set(c.id, c.function?.name);
        events.push({ kind: "call", id: c.id, name: c.function?.name, args });
      }
    } else if (m.role === "tool") {
      events.push({ kind: "result", id: m.tool_call_id, name: names.get(m.tool_call_id), texts: [text], images, other: parts.filter((p) => p.type !== "text" && p.type !== "image_url"), isError: false });
    }
  }
  return events;
}

function geminiEvents(body) {
  const events = [];
  for (const c of body.contents ?? []) {
    const user = { kind: c.role === "model" ? "assistant" : "user", text: "", images: [] };
    for (const p of c.parts ?? []) {
      if (typeof p.text === "string" && !p.thought) user.text += (user.text ? "\n" : "") + p.text;
      else if (p.inlineData) user.images.push(imageOf(p.inlineData.mimeType, p.inlineData.data));
      else if (p.functionCall) events.push({ kind: "call", id: p.functionCall.id, name: p.functionCall.name, args: p.functionCall.args });
      else if (p.functionResponse) {
        const r = p.functionResponse;
        const nested = (r.parts ?? []).filter((x) => x.inlineData).map((x) => imageOf(x.inlineData.mimeType, x.inlineData.data));
        events.push({ kind: "result", id: r.id, name: r.name, texts: strings(r.response), images: nested, other: [], isError: false });
      }
    }
    if (user.text || user.images.length) events.push(user);
  }
  return events;
}

const VENDORS = {
  anthropic: { events: anthropicEvents, tools: (b) => (b.tools ?? []).map((t) => t.name) },
  responses: {
    events: responsesEvents,
    // A namespace (Codex's MCP servers) lists its tools inside it: "namespace::tool".
    tools: (b) => (b.tools ?? []).flatMap((t) => (t.type === "namespace" ? (t.tools ?? []).map((x) => `${t.name}::${x.name}`) : [t.name ?? t.type])),
  },
  chat: { events: chatEvents, tools: (b) => (b.tools ?? []).map((t) => t.function?.name ?? t.name) },
  gemini: { events: geminiEvents, tools: (b) => (b.tools ?? []).flatMap((t) => (t.functionDeclarations ?? []).map((f) => f.name)) },
};

/** Base64 shortened, so a recorded request can be shown in a failure message. */
export function shown(value, max = 12000) {
  const text = JSON.stringify(value, (k, v) => (typeof v === "string" && v.length > 200 && /^[A-Za-z0-9+/=]+$|^data:/.test(v) ? `${v.slice(0, 40)}…(${v.length} chars)` : v), 2);
  return text.length > max ? `${text.slice(0, max)}\n…(${text.length - max} more characters)` : text;
}

// ---------------------------------------------------------------------------
// Each vendor's answers, streamed.

function sse(res, frames, { named = true } = {}) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
  for (const [event, data] of frames) {
    res.write((named && event ? `event: ${event}\n` : "") + `data: ${typeof data === "string" ? data : JSON.stringify(data)}\n\n`);
  }
  res.end();
}

let seq = 0;
const nextId = (prefix) => `${prefix}_${Date.now().toString(36)}${(++seq).toString(36)}`;

/** `action`: {text} or {tool: name, args} (optionally `namespace` for the Responses API). */
function answerAnthropic(res, body, action) {
  const id = nextId("msg");
  const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const block = action.tool ? { type: "tool_use", id: nextId("toolu"), name: action.tool, input: action.args ?? {} } : { type: "text", text: action.text };
  const stop = action.tool ? "tool_use" : "end_turn";
  const message = { id, type: "message", role: "assistant", model: body.model, content: [block], stop_reason: stop, stop_sequence: null, usage };
  if (!body.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(message));
  }
  const start = action.tool ? { ...block, input: {} } : { type: "text", text: "" };
  const delta = action.tool ? { type: "input_json_delta", partial_json: JSON.stringify(action.args ?? {}) } : { type: "text_delta", text: action.text };
  sse(res, [
    ["message_start", { type: "message_start", message: { ...message, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } }],
    ["content_block_start", { type: "content_block_start", index: 0, content_block: start }],
    ["content_block_delta", { type: "content_block_delta", index: 0, delta }],
    ["content_block_stop", { type: "content_block_stop", index: 0 }],
    ["message_delta", { type: "message_delta", delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 5 } }],
    ["message_stop", { type: "message_stop" }],
  ]);
}

function answerResponses(res, body, action) {
  const id = nextId("resp");
  if (action.tool?.includes("::")) {
    const [namespace, name] = action.tool.split("::");
    action = { ...action, tool: name, namespace };
  }
  const item = action.tool
    ? { type: "function_call", id: nextId("fc"), call_id: nextId("call"), name: action.tool, arguments: JSON.stringify(action.args ?? {}), status: "completed", ...(action.namespace ? { namespace: action.namespace } : {}) }
    : { type: "message", id: nextId("msg"), role: "assistant", status: "completed", content: [{ type: "output_text", text: action.text, annotations: [] }] };
  const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 5, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 15 };
  const frames = [
    ["response.created", { type: "response.created", response: { id, object: "response", status: "in_progress", model: body.model, output: [] } }],
    ["response.output_item.added", { type: "response.output_item.added", output_index: 0, item: { ...item, ...(action.tool ? { arguments: "" } : { content: [] }), status: "in_progress" } }],
  ];
  if (!action.tool) frames.push(["response.output_text.delta", { type: "response.output_text.delta", item_id: item.id, output_index: 0, content_index: 0, delta: action.text }]);
  frames.push(
    ["response.output_item.done", { type: "response.output_item.done", output_index: 0, item }],
    ["response.completed", { type: "response.completed", response: { id, object: "response", status: "completed", model: body.model, output: [item], usage } }],
  );
  sse(res, frames);
}

function answerChat(res, body, action) {
  const id = nextId("chatcmpl");
  const created = Math.floor(Date.now() / 1000);
  const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
  const call = action.tool ? { id: nextId("call"), type: "function", function: { name: action.tool, arguments: JSON.stringify(action.args ?? {}) } } : null;
  if (!body.stream) {
    res.writeHead(200, { "content-type": "application/json" });
    const message = call ? { role: "assistant", content: null, tool_calls: [call] } : { role: "assistant", content: action.text };
    return res.end(JSON.stringify({ id, object: "chat.completion", created, model: body.model, choices: [{ index: 0, message, finish_reason: call ? "tool_calls" : "stop" }], usage }));
  }
  const chunk = (delta, finish, extra = {}) => ["", { id, object: "chat.completion.chunk", created, model: body.model, choices: [{ index: 0, delta, finish_reason: finish }], ...extra }];
  const frames = call
    ? [chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, ...call }] }, null)]
    : [chunk({ role: "assistant", content: "" }, null), chunk({ content: action.text }, null)];
  frames.push(chunk({}, call ? "tool_calls" : "stop", { usage }), ["", "[DONE]"]);
  sse(res, frames, { named: false });
}

function answerGemini(res, body, action, stream) {
  const part = action.tool ? { functionCall: { name: action.tool, args: action.args ?? {} } } : { text: action.text };
  const response = {
    candidates: [{ content: { role: "model", parts: [part] }, finishReason: "STOP", index: 0 }],
    usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 5, totalTokenCount: 15 },
    modelVersion: "scripted",
    responseId: nextId("gem"),
  };
  if (!stream) {
    res.writeHead(200, { "content-type": "application/json" });
    return res.end(JSON.stringify(response));
  }
  sse(res, [["", response]], { named: false });
}

/** A value that fits a JSON schema (Gemini CLI's JSON-mode side requests). */
function fill(schema) {
  if (!schema || typeof schema !== "object") return "ok";
  const type = String(schema.type ?? "").toLowerCase();
  if (schema.enum?.length) return schema.enum[0];
  if (type === "object" || schema.properties) return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, fill(v)]));
  if (type === "array") return [];
  if (type === "number" || type === "integer") return schema.minimum ?? 1; // Gemini CLI's router wants a score of 1–100
  if (type === "boolean") return false;
  return "ok";
}

// ---------------------------------------------------------------------------

/**
 * Start the scripted model. `name` labels its failures. Returns
 * { url, requests, turn(), close() }.
 */
export async function startModel({ name = "model" } = {}) {
  const requests = [];
  const waiting = []; // turns not yet taken by the test
  const takers = []; // tests waiting for a turn
  const unanswered = new Set();
  let follow = null; // Claude Code: after ToolSearch, the call to make

  const model = {
    name,
    url: "",
    requests,
    /** Every loop turn recorded (requests that offered the tool). */
    get turns() {
      return requests.filter((r) => r.loop);
    },
    /**
     * The next request of the agent loop (the model's turn), within `timeout`
     * ms; `what` names what the test waits for in the failure message.
     */
    turn({ timeout = 60_000, what = "the client's next model request", signal } = {}) {
      if (waiting.length) return Promise.resolve(waiting.shift());
      return new Promise((ok, fail) => {
        const drop = () => {
          clearTimeout(t);
          const i = takers.indexOf(taker);
          if (i >= 0) takers.splice(i, 1);
        };
        const t = setTimeout(() => {
          drop();
          const last = requests.at(-1);
          fail(new Error(`${name}: timed out after ${timeout} ms waiting for ${what}; ${requests.length} requests so far, the last: ${last ? `${last.method} ${last.path}\n${shown(last.body, 4000)}` : "none"}`));
        }, timeout);
        const taker = (turn) => {
          drop();
          ok(turn);
        };
        taker.cancel = (why) => {
          drop();
          fail(why);
        };
        signal?.addEventListener("abort", () => taker.cancel(signal.reason), { once: true });
        takers.push(taker);
      });
    },
    /** No loop turn arrives within `ms` (the client ended its run). */
    async quiet(ms) {
      const before = model.turns.length;
      await new Promise((r) => setTimeout(r, ms));
      return model.turns.length === before;
    },
    async close() {
      for (const taker of [...takers]) taker.cancel(new Error(`${name}: closed`));
      for (const res of unanswered) res.destroy();
      await new Promise((r) => server.close(r));
      server.closeAllConnections?.();
    },
  };

  function deliver(turn) {
    const taker = takers.shift();
    if (taker) taker(turn);
    else waiting.push(turn);
  }

  const server = createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString("utf8");
    let body = null;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      body = raw;
    }
    const url = new URL(req.url, "http://x");
    const path = url.pathname;
    const record = { at: Date.now(), method: req.method, path: req.url, headers: req.headers, body, vendor: null, loop: false };
    requests.push(record);
    const json = (status, value) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(value));
    };

    let vendor = null;
    let gemini = null;
    if (req.method === "POST" && /\/messages\/count_tokens$/.test(path)) return json(200, { input_tokens: 100 });
    if (req.method === "POST" && /\/messages$/.test(path)) vendor = "anthropic";
    else if (req.method === "POST" && /\/responses$/.test(path)) vendor = "responses";
    else if (req.method === "POST" && /\/chat\/completions$/.test(path)) vendor = "chat";
    else if (req.method === "POST" && (gemini = /\/models\/([^/:]+):(\w+)$/.exec(path))) {
      if (gemini[2] === "countTokens") return json(200, { totalTokens: 100 });
      if (gemini[2] === "streamGenerateContent" || gemini[2] === "generateContent") vendor = "gemini";
    } else if (req.method === "GET" && /\/models$/.test(path)) {
      return json(200, { object: "list", data: [{ id: "scripted", object: "model", created: 0, owned_by: "local-mcp-tests" }], models: [] });
    }
    if (!vendor || !body || typeof body !== "object") return json(404, { error: { message: `the scripted model does not serve ${req.method} ${path}`, type: "not_found" } });

    record.vendor = vendor;
    const v = VENDORS[vendor];
    record.tools = v.tools(body);
    record.events = v.events(body);
    // Each client names it its own way: mcp__local-mcp__get_user_request,
    // mcp__local_mcp::get_user_request, local-mcp_get_user_request, …
    const tool = record.tools.find((t) => new RegExp(`(^|[^A-Za-z0-9])${TOOL}$`).test(t));
    const toolSearch = vendor === "anthropic" && record.tools.includes("ToolSearch") && JSON.stringify(body.messages ?? "").includes(TOOL);
    record.loop = !!(tool || toolSearch);

    const answer = (action) => {
      unanswered.delete(res);
      record.answer = action;
      if (vendor === "anthropic") answerAnthropic(res, body, action);
      else if (vendor === "responses") answerResponses(res, body, action);
      else if (vendor === "chat") answerChat(res, body, action);
      else answerGemini(res, body, action, gemini[2] === "streamGenerateContent");
    };

    if (!record.loop) {
      // A side request: a title, a summary, a classifier. Gemini CLI asks for
      // JSON by schema; the rest take any short text.
      const schema = body.generationConfig?.responseJsonSchema ?? body.generationConfig?.responseSchema ?? body.config?.responseJsonSchema;
      const text = schema ? JSON.stringify(fill(schema)) : "Agent loop test";
      record.side = true;
      return answer({ text });
    }

    // Claude Code: the ToolSearch call answered, make the call it was for.
    if (follow && tool) {
      const args = follow;
      follow = null;
      return answer({ tool, args });
    }

    unanswered.add(res);
    const turn = {
      request: record,
      events: record.events,
      /** The last tool result in this request (what the previous call returned to the model). */
      get result() {
        return record.events.findLast((e) => e.kind === "result") ?? null;
      },
      /** Events after the last tool call (its result and anything the client added beside it). */
      get sinceCall() {
        const i = record.events.findLastIndex((e) => e.kind === "call");
        return record.events.slice(i + 1);
      },
      show: () => `${record.method} ${record.path}\n${shown(body)}`,
      /** How the tool is offered: its name, or Claude Code's ToolSearch and the deferred name. */
      offered: tool ?? `ToolSearch → ${/mcp__[\w-]+__get_user_request/.exec(JSON.stringify(body))?.[0] ?? "(not named)"}`,
      /** Call get_user_request with `args` (through ToolSearch first when the client defers it). */
      call(args = {}) {
        if (tool) return answer({ tool, args });
        follow = args;
        const deferred = /mcp__[\w-]+__get_user_request/.exec(JSON.stringify(body))?.[0] ?? "mcp__local-mcp__get_user_request";
        answer({ tool: "ToolSearch", args: { query: `select:${deferred}`, max_results: 1 } });
      },
      /** End the turn with plain text (no tool call). */
      say(text) {
        answer({ text });
      },
    };
    deliver(turn);
  });
  server.keepAliveTimeout = 1000;
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  model.url = `http://127.0.0.1:${server.address().port}`;
  return model;
}
