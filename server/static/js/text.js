// Text mode (the check_text graph): the text with each sentence marked as its claims finish,
// then the numbered claims with their verdicts, debates and citations. A sentence's citations are
// the passages its claims' verdicts cited; what the debates only retrieved is listed
// apart ("Retrieved, not cited").
import { DebateView, passageKey } from "./debate.js";
import { h, keyed, labelChip, safeLink } from "./dom.js";

const MARK_NAMES = {
  supported: "supported", refuted: "refuted", unverifiable: "unverifiable", no_verdict: "no verdict",
  skipped: "skipped", not_check_worthy: "not check-worthy", no_claim: "no claim", pending: "checking…",
};
const ORDER = ["refuted", "unverifiable", "no_verdict", "skipped", "pending", "supported", "not_check_worthy"];

// A claim's result as a debate state: its evidence is what its verdict cites when the result also
// carries `retrieved` (older results held retrieved passages only, and are shown as such).
function claimDebate(result) {
  if (!("retrieved" in result) || "verdict_evidence" in result) return result;
  return { ...result, verdict_evidence: result.evidence || [], retrieved_evidence: result.retrieved || [] };
}

// Citation number -> "claim N <stance>" for every claim whose verdict cites it.
function citingClaims(claims) {
  const out = new Map();
  for (const c of claims) {
    (c.citations || []).forEach((n, i) => {
      const e = (c.evidence || [])[i] || {};
      const who = `claim ${c.number}${e.stance ? ` ${e.stance}` : ""}`;
      if (!out.has(n)) out.set(n, []);
      if (!out.get(n).includes(who)) out.get(n).push(who);
    });
  }
  return out;
}

// Passages the claims' debates retrieved that no claim's verdict cites.
function retrievedNotCited(check) {
  const cited = new Set([...(check.citations || []).map(passageKey),
    ...(check.claims || []).flatMap((c) => (c.evidence || []).map(passageKey))]);
  const out = new Map();
  for (const c of check.claims || []) {
    for (const e of c.retrieved || []) if (!cited.has(passageKey(e)) && !out.has(passageKey(e))) out.set(passageKey(e), e);
  }
  return [...out.values()];
}

function category(label) {
  return { SUPPORTS: "supported", REFUTES: "refuted" }[label] || "unverifiable";
}

// Sentence index -> mark, from the finished report or from the claims and results so far.
function marks(state) {
  if (state.check?.sentences) return new Map(state.check.sentences.map((s) => [s.index, s.mark]));
  const out = new Map();
  const claims = state.claims;
  for (const s of state.sentences || []) {
    if (!claims) { out.set(s.index, "pending"); continue; }
    const own = claims.filter((c) => (c.sentences || []).includes(s.index)).map((c) => {
      if (c.status === "not_check_worthy") return "not_check_worthy";
      if (c.status === "skipped") return "skipped";
      const result = state.results?.[c.key];
      return result ? category(result.label) : "pending";
    });
    out.set(s.index, ORDER.find((m) => own.includes(m)) || "no_claim");
  }
  return out;
}

export class TextView {
  constructor(root) {
    this.root = root;
    this.textBox = h("p", { class: "checked-text", "aria-label": "The text, sentence by sentence" });
    this.legend = h("p", { class: "legend muted small" },
      ["supported", "refuted", "unverifiable", "pending"].map((m) => h("span", { class: `mark mark-${m}`, text: MARK_NAMES[m] })));
    this.claims = h("ol", { class: "claims" });
    this.verdict = h("section", { class: "verdict", hidden: true, "aria-live": "polite" });
    this.root.append(this.textBox, this.legend, this.claims, this.verdict);
  }

