// A debate as it streams: rounds of turns (query, evidence, answer, scores), the consensus check
// or the judge, the verdict with the evidence behind it. Content is only ever appended below what
// is already shown, so nothing moves while a run streams.
import { fmt, h, keyed, labelChip, safeLink } from "./dom.js";

const SCORE_NAMES = {
  faithfulness: "faithfulness", answer_relevancy: "relevancy", consistency: "consistency",
  verifier: "verifier",
};

// Merge one node's update into the local state (values events replace it wholesale later).
export function mergeUpdate(state, update) {
  if (!update || typeof update !== "object") return state;
  for (const [key, raw] of Object.entries(update)) {
    const overwrite = raw && typeof raw === "object" && raw.type === "__overwrite__";
    const value = overwrite ? raw.value : raw;
    if (overwrite) state[key] = value;
    else if (key === "turns" || key === "flags" || key === "extracted") state[key] = [...(state[key] || []), ...(value || [])];
    else if (key === "scores") {
      const merged = { ...(state.scores || {}) };
      for (const [agent, rows] of Object.entries(value || {})) merged[agent] = [...(merged[agent] || []), ...rows];
      state.scores = merged;
    } else if (key === "results") state.results = { ...(state.results || {}), ...(value || {}) };
    else if (key === "round" || key === "ledger") { /* reducers: the next values event has them */ }
    else state[key] = value;
  }
  return state;
}

function scoreText(row) {
  if (!row) return "";
  return Object.entries(SCORE_NAMES).filter(([k]) => typeof row[k] === "number")
    .map(([k, name]) => `${name} ${fmt(row[k])}`).join(" · ");
}

function evidenceList(evidence) {
  const items = (evidence || []).map((e) => h("li", { title: e.text || "" },
    safeLink(e.url, e.title || e.id || "(untitled)"),
    h("span", { class: "src", text: ` ${e.source || ""}` }),
    typeof e.score === "number" ? h("span", { class: "muted small", text: ` ${fmt(e.score)}` }) : null));
  const texts = (evidence || []).filter((e) => e.text).map((e) => h("li", { class: "snippet", text: e.text }));
  return h("div", { class: "evidence" }, h("span", { class: "k", text: `Evidence (${items.length})` }),
    h("ol", {}, items),
    texts.length ? h("details", {}, h("summary", { text: "Passage texts" }), h("ol", {}, texts)) : null);
}

function turnCard(turn) {
  return h("article", { class: "turn", "aria-label": `${turn.agent}, round ${turn.round}` },
    h("header", {}, h("strong", { class: "agent", text: turn.agent }), " ", labelChip(turn.label),
      turn.parse && turn.parse !== "structured" ? h("span", { class: "muted", text: ` (${turn.parse})` }) : null),
    h("div", { class: "score muted", text: "" }),
    turn.query ? h("p", { class: "query" }, h("span", { class: "k", text: "Query " }), turn.query) : null,
    (turn.evidence || []).length ? evidenceList(turn.evidence) : null,
    h("p", { class: "answer", text: turn.answer || "" }));
}

function roundsOf(turns) {
  const rounds = new Map();
  for (const t of turns || []) {
    const r = Number(t.round) || 1;
    if (!rounds.has(r)) rounds.set(r, []);
    rounds.get(r).push(t);
  }
  return [...rounds.entries()].sort((a, b) => a[0] - b[0]);
}

function consensusText(turns, last, state) {
  const labels = turns.map((t) => t.label);
  const agree = labels.length > 1 && labels.every((l) => l === labels[0]);
  const stance = labels.length < 2 ? "one answer" : agree ? `debaters agree: ${labels[0]}`
    : `debaters disagree (${turns.map((t) => `${t.agent} ${t.label ?? "?"}`).join(", ")})`;
  if (!last) return `Consensus check: ${stance} → next round`;
  if (!state.stopped_by) return `Consensus check: ${stance}`;
  const how = { consensus: "stop: consensus", judge: "no consensus → the judge decides" }[state.stopped_by]
    || `ended by ${state.stopped_by}`;
  return `Consensus check: ${stance} → ${how}`;
}

