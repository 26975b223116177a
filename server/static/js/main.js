// Wiring: the key gate, the verify form (claim or text), run panes side by side, history, evals.
import { ApiError, api, session } from "./api.js";
import { h } from "./dom.js";
import { showEvals } from "./evals.js";
import { showHistory } from "./history.js";
import { RunPane } from "./pane.js";
import { showReviews } from "./reviews.js";

const $ = (sel) => document.querySelector(sel);
let options = null;
let panes = [];

function frameworks() {
  return options.frameworks.filter((f) => f.name !== options.text_graph);
}
function titleOf(name) {
  return options?.frameworks.find((f) => f.name === name)?.title || name;
}

// ---- key gate -------------------------------------------------------------------------------
async function signIn(key) {
  const error = $("#key-error");
  error.hidden = true;
  try {
    options = await api.options(key);
  } catch (err) {
    error.textContent = err instanceof ApiError ? err.message : String(err);
    error.hidden = false;
    $("#key").focus();
    return false;
  }
  session.key = key;
  $("#who").textContent = options.identity;
  $("#gate").hidden = true;
  $("#app").hidden = false;
  document.body.classList.add("signed-in");
  $("#tab-evals").hidden = !options.evals;
  setUpForm();
  showTab("verify");
  return true;
}

function signOut() {
  session.key = "";
  options = null;
  panes.forEach((p) => p.el.remove());
  panes = [];
  $("#app").hidden = true;
  document.body.classList.remove("signed-in");
  $("#gate").hidden = false;
  $("#key").value = "";
  $("#key").focus();
}

// ---- tabs -----------------------------------------------------------------------------------
function showTab(name) {
  for (const tab of document.querySelectorAll("[role=tab]")) {
    const on = tab.dataset.tab === name;
    tab.setAttribute("aria-selected", String(on));
    tab.tabIndex = on ? 0 : -1;
    $(`#${tab.getAttribute("aria-controls")}`).hidden = !on;
  }
  if (name === "history") showHistory($("#history"), { titleOf, onOpen: openThread });
  if (name === "evals") showEvals($("#evals"));
  if (name === "reviews") showReviews($("#reviews"));
}

function tabKeys(event) {
  const tabs = [...document.querySelectorAll("[role=tab]:not([hidden])")];
  const i = tabs.indexOf(document.activeElement);
  if (i < 0 || !["ArrowLeft", "ArrowRight"].includes(event.key)) return;
  const next = tabs[(i + (event.key === "ArrowRight" ? 1 : tabs.length - 1)) % tabs.length];
  next.focus();
  showTab(next.dataset.tab);
}

// ---- the form -------------------------------------------------------------------------------
function mode() { return document.querySelector("input[name=mode]:checked").value; }

function setUpForm() {
  const fw = $("#framework");
  fw.replaceChildren(...frameworks().map((f) => h("option", { value: f.name, text: `${f.title}${f.baseline ? " (baseline)" : ""}` })));
  $("#models").replaceChildren(...options.models.map((m) => h("option", { value: m })));
  if (!$("#model").value) $("#model").value = options.models[0] || "";
  $("#model-hint").textContent = `Allowed: ${options.allowed_models.join(", ")}`;
  const textServed = options.frameworks.some((f) => f.name === options.text_graph);
  $("#mode-text").disabled = !textServed;
  $("#mode-text-label").title = textServed ? "" : "this server does not serve the check_text graph";
  onModeChange();
}

function currentGraph() {
  return mode() === "text" ? options.text_graph : $("#framework").value;
}

function onModeChange() {
  const text = mode() === "text";
  $("#framework-label").textContent = text ? "Verifier framework" : "Framework";
  $("#subject-label").textContent = text ? "Text to check" : "Claim";
  $("#subject").placeholder = text ? "Paste a paragraph: each sentence's claims are extracted and verified."
    : "e.g. The Eiffel Tower is located in Paris.";
  renderSettings();
}

