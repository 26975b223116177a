// Evaluation run folders (the operator's FACTDEBATE_RUNS_DIR): results with filters, transcripts.
import { api } from "./api.js";
import { DebateView } from "./debate.js";
import { fmt, h, labelChip } from "./dom.js";

function outcome(row) {
  if (row.status !== "ok") return "error";
  const multi = (row.gold?.answers || []).length && !row.gold?.label;
  if (multi) return "n/a";
  return row.prediction?.label === row.gold?.label ? "correct" : "incorrect";
}

function select(label, values) {
  const el = h("select", { "aria-label": label }, h("option", { value: "", text: `${label}: all` }),
    values.map((v) => h("option", { value: v, text: v })));
  return el;
}

// The index a run searched (run.json "index"): corpus, SHA-256, passages, embeddings, build time,
// and whether a LangGraph server searched it (eval --server).
function indexText(index) {
  if (index.status === "server") return "index: the server's own (not recorded)";
  if (index.status === "unrecorded") return "index: not recorded in run.json";
  if (index.status !== "ok") return `index: ${index.status}`;
  const demo = index.demo ? " — the bundled DEMO corpus, not the benchmark's" : "";
  const server = index.searched_by === "server" ? ", searched by a LangGraph server" : "";
  return `index: ${index.corpus}${demo} (sha256 ${String(index.corpus_sha256 || "").slice(0, 16)}, ${index.passages} passages), embeddings ${index.embedding_model}, built ${index.built}${server}`;
}

// The headline evidence figure with its n and its ceiling (gold evidence in the index at all).
function evidenceText(ev) {
  const head = ev?.headline;
  if (!head || typeof head.value !== "number") return "";
  const ceiling = typeof head.ceiling === "number" ? ` · ceiling (gold in index) ${fmt(head.ceiling)} (n=${head.ceiling_n})` : "";
  return ` · ${head.name} ${fmt(head.value)} (n=${head.n})${ceiling}`;
}

export async function showEvals(root) {
  const status = h("p", { class: "muted", role: "status", text: "Loading evaluation runs…" });
  const detail = h("div", { class: "eval-detail" });
  root.replaceChildren(h("h2", { text: "Evaluations" }), status, detail);
  let listing;
  try {
    listing = await api.evals();
  } catch (err) {
    status.replaceWith(h("p", { class: "error", role: "alert", text: err.message }));
    return;
  }
  status.textContent = listing.runs.length ? `${listing.runs.length} run folder(s) in ${listing.root}` : `No run folders in ${listing.root}.`;
  const list = h("ul", { class: "eval-runs" }, listing.runs.map((r) => {
    const acc = r.metrics?.accuracy;
    return h("li", {}, h("button", { type: "button", class: "linklike", "data-run": r.run, onclick: () => openRun(detail, r.run) }, r.run),
      h("span", { class: "muted small", text: ` ${r.framework} · ${r.dataset}${typeof acc === "number" ? ` · accuracy ${fmt(acc)}` : ""}${evidenceText(r.evidence)}` }),
      r.index ? h("div", { class: "muted small", "data-index": r.run, text: indexText(r.index) }) : null);
  }));
  status.after(list);
}

async function openRun(detail, run) {
  detail.replaceChildren(h("p", { class: "muted", role: "status", text: `Loading ${run}…` }));
  let data;
  try {
    data = await api.evalResults(run);
  } catch (err) {
    detail.replaceChildren(h("p", { class: "error", role: "alert", text: err.message }));
    return;
  }
  const rows = data.rows;
  const labels = [...new Set(rows.flatMap((r) => [r.gold?.label, r.prediction?.label]).filter(Boolean))].sort();
  const flags = [...new Set(rows.flatMap((r) => r.flags || []))];
  const fOutcome = select("Outcome", ["correct", "incorrect", "error"]);
  const fGold = select("Gold", labels);
  const fPred = select("Predicted", labels);
  const fFlag = h("input", { type: "search", placeholder: "flag contains…", "aria-label": "Flag contains", list: "flag-list" });
  const flagList = h("datalist", { id: "flag-list" }, flags.slice(0, 50).map((f) => h("option", { value: f })));
  const count = h("p", { class: "muted small", role: "status" });
  const body = h("tbody");
  const transcript = h("section", { class: "transcript", "aria-live": "polite" });
  const table = h("table", { class: "results" },
    h("thead", {}, h("tr", {}, ["Item", "Claim", "Gold", "Predicted", "Outcome", "Rounds", "Flags"].map((c) => h("th", { scope: "col", text: c })))),
    body);
  const apply = () => {
    const shown = rows.filter((r) => (!fOutcome.value || outcome(r) === fOutcome.value)
      && (!fGold.value || r.gold?.label === fGold.value)
      && (!fPred.value || r.prediction?.label === fPred.value)
      && (!fFlag.value || (r.flags || []).some((f) => f.toLowerCase().includes(fFlag.value.toLowerCase()))));
    count.textContent = `${shown.length} of ${rows.length} item(s)${data.truncated ? " (first rows only)" : ""}`;
    body.replaceChildren(...shown.map((r) => h("tr", { class: `row-${outcome(r)}` },
      h("td", {}, h("button", { type: "button", class: "linklike", "data-item": r.item_id,
        onclick: () => openTranscript(transcript, run, r) }, r.item_id)),
      h("td", { class: "claim-cell", text: r.claim }),
      h("td", {}, labelChip(r.gold?.label ?? null)),
      h("td", {}, r.status === "ok" ? labelChip(r.prediction?.label ?? null) : h("span", { class: "error", text: r.error?.message || "error" })),
      h("td", { text: outcome(r) }), h("td", { text: r.rounds ?? "" }), h("td", { text: (r.flags || []).length }))));
  };
  for (const el of [fOutcome, fGold, fPred]) el.addEventListener("change", apply);
  fFlag.addEventListener("input", apply);
  const rec = data.record || {};
  detail.replaceChildren(h("h3", { text: run }),
    h("p", { class: "muted small", text: [rec.framework, rec.dataset, rec.prompt_version, rec.git_sha && `git ${String(rec.git_sha).slice(0, 8)}`].filter(Boolean).join(" · ") }),
    h("div", { class: "filters" }, fOutcome, fGold, fPred, fFlag, flagList), count,
    h("div", { class: "table-wrap" }, table), transcript);
  apply();
}

async function openTranscript(box, run, row) {
  box.replaceChildren(h("p", { class: "muted", role: "status", text: `Loading the transcript of ${row.item_id}…` }));
  let data;
  try {
    data = await api.transcript(run, row.item_id);
  } catch (err) {
    box.replaceChildren(h("h3", { text: `Item ${row.item_id}` }), h("p", { class: "error", role: "alert", text: err.message }));
    return;
  }
  const head = h("h3", {}, `Item ${row.item_id} `, h("span", { class: "muted small", text: "gold " }), labelChip(row.gold?.label ?? null));
  box.replaceChildren(head, h("p", { class: "subject", text: data.state.claim || row.claim }));
  // the evidence behind the verdict (cited) and the rest (retrieved): the state's, else the row's
  const saved = data.row || row;
  const state = { ...data.state };
  if (!Array.isArray(state.verdict_evidence) && Array.isArray(saved.evidence)) {
    state.verdict_evidence = saved.evidence;
    state.retrieved_evidence = saved.retrieved || [];
  }
  new DebateView(box).render(state, true);
  head.tabIndex = -1;
  head.focus();
}
