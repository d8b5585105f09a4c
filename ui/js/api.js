// The one way the page talks to the engine: fetch with JSON in and out, and
// errors as ApiError carrying the server's {code, message}. Paths are
// relative to the page ("api/…"): the same page is served at "/" on the
// computer and under the phone listener's "/p/<secret>/" (issue 43).

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** Why the page stopped talking to whatever answers at its address, once it has. */
let stopped = null;

/** Send nothing more: another program answers at this address (see state.js setStatus). */
export function stopTalking(reason) {
  stopped = reason;
}

/**
 * Sign-ins so far. A request sent before the latest one that comes back 401
 * says nothing about now: the page's first load races the gate, and its late
 * 401 must not open the gate again over a session just made.
 */
let signIns = 0;

async function request(method, path, body) {
  if (stopped) throw new ApiError(0, "stranger", stopped);
  const init = { method, credentials: "same-origin", headers: { accept: "application/json" } };
  if (body instanceof FormData) {
    init.body = body; // the browser writes the multipart type and its boundary
  } else if (body !== undefined) {
    init.headers["content-type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const sentAfter = signIns;
  let res;
  try {
    res = await fetch(path, init);
  } catch {
    throw new ApiError(0, "unreachable", "Can't reach the local-mcp server. Is it running?");
  }
  if (res.status === 204) return null;
  let data = null;
  try {
    data = await res.json();
  } catch {
    /* a non-JSON body: described below */
  }
  if (!res.ok) {
    if (res.status === 401 && sentAfter === signIns) document.dispatchEvent(new CustomEvent("auth:required"));
    throw new ApiError(res.status, data?.error?.code ?? `http_${res.status}`, data?.error?.message ?? `The server answered ${res.status}.`);
  }
  return data;
}

const enc = encodeURIComponent;

/** A stored file as a File, to send again; an HTTP failure is an ApiError saying `failed`. */
async function fileAt(path, name, type, failed) {
  const res = await fetch(path, { credentials: "same-origin" });
  if (!res.ok) throw new ApiError(res.status, `http_${res.status}`, failed);
  return new File([await res.blob()], name, { type });
}

const q = (queue) => `queue=${enc(queue)}`;

export const api = {
  session: () => request("GET", "api/session"),
  login: async (token) => {
    await request("POST", "api/session", { token });
    signIns += 1;
  },
  status: () => request("GET", "api/status"),
  pending: (queue) => request("GET", `api/instructions?status=pending&${q(queue)}`),
  /** A queue's pending instructions for one agent (the answers queued to its questions among them). */
  pendingFor: (queue, target) => request("GET", `api/instructions?status=pending&${q(queue)}&target=${enc(target)}`),
  consumed: (queue, limit, offset = 0) => request("GET", `api/instructions?status=consumed&${q(queue)}&limit=${limit}&offset=${offset}`),
  /** Delivered instructions whose text or report has every word of `text` (and of `agent`, if given). */
  searchLedger: (queue, text, agent, limit, since = null, until = null) => {
    const more = [text ? `&q=${enc(text)}` : "", agent ? `&agent=${enc(agent)}` : "", since ? `&since=${enc(since)}` : "", until ? `&until=${enc(until)}` : ""];
    return request("GET", `api/instructions?status=consumed&${q(queue)}&limit=${limit}${more.join("")}`);
  },
  add: (content, queue, target = null) => request("POST", "api/instructions", { content, queue, target }),
  /** Queue text with files (File or Blob objects). */
  addWithFiles: (content, queue, target, files) => {
    const form = new FormData();
    form.append("content", content);
    form.append("queue", queue);
    if (target) form.append("target", target);
    for (const f of files) form.append("files", f, f.name);
    return request("POST", "api/instructions", form);
  },
  attach: (id, files) => {
    const form = new FormData();
    for (const f of files) form.append("files", f, f.name);
    return request("POST", `api/instructions/${enc(id)}/attachments`, form);
  },
  detach: (id, attachmentId) => request("DELETE", `api/instructions/${enc(id)}/attachments/${enc(attachmentId)}`),
  edit: (id, patch) => request("PATCH", `api/instructions/${enc(id)}`, patch),
  remove: (id) => request("DELETE", `api/instructions/${enc(id)}`),
  move: (id, where) => request("POST", `api/instructions/${enc(id)}/move`, where),
  requeue: (id) => request("POST", `api/instructions/${enc(id)}/requeue`, {}),
  createQueue: (name) => request("POST", "api/queues", { name }),
  patchQueue: (name, patch) => request("PATCH", `api/queues/${enc(name)}`, patch),
  hold: (queue) => request("POST", "api/hold", queue ? { queue } : {}),
  release: (queue) => request("POST", "api/release", queue ? { queue } : {}),
  /** Release the instructions held since an import or a restore, of `queue` or of every queue. */
  releaseHeld: (queue) => request("POST", "api/instructions/release", queue ? { queue } : {}),
  /** Newest first: `queue`'s (every queue's with `null`), only `agent`'s when given. */
  reports: (queue, limit = 50, agent = null) =>
    request("GET", `api/reports?${queue ? `${q(queue)}&` : ""}limit=${limit}${agent ? `&agent_id=${enc(agent)}` : ""}`),
  reply: (reportId, content) => request("POST", `api/reports/${enc(reportId)}/reply`, { content }),
  stopAgent: (queue, agent_id) => request("POST", "api/agents/stop", { queue, agent_id }),
  /** Take agents off the lists: one (its queue and id), or, with no argument, every one that is gone. */
  forgetAgents: (one = null) => request("POST", "api/agents/forget", one ? { agent_id: one.agent_id, queue: one.queue } : {}),
  config: () => request("GET", "api/config"),
  configFields: () => request("GET", "api/config/fields"),
  saveConfig: (patch) => request("PATCH", "api/config", patch),
  clients: (queue) => request("GET", `api/clients?${q(queue)}`),
  connections: (project) => request("GET", `api/connect${project ? `?project=${enc(project)}` : ""}`),
  connectClient: (body) => request("POST", "api/connect", body),
  disconnectClient: (body) => request("POST", "api/disconnect", body),
  updateClients: () => request("POST", "api/connect/update", {}),
  openInstallLink: (client, queue) => request("POST", "api/connect/link", { client, queue }),
  templates: () => request("GET", "api/templates"),
  saveTemplate: (name, content) => request("PUT", `api/templates/${enc(name)}`, { content }),
  deleteTemplate: (name) => request("DELETE", `api/templates/${enc(name)}`),
  addTemplateFiles: (name, files) => {
    const form = new FormData();
    for (const f of files) form.append("files", f, f.name);
    return request("POST", `api/templates/${enc(name)}/files`, form);
  },
  removeTemplateFile: (name, ordinal) => request("DELETE", `api/templates/${enc(name)}/files/${ordinal}`),
  /** A template's file as a File, to stage like a pasted one. */
  templateFile: (name, f) =>
    fileAt(`api/templates/${enc(name)}/files/${f.ordinal}`, f.name, f.mime_type, `The template's file ${f.name} could not be fetched.`),
  /** A stored instruction's file (its original) as a File. */
  attachmentFile: (a) => fileAt(`api/attachments/${enc(a.id)}`, a.name, a.mime_type, `The file ${a.name} could not be fetched.`),
  phone: () => request("GET", "api/phone"),
  phoneStart: (address) => request("POST", "api/phone/start", { address }),
  phoneStop: () => request("POST", "api/phone/stop"),
  phoneCode: () => request("POST", "api/phone/code"),
  renameDevice: (id, name) => request("PATCH", `api/phone/devices/${enc(id)}`, { name }),
  revokeDevice: (id) => request("DELETE", `api/phone/devices/${enc(id)}`),
  /** On the phone listener: exchange a pairing code for this phone's own credential (a cookie). */
  pair: (code, name) => request("POST", "api/phone/pair", { code, name }),
  /** On the phone listener: which paired device this is (401 when it is none). */
  phoneMe: () => request("GET", "api/phone/me"),
  tokenState: () => request("GET", "api/token"),
  changeToken: (action) => request("POST", "api/token", { action }),
};