function renderSettings() {
  const fw = options.frameworks.find((f) => f.name === currentGraph());
  const box = $("#settings-fields");
  box.replaceChildren();
  for (const f of fw?.fields || []) {
    if (f.model || f.kind === "dict" || f.name === "framework" || f.name === "review") continue;
    const id = `set-${f.name}`;
    let input;
    if (f.choices) {
      input = h("select", { id, "data-field": f.name }, f.choices.map((c) => h("option", { value: c, text: c, selected: c === f.default })));
    } else if (f.kind === "bool") {
      input = h("input", { id, type: "checkbox", "data-field": f.name, checked: Boolean(f.default) });
    } else if (f.kind === "int" || f.kind === "float") {
      input = h("input", { id, type: "number", "data-field": f.name, value: f.default, step: f.kind === "int" ? 1 : "any",
        min: f.range?.[0] ?? undefined, max: f.range?.[1] ?? undefined });
    } else {
      input = h("input", { id, type: "text", "data-field": f.name, value: Array.isArray(f.default) ? f.default.join(",") : f.default });
    }
    box.append(h("div", { class: "field" }, h("label", { for: id, text: f.name }), input,
      h("small", { class: "muted", title: f.description, text: f.description })));
  }
}

function settingsContext() {
  const fw = options.frameworks.find((f) => f.name === currentGraph());
  const context = {};
  for (const el of document.querySelectorAll("#settings-fields [data-field]")) {
    const f = fw.fields.find((x) => x.name === el.dataset.field);
    let value = el.type === "checkbox" ? el.checked : el.value;
    if (f.kind === "int" || f.kind === "float") value = value === "" ? f.default : Number(value);
    if (f.kind === "list") value = String(value).split(",").map((s) => s.trim()).filter(Boolean);
    if (JSON.stringify(value) !== JSON.stringify(f.default)) context[f.name] = value;
  }
  return context;
}

function specFor(graph, subject, extra = {}) {
  const model = $("#model").value.trim();
  const text = mode() === "text";
  const context = { ...settingsContext(), ...extra };
  if (model) context.debater_model = model;
  if ($("#review-first").checked) context.review = true; // the run waits in the review queue
  if (text) context.framework = $("#framework").value;
  return {
    mode: text ? "text" : "claim", graph, model,
    title: text ? `Text check · ${titleOf($("#framework").value)}` : titleOf(graph),
    context, input: text ? { text: subject } : { claim: subject },
  };
}

function addPane(spec, replaceAll) {
  if (replaceAll) { panes.forEach((p) => p.el.remove()); panes = []; }
  if (panes.length >= 2) { panes[1].el.remove(); panes.splice(1, 1); }
  const pane = new RunPane($("#panes"), spec, {
    frameworks: frameworks(), onCompare: (name) => compareWith(pane, name), onClose: closePane,
  });
  panes.push(pane);
  $("#panes").dataset.count = String(panes.length);
  return pane;
}

function closePane(pane) {
  pane.el.remove();
  panes = panes.filter((p) => p !== pane);
  $("#panes").dataset.count = String(panes.length);
}

function compareWith(first, name) {
  const spec = { ...first.spec, graph: name, title: titleOf(name),
    context: { ...first.spec.context } };
  addPane(spec, false).start();
}

function submit(event) {
  event.preventDefault();
  const subject = $("#subject").value.trim();
  const error = $("#form-error");
  error.hidden = true;
  if (!subject) {
    error.textContent = mode() === "text" ? "Paste a text to check." : "Write a claim to verify.";
    error.hidden = false;
    $("#subject").focus();
    return;
  }
  addPane(specFor(currentGraph(), subject), true).start();
}

function openThread(thread) {
  const meta = thread.metadata || {};
  const graph = meta.graph_id || meta.fd_graph || "";
  const text = graph === options.text_graph;
  const context = meta.fd_context || {};
  const spec = { mode: text ? "text" : "claim", graph, model: meta.fd_model || context.debater_model || "",
    title: text ? `Text check · ${titleOf(context.framework || "tool_mad")}` : titleOf(graph), context,
    input: text ? { text: thread.values?.text || thread.values?.claim } : { claim: thread.values?.claim } };
  showTab("verify");
  addPane(spec, true).openSaved(thread);
}

// ---- start ----------------------------------------------------------------------------------
window.addEventListener("DOMContentLoaded", () => {
  $("#gate-form").addEventListener("submit", (e) => { e.preventDefault(); signIn($("#key").value.trim()); });
  $("#signout").addEventListener("click", signOut);
  for (const tab of document.querySelectorAll("[role=tab]")) tab.addEventListener("click", () => showTab(tab.dataset.tab));
  $("#tabs").addEventListener("keydown", tabKeys);
  $("#verify-form").addEventListener("submit", submit);
  $("#subject").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) $("#verify-form").requestSubmit();
  });
  for (const r of document.querySelectorAll("input[name=mode]")) r.addEventListener("change", onModeChange);
  $("#framework").addEventListener("change", () => { if (mode() === "claim") renderSettings(); });
  if (session.key) signIn(session.key); else $("#key").focus();
});
