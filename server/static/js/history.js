// The user's own threads (the server filters threads.search by owner), newest first.
import { api } from "./api.js";
import { h, labelChip } from "./dom.js";

function subjectOf(thread) {
  const v = thread.values || {};
  return v.claim || v.text || thread.metadata?.fd_subject || "(no claim yet)";
}

export async function showHistory(root, { titleOf, onOpen }) {
  const status = h("p", { class: "muted", role: "status", text: "Loading your threads…" });
  root.replaceChildren(h("h2", { text: "History" }), status);
  let threads;
  try {
    threads = await api.searchThreads(100);
  } catch (err) {
    status.replaceWith(h("p", { class: "error", role: "alert", text: err.message }));
    return;
  }
  status.textContent = threads.length ? `${threads.length} thread(s), newest first` : "No threads yet: verify a claim first.";
  const rows = threads.map((t) => {
    const graph = t.metadata?.graph_id || t.metadata?.fd_graph || "";
    const when = new Date(t.updated_at || t.created_at).toLocaleString();
    return h("li", { class: "history-item" },
      h("button", { type: "button", class: "linklike", "data-thread": t.thread_id, onclick: () => onOpen(t) },
        h("span", { class: "h-subject", text: subjectOf(t) })),
      h("span", { class: "h-meta muted small" }, labelChip(t.values?.label ?? null),
        ` ${titleOf(graph)} · ${t.metadata?.fd_model || ""} · ${t.status} · ${when}`));
  });
  root.append(h("ol", { class: "history" }, rows));
}
