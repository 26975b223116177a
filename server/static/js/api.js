// The server's own API with the user's key (x-api-key); the key lives in sessionStorage only.
const KEY_SLOT = "factdebate.apiKey";

export const session = {
  get key() { return sessionStorage.getItem(KEY_SLOT) || ""; },
  set key(value) {
    if (value) sessionStorage.setItem(KEY_SLOT, value); else sessionStorage.removeItem(KEY_SLOT);
  },
};

export class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

// One line from whatever the server answered: {"detail": ...}, {"message": ...} or text.
export function oneLine(status, body) {
  let text = body;
  try {
    const data = JSON.parse(body);
    text = data.detail ?? data.message ?? body;
    if (Array.isArray(text)) text = text.map((d) => d.msg || JSON.stringify(d)).join("; ");
  } catch { /* not JSON */ }
  text = String(text || "").split("\n")[0].trim();
  return text || `the server answered HTTP ${status}`;
}

async function send(method, path, body, key, signal) {
  const headers = { "x-api-key": key ?? session.key };
  if (body !== undefined) headers["content-type"] = "application/json";
  let response;
  try {
    response = await fetch(path, {
      method, headers, signal, body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(0, `cannot reach the server (${err.message})`);
  }
  if (!response.ok) throw new ApiError(response.status, oneLine(response.status, await response.text()));
  return response;
}

export async function call(method, path, body, key) {
  const response = await send(method, path, body, key);
  const text = await response.text();
  return text ? JSON.parse(text) : null;
}

export const api = {
  options: (key) => call("GET", "/app/api/options", undefined, key),
  createThread: (metadata) => call("POST", "/threads", { metadata }),
  searchThreads: (limit = 50) => call("POST", "/threads/search", {
    limit, sort_by: "updated_at", sort_order: "desc",
  }),
  getThread: (id) => call("GET", `/threads/${encodeURIComponent(id)}`),
  cancel: (threadId, runId) => call(
    "POST", `/threads/${encodeURIComponent(threadId)}/runs/${encodeURIComponent(runId)}/cancel?action=interrupt`),
  assistants: () => call("POST", "/assistants/search", { limit: 100 }),
  evals: () => call("GET", "/app/api/evals"),
  reviews: (limit, offset) => call("GET", `/app/api/reviews?limit=${limit}&offset=${offset}`),
  decideReview: (threadId, body) => call("POST", `/app/api/reviews/${encodeURIComponent(threadId)}`, body),
  evalResults: (run) => call("GET", `/app/api/evals/results?run=${encodeURIComponent(run)}`),
  transcript: (run, item) => call(
    "GET", `/app/api/evals/transcript?run=${encodeURIComponent(run)}&item=${encodeURIComponent(item)}`),
};

// POST /threads/{id}/runs/stream and hand every server-sent event to onEvent(event, data).
// Resolves when the stream ends; a stream "error" event is thrown as an ApiError.
export async function streamRun(threadId, payload, onEvent, signal) {
  const response = await send(
    "POST", `/threads/${encodeURIComponent(threadId)}/runs/stream`,
    { stream_mode: ["updates", "values"], ...payload }, undefined, signal);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let failure = null;
  const dispatch = (block) => {
    let event = "message";
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith("event:")) event = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (!data.length) return; // heartbeat comments
    let parsed = null;
    try { parsed = JSON.parse(data.join("\n")); } catch { parsed = data.join("\n"); }
    if (event === "error") {
      failure = new ApiError(500, oneLine(500, JSON.stringify(parsed)));
      return;
    }
    onEvent(event, parsed);
  };
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      dispatch(block);
    }
  }
  if (buffer.trim()) dispatch(buffer);
  if (failure) throw failure;
}