// Evidence of the final round's turns that reached the verdict, numbered once each.
export function verdictSources(state) {
  const rounds = roundsOf(state.turns);
  if (!rounds.length) return [];
  const last = rounds[rounds.length - 1][1];
  const backing = last.filter((t) => t.label === state.label);
  const seen = new Map();
  for (const t of backing.length ? backing : last) {
    for (const e of t.evidence || []) {
      const key = e.url || `${e.source}:${e.id || e.title}`;
      if (!seen.has(key)) seen.set(key, { ...e, agents: [t.agent] });
      else if (!seen.get(key).agents.includes(t.agent)) seen.get(key).agents.push(t.agent);
    }
  }
  return [...seen.values()];
}

export class DebateView {
  constructor(root) {
    this.root = root;
    this.rounds = h("div", { class: "rounds" });
    this.verdict = h("section", { class: "verdict", hidden: true, "aria-live": "polite" });
    this.root.append(this.rounds, this.verdict);
    this.state = {};
    this.agents = [];
  }

  render(state, finished) {
    this.state = state;
    const rounds = roundsOf(state.turns);
    rounds.forEach(([r, turns], i) => {
      const section = keyed(this.rounds, `round-${r}`, () => h("section", { class: "round" },
        h("h3", { text: `Round ${r}` }), h("div", { class: "turns" }),
        h("p", { class: "consensus muted", text: "…" })));
      const box = section.querySelector(".turns");
      if (!box.children.length) {  // a slot per known debater, filled in place (no reordering)
        for (const agent of this.agents) keyed(box, agent, () => h("article", { class: "turn pending muted", text: `${agent}: waiting…` }));
      }
      for (const t of turns) {
        if (!this.agents.includes(t.agent)) this.agents.push(t.agent);
        const slot = keyed(box, t.agent, () => turnCard(t));
        if (slot.classList.contains("pending")) { const card = turnCard(t); card.dataset.key = t.agent; slot.replaceWith(card); }
        const card = keyed(box, t.agent, () => turnCard(t));
        const score = (state.scores?.[t.agent] || []).find((s) => Number(s.round) === r);
        card.querySelector(".score").textContent = scoreText(score);
      }
      const last = i === rounds.length - 1;
      if (!last || finished || state.stopped_by) {
        section.querySelector(".consensus").textContent = consensusText(turns, last, state);
      }
    });
    if (state.stopped_by || (finished && state.label !== undefined && state.label !== null)) this.showVerdict(state);
  }

  showVerdict(state) {
    const sources = verdictSources(state);
    const rounds = roundsOf(state.turns).length || state.round || 0;
    const how = state.stopped_by ? `decided by ${state.stopped_by}` : "";
    this.verdict.replaceChildren(...[
      h("h3", {}, "Verdict ", labelChip(state.label)),
      h("p", { class: "muted", text: [how, rounds ? `after ${rounds} round${rounds > 1 ? "s" : ""}` : ""].filter(Boolean).join(" ") }),
      (state.answers || []).length ? h("p", { text: `Answers: ${state.answers.join("; ")}` }) : null,
      h("p", { class: "rationale", text: state.rationale || "" }),
      sources.length ? h("div", { class: "sources" }, h("h4", { text: "Evidence behind the verdict" }),
        h("ol", {}, sources.map((e) => h("li", {}, safeLink(e.url, e.title || e.id),
          h("span", { class: "src", text: ` ${e.source || ""}` }),
          h("span", { class: "muted", text: ` (cited by ${e.agents.join(", ")})` }))))) : null,
      (state.flags || []).length ? h("details", { class: "flags" },
        h("summary", { text: `Notes (${state.flags.length})` }),
        h("ul", {}, state.flags.map((f) => h("li", { text: f })))) : null,
      state.ledger?.llm_calls !== undefined ? h("p", { class: "muted small",
        text: `${state.ledger.llm_calls} model calls · ${(state.ledger.prompt_tokens || 0) + (state.ledger.completion_tokens || 0)} tokens` }) : null,
    ].filter(Boolean));
    this.verdict.hidden = false;
  }
}