  render(state) {
    this.renderText(state);
    const claims = state.check?.claims || state.claims || [];
    claims.forEach((c, i) => {
      const item = keyed(this.claims, c.key, () => h("li", { class: "claim" },
        h("div", { class: "claim-head" }, h("span", { class: "claim-status" }), " ", h("span", { text: c.claim })),
        h("div", { class: "claim-body" })));
      const result = state.results?.[c.key] || (c.label !== undefined ? c : null);
      const status = item.querySelector(".claim-status");
      status.replaceChildren(c.status !== "verify" ? h("span", { class: "chip chip-none", text: MARK_NAMES[c.status] || c.status })
        : result ? labelChip(result.label) : h("span", { class: "chip chip-none", text: "checking…" }));
      const body = item.querySelector(".claim-body");
      if (result && !body.dataset.done) {
        body.dataset.done = "1";
        if (c.citations?.length) body.dataset.cited = "1";
        const numbers = c.citations?.length ? ` · cites ${c.citations.map((n) => `[${n}]`).join(" ")}` : "";
        const debate = h("details", { class: "claim-debate" },
          h("summary", { text: `Debate: ${result.rounds ?? "?"} round(s), ${result.stopped_by || ""}${numbers}` }));
        body.append(h("p", { class: "rationale", text: result.rationale || "" }), debate);
        new DebateView(debate).render(claimDebate({ ...result, label: result.label }), true);
      } else if (result && c.citations?.length && !body.dataset.cited) {
        body.dataset.cited = "1";
        body.querySelector("summary").append(` · cites ${c.citations.map((n) => `[${n}]`).join(" ")}`);
      }
      item.dataset.index = String(i + 1);
    });
    if (state.check) this.showVerdict(state);
  }

  renderText(state) {
    const text = state.text || state.claim || "";
    const sentences = state.check?.sentences || state.sentences;
    if (!sentences?.length) {
      if (!this.textBox.childNodes.length) this.textBox.textContent = text;
      return;
    }
    const byIndex = marks(state);
    if (this.textBox.dataset.split !== "1") {
      this.textBox.replaceChildren();
      let at = 0;
      for (const s of sentences) {
        if (s.start > at) this.textBox.append(text.slice(at, s.start));
        this.textBox.append(h("span", { class: "sentence", "data-index": s.index, text: s.text }));
        at = s.end;
      }
      if (at < text.length) this.textBox.append(text.slice(at));
      this.textBox.dataset.split = "1";
    }
    for (const span of this.textBox.querySelectorAll(".sentence")) {
      const mark = byIndex.get(Number(span.dataset.index)) || "pending";
      span.className = `sentence mark mark-${mark}`;
      span.title = MARK_NAMES[mark] || mark;
    }
  }

  showVerdict(state) {
    const check = state.check;
    const counts = check.counts || {};
    const claims = check.claims || [];
    const citing = citingClaims(claims);
    const retrieved = claims.some((c) => "retrieved" in c) ? retrievedNotCited(check) : null;
    const uncited = claims.filter((c) => c.status === "verify" && c.label && !(c.citations || []).length).map((c) => c.number);
    this.verdict.replaceChildren(...[
      h("h3", {}, "Text verdict ", labelChip(state.label), " ", h("span", { class: "muted", text: check.verdict || "" })),
      h("p", { class: "rationale", text: state.rationale || "" }),
      h("p", { class: "muted small", text: ["supported", "refuted", "unverifiable", "skipped", "not_check_worthy"]
        .map((k) => `${counts[k] || 0} ${MARK_NAMES[k]}`).join(" · ") }),
      (check.citations || []).length ? h("div", { class: "sources" }, h("h4", { text: "Citations" }),
        h("p", { class: "muted small", text: "The passages the claims' verdicts cite." }),
        h("ol", { class: "cited-evidence" }, check.citations.map((e) => h("li", { value: e.n }, safeLink(e.url, e.title || e.id),
          h("span", { class: "src", text: ` ${e.source || ""}` }),
          citing.has(e.n) ? h("span", { class: "muted", text: ` · ${citing.get(e.n).join(", ")}` }) : null,
          e.snippet ? h("div", { class: "snippet", text: e.snippet }) : null)))) : null,
      retrieved ? h("div", { class: "retrieved" }, h("h4", { text: `Retrieved, not cited (${retrieved.length})` }),
        retrieved.length ? h("ul", {}, retrieved.map((e) => h("li", { title: e.text || "" }, safeLink(e.url, e.title || e.id || "(untitled)"),
          h("span", { class: "src", text: ` ${e.source || ""}` })))) : h("p", { class: "muted small", text: "none" })) : null,
      uncited.length ? h("p", { class: "uncited-verdict warn small",
        text: `Uncited verdict: claim${uncited.length > 1 ? "s" : ""} ${uncited.join(", ")} cite${uncited.length > 1 ? "" : "s"} no passage.` }) : null,
    ].filter(Boolean));
    this.verdict.hidden = false;
  }
}
