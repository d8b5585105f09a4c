// The one EventSource: live changes from /api/events, re-dispatched into the
// state. The browser reconnects by itself and sends Last-Event-ID, so the
// server replays what we missed. If the stream cannot be had (no EventSource,
// or the server refuses it), the page falls back to polling.

import { announceImport, applyInstruction, applyReport, applyStatus, KIND, setConn, setQueue, setSettings, state } from "./state.js";

const POLL_MS = 5000;
const RETRY_STREAM_MS = 30_000;
/** How long the stream may stay down before the page polls meanwhile. */
const POLL_AFTER_MS = 8000;

let source = null;
let pollTimer = null;
let fallbackTimer = null;

function parse(e) {
  try {
    return JSON.parse(e.data);
  } catch {
    return null;
  }
}

/**
 * Start listening. `reload` refetches everything (after a reset or while polling).
 */
export function connect(reload) {
  if (!("EventSource" in window)) {
    startPolling(reload);
    return;
  }
  source?.close();
  source = new EventSource("api/events");
  setConn("connecting");
  source.addEventListener("open", () => {
    clearTimeout(fallbackTimer);
    fallbackTimer = null;
    stopPolling();
    setConn("live");
  });
  source.addEventListener("error", () => {
    if (source.readyState === EventSource.CLOSED) {
      // The server refused the stream (e.g. 401, 403, 503): poll, and try the stream again later.
      startPolling(reload);
      setTimeout(() => connect(reload), RETRY_STREAM_MS);
    } else if (!pollTimer) {
      // The browser retries by itself; if the stream stays down (a proxy that
      // drops it), keep the page current by polling meanwhile.
      setConn("reconnecting");
      fallbackTimer ??= setTimeout(() => {
        fallbackTimer = null;
        if (source.readyState !== EventSource.OPEN) startPolling(reload);
      }, POLL_AFTER_MS);
    }
  });
  for (const type of Object.values(KIND)) {
    source.addEventListener(type, (e) => {
      const msg = parse(e);
      if (msg) applyInstruction(type, msg.data);
    });
  }
  source.addEventListener("status.changed", (e) => {
    const msg = parse(e);
    if (msg) applyStatus(msg.data);
  });
  source.addEventListener("config.updated", (e) => {
    const msg = parse(e);
    if (msg) setSettings(msg.data);
  });
  source.addEventListener("report.created", (e) => {
    const msg = parse(e);
    if (msg) applyReport(msg.data);
  });
  source.addEventListener("queue.updated", (e) => {
    // The shown queue was renamed: follow it (other changes come with status.changed).
    const change = JSON.parse(e.data).data;
    if (change.renamed_from && change.renamed_from === state.queue) {
      setQueue(change.name);
      reload();
    }
  });
  source.addEventListener("stream.reset", () => reload());
  // An import changed the history (and perhaps the queues) at once: reload,
  // and say what came (its pending instructions are held until released).
  source.addEventListener("history.imported", (e) => {
    const msg = parse(e);
    if (msg?.data) announceImport(msg.data);
    reload();
  });
}

/** Stop listening and polling for good (another program answers at this address). */
export function disconnect() {
  source?.close();
  source = null;
  clearTimeout(fallbackTimer);
  stopPolling();
}

function startPolling(reload) {
  if (pollTimer) return;
  setConn("polling");
  reload();
  pollTimer = setInterval(reload, POLL_MS);
}

function stopPolling() {
  clearInterval(pollTimer);
  pollTimer = null;
}
