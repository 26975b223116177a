// A debate as it streams: rounds of turns (query, evidence, answer, scores), the consensus check
// or the judge, the verdict with the evidence behind it. Content is only ever appended below what
// is already shown, so nothing moves while a run streams.
//
// The evidence behind the verdict is what the deciding replies CITED
// (state.verdict_evidence: who cited each passage, with which stance); passages only retrieved
// (state.retrieved_evidence) are listed apart under "Retrieved, not cited" and never called cited.
// A turn's card marks the passages that turn cited (turn.cited holds their keys).
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
    else if (["turns", "flags", "extracted", "citations"].includes(key)) state[key] = [...(state[key] || []), ...(value || [])];
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

// The identity of a passage across prompts, as factdebate.core.citations.passage_key.
export function passageKey(e) {
  return String(e.id || e.url || e.title || (e.text || "").slice(0, 80));
}

function evidenceList(evidence, cited) {
  const keys = new Set(cited || []);
  const items = (evidence || []).map((e) => {
    const isCited = keys.has(passageKey(e));
    return h("li", { title: e.text || "", class: isCited ? "cited" : null },
      safeLink(e.url, e.title || e.id || "(untitled)"),
      h("span", { class: "src", text: ` ${e.source || ""}` }),
      typeof e.score === "number" ? h("span", { class: "muted small", text: ` ${fmt(e.score)}` }) : null,
      isCited ? h("span", { class: "cited-badge", text: "cited" }) : null);
  });
  const nCited = (evidence || []).filter((e) => keys.has(passageKey(e))).length;
  const texts = (evidence || []).filter((e) => e.text).map((e) => h("li", { class: "snippet", text: e.text }));
  return h("div", { class: "evidence" },
    h("span", { class: "k", text: `Evidence (${items.length}${cited ? ` · ${nCited} cited` : ""})` }),
    h("ol", {}, items),
    texts.length ? h("details", {}, h("summary", { text: "Passage texts" }), h("ol", {}, texts)) : null);
}

