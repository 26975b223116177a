// The review queue: runs that stopped at their review step (theirs and their team's), oldest
// first; a reviewer approves, edits or rejects each draft verdict. Every server string is shown
// through textContent (dom.js), never parsed as HTML.
import { api } from "./api.js";
import { fmt, h, labelChip, safeLink } from "./dom.js";

const REVIEWER_SLOT = "factdebate.reviewer";
const PAGE = 20;

function reviewerName() { return localStorage.getItem(REVIEWER_SLOT) || ""; }

function scoresOf(scores) {
  const rows = [];
  for (const [agent, list] of Object.entries(scores || {})) {
    const last = Array.isArray(list) && list.length ? list[list.length - 1] : null;
    if (!last || typeof last !== "object") continue;
    const parts = Object.entries(last).filter(([k, v]) => k !== "round" && v !== null && v !== undefined)
      .map(([k, v]) => `${k} ${fmt(v)}`);
    rows.push(h("li", {}, h("span", { class: "agent", text: agent }), ` ${parts.join(", ")}`));
  }
  return rows.length ? h("ul", { class: "review-scores small" }, rows) : null;
}

function evidenceOf(evidence) {
  if (!evidence?.length) return h("p", { class: "muted small", text: "No passage cited." });
  return h("ol", { class: "review-evidence" }, evidence.map((p) => h("li", { "data-id": p.id },
    safeLink(p.url, p.title || p.id || "passage"),
    p.page ? h("span", { class: "src", text: ` · ${p.page}` }) : null,
    h("p", { class: "snippet", text: p.text || "" }))));
}

function outcomeText(result) {
  const who = `${result.decision} by ${result.reviewer}`;
  if (result.status === "done") return `${who}: final label ${result.label ?? "none"}`;
  if (result.status === "next") return `${who}: the text's next claim waits in the queue`;
  return result.error || "the run did not finish";
}

function itemView(item, onDone) {
  const errorLine = h("p", { class: "error review-error", role: "alert", hidden: !item.error, text: item.error || "" });
  const outcome = h("p", { class: "review-outcome", role: "status", hidden: true });
  const labelPick = h("select", { class: "edit-label", "aria-label": "Label" },
    item.labels.map((l) => h("option", { value: l, text: l, selected: l === item.draft.label })));
  const rationale = h("textarea", { class: "edit-rationale", rows: 3, maxlength: 20000, "aria-label": "Rationale" });
  rationale.value = item.draft.rationale || "";
  const note = h("input", { class: "review-note", type: "text", maxlength: 2000, "aria-label": "Note", placeholder: "Note (optional)" });
  const editBox = h("div", { class: "edit-box", hidden: true },
    h("label", { text: "Label" }), labelPick, h("label", { text: "Rationale" }), rationale);
  const buttons = [];
  const el = h("li", { class: "review-item", "data-thread": item.thread_id });

  async function decide(decision) {
    const reviewer = document.querySelector("#reviewer").value.trim();
    errorLine.hidden = true;
    if (!reviewer) {
      errorLine.textContent = "Write your name as the reviewer first.";
      errorLine.hidden = false;
      document.querySelector("#reviewer").focus();
      return;
    }
    localStorage.setItem(REVIEWER_SLOT, reviewer);
    const body = { decision, reviewer };
    if (note.value.trim()) body.note = note.value.trim();
    if (decision === "edit") {
      body.label = labelPick.value;
      if (rationale.value.trim() && rationale.value !== item.draft.rationale) body.rationale = rationale.value;
    }
    buttons.forEach((b) => { b.disabled = true; });
    try {
      const result = await api.decideReview(item.thread_id, body);
      if (result.status === "done" || result.status === "next") {
        el.classList.add("reviewed");
        el.dataset.outcome = result.decision;
        const chip = result.status === "done" ? labelChip(result.label ?? null) : "";
        outcome.replaceChildren(chip, ` ${outcomeText(result)}`);
        outcome.hidden = false;
        editBox.hidden = true;
        note.remove();
        for (const b of buttons) b.remove();
        onDone(result);
        return;
      }
      errorLine.textContent = outcomeText(result);
      errorLine.hidden = false;
    } catch (err) {
      errorLine.textContent = err.message;
      errorLine.hidden = false;
    }
    buttons.forEach((b) => { b.disabled = false; });
  }

  const approve = h("button", { type: "button", class: "approve", onclick: () => decide("approve"), text: "Approve" });
  const edit = h("button", { type: "button", class: "edit", text: "Edit…" });
  const save = h("button", { type: "button", class: "save-edit", hidden: true, onclick: () => decide("edit"), text: "Save edit" });
  const reject = h("button", { type: "button", class: "reject", onclick: () => decide("reject"), text: "Reject" });
  edit.addEventListener("click", () => { editBox.hidden = !editBox.hidden; save.hidden = editBox.hidden; });
  buttons.push(approve, edit, save, reject);
  const when = new Date(item.created_at).toLocaleString();
  el.append(
    h("p", { class: "review-claim subject", text: item.claim }),
    h("p", { class: "muted small" }, `${item.framework} · ${item.owner} · ${when}`),
    h("div", { class: "review-draft" },
      h("h3", {}, "Draft verdict ", labelChip(item.draft.label)),
      h("p", { class: "rationale", text: item.draft.rationale }),
      h("h4", { text: "Cited evidence" }), evidenceOf(item.draft.evidence),
      h("h4", { text: "Debate" }), h("p", { class: "review-summary small", text: item.draft.summary }),
      scoresOf(item.draft.scores)),
    editBox, note, h("div", { class: "controls" }, buttons), errorLine, outcome);
  return el;
}

export async function showReviews(root) {
  const reviewer = h("input", { id: "reviewer", type: "text", maxlength: 200, autocomplete: "name", value: reviewerName() });
  reviewer.addEventListener("change", () => localStorage.setItem(REVIEWER_SLOT, reviewer.value.trim()));
  const status = h("p", { class: "muted", role: "status", text: "Loading the queue…" });
  const list = h("ol", { class: "review-queue" });
  const decided = h("ol", { class: "review-decided" });
  const decidedBox = h("section", { class: "decided-box", hidden: true },
    h("h3", { text: "Decided just now" }), decided);
  let total = 0;
  const more = h("button", { type: "button", class: "more", hidden: true, text: "More" });
  const describe = () => {
    status.textContent = total ? `${total} waiting for review, oldest first` : "Nothing waits for review.";
  };
  // An item's view; once decided it leaves the queue with its outcome, and a text check's next
  // claim (same thread) takes its place.
  function view(item) {
    const el = itemView(item, (result) => {
      if (result.status === "next") el.replaceWith(view(result.item));
      else { total -= 1; el.remove(); }
      decided.prepend(el);
      decidedBox.hidden = false;
      more.hidden = list.children.length >= total;
      describe();
    });
    return el;
  }
  async function load() {
    let page;
    try {
      page = await api.reviews(PAGE, list.children.length);
    } catch (err) {
      status.replaceChildren(h("span", { class: "error", role: "alert", text: err.message }));
      return;
    }
    total = page.total;
    const shown = new Set([...list.children].map((el) => el.dataset.thread));
    for (const item of page.items) {
      if (shown.has(item.thread_id)) continue;
      list.append(view(item));
    }
    more.hidden = list.children.length >= total;
    describe();
  }
  more.addEventListener("click", () => load());
  root.replaceChildren(h("h2", { text: "Review queue" }),
    h("div", { class: "field reviewer-field" }, h("label", { for: "reviewer", text: "Reviewer name" }), reviewer),
    status, list, more, decidedBox);
  await load();
}