function turnCard(turn) {
  return h("article", { class: "turn", "aria-label": `${turn.agent}, round ${turn.round}` },
    h("header", {}, h("strong", { class: "agent", text: turn.agent }), " ", labelChip(turn.label),
      turn.parse && turn.parse !== "structured" ? h("span", { class: "muted", text: ` (${turn.parse})` }) : null),
    h("div", { class: "score muted", text: "" }),
    turn.query ? h("p", { class: "query" }, h("span", { class: "k", text: "Query " }), turn.query) : null,
    (turn.evidence || []).length ? evidenceList(turn.evidence, turn.cited) : null,
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

// Every distinct passage of the turns (a run without citation records: nothing is called cited).
function retrievedOfTurns(turns) {
  const seen = new Map();
  for (const t of turns || []) for (const e of t.evidence || []) if (!seen.has(passageKey(e))) seen.set(passageKey(e), e);
  return [...seen.values()];
}

const STANCE_KIND = { supports: "sup", refutes: "ref" };

function stanceChip(stance) {
  if (!stance) return null;
  return h("span", { class: `chip stance chip-${STANCE_KIND[stance] || "nei"}`, text: stance });
}

// "Evidence behind the verdict" (cited) and "Retrieved, not cited", with the citation checks.
// verdict_evidence is written by the graph's last node: until then (a streaming run) nothing is
// shown; a finished run without it (older threads) lists what it retrieved, not called cited.
export function verdictEvidence(state, finished) {
  const cited = state.verdict_evidence;
  if (!Array.isArray(cited)) {
    if (!finished) return [];
    const seen = retrievedOfTurns(state.turns);
    return seen.length ? [h("div", { class: "retrieved" },
      h("h4", { text: `Retrieved (${seen.length}; this run has no citation record)` }),
      h("ul", {}, seen.map((e) => h("li", {}, safeLink(e.url, e.title || e.id || "(untitled)"),
        h("span", { class: "src", text: ` ${e.source || ""}` })))))] : [];
  }
  const hasVerdict = (state.label !== undefined && state.label !== null) || (state.answers || []).length;
  const retrieved = state.retrieved_evidence || [];
  if (!cited.length && !retrieved.length) {  // nothing was retrieved (e.g. a no-retrieval baseline)
    return [h("p", { class: "sources muted small", text: "No passages were retrieved: the verdict rests on none." })];
  }
  const out = [h("div", { class: "sources" },
    h("h4", { text: `Evidence behind the verdict (${cited.length} cited)` }),
    cited.length ? h("ol", { class: "cited-evidence" }, cited.map((e) => h("li", { title: e.text || "" },
      safeLink(e.url, e.title || e.id || "(untitled)"),
      h("span", { class: "src", text: ` ${e.source || ""}` }),
      (e.cited_by || []).length ? h("span", { class: "muted", text: ` cited by ${e.cited_by.join(", ")} ` }) : " ",
      stanceChip(e.stance),
      e.text ? h("div", { class: "snippet", text: e.text.length > 240 ? `${e.text.slice(0, 239)}…` : e.text }) : null)))
      : h("p", { class: hasVerdict ? "uncited-verdict warn" : "muted",
        text: hasVerdict ? "Uncited verdict: no reply behind it cited a passage it was shown." : "No verdict, no evidence." }))];
  out.push(h("div", { class: "retrieved" }, h("h4", { text: `Retrieved, not cited (${retrieved.length})` }),
    retrieved.length ? h("ul", {}, retrieved.map((e) => h("li", { title: e.text || "" },
      safeLink(e.url, e.title || e.id || "(untitled)"), h("span", { class: "src", text: ` ${e.source || ""}` }))))
      : h("p", { class: "muted small", text: "none" })));
  const line = citationChecks(state);
  if (line) out.push(h("p", { class: `citation-checks small ${line.problem ? "warn" : "muted"}`, text: line.text }));
  return out;
}

// One line on the citation checks: replies that cited, uncited ones, hallucinated ids dropped.
export function citationChecks(state) {
  const ledger = state.ledger || {};
  const cited = ledger.replies_cited || 0;
  const uncited = ledger.replies_uncited || 0;
  const unshown = ledger.citations_unshown || 0;
  if (!cited && !uncited && !unshown) return null;
  const parts = [`${cited} of ${cited + uncited} labelled replies cited a passage`];
  if (unshown) parts.push(`${unshown} cited id(s) never shown were dropped (hallucinated citations)`);
  return { text: `Citation checks: ${parts.join("; ")}`, problem: Boolean(uncited || unshown) };
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
    if (state.stopped_by || (finished && state.label !== undefined && state.label !== null)) this.showVerdict(state, finished);
  }

  showVerdict(state, finished) {
    const rounds = roundsOf(state.turns).length || state.round || 0;
    const how = state.stopped_by ? `decided by ${state.stopped_by}` : "";
    this.verdict.replaceChildren(...[
      h("h3", {}, "Verdict ", labelChip(state.label)),
      h("p", { class: "muted", text: [how, rounds ? `after ${rounds} round${rounds > 1 ? "s" : ""}` : ""].filter(Boolean).join(" ") }),
      (state.answers || []).length ? h("p", { text: `Answers: ${state.answers.join("; ")}` }) : null,
      h("p", { class: "rationale", text: state.rationale || "" }),
      ...verdictEvidence(state, finished),
      (state.flags || []).length ? h("details", { class: "flags" },
        h("summary", { text: `Notes (${state.flags.length})` }),
        h("ul", {}, state.flags.map((f) => h("li", { text: f })))) : null,
      state.ledger?.llm_calls !== undefined ? h("p", { class: "muted small",
        text: `${state.ledger.llm_calls} model calls · ${(state.ledger.prompt_tokens || 0) + (state.ledger.completion_tokens || 0)} tokens` }) : null,
    ].filter(Boolean));
    this.verdict.hidden = false;
  }
}
