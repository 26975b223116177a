// One run on one thread: create, stream, stop (cancel with interrupt), resume (input null).
import { ApiError, api, streamRun } from "./api.js";
import { DebateView, mergeUpdate } from "./debate.js";
import { h } from "./dom.js";
import { TextView } from "./text.js";

const MAX_STEPS = 8;

export class RunPane {
  // spec: {mode: "claim"|"text", graph, title, model, context, input}; frameworks: for "compare"
  constructor(container, spec, { frameworks = [], onCompare = null, onClose = null } = {}) {
    this.spec = spec;
    this.state = {};
    this.steps = [];
    this.status = h("span", { class: "status", role: "status", text: "ready" });
    this.stopBtn = h("button", { type: "button", class: "stop", disabled: true, onclick: () => this.stop() }, "Stop");
    this.resumeBtn = h("button", { type: "button", class: "resume", disabled: true, onclick: () => this.resume() }, "Resume");
    const controls = [this.stopBtn, this.resumeBtn];
    if (onCompare && spec.mode === "claim") {
      this.compareSel = h("select", { "aria-label": "Framework to compare with" },
        frameworks.filter((f) => f.name !== spec.graph).map((f) => h("option", { value: f.name, text: f.title })));
      controls.push(h("span", { class: "compare" }, this.compareSel,
        h("button", { type: "button", class: "compare-run", onclick: () => onCompare(this.compareSel.value) }, "Run beside")));
    }
    if (onClose) controls.push(h("button", { type: "button", class: "close", "aria-label": "Close this run", onclick: () => onClose(this) }, "✕"));
    this.stepsLine = h("p", { class: "steps muted small", "aria-hidden": "true", text: " " });
    this.errorBox = h("p", { class: "error", role: "alert", hidden: true });
    const subject = spec.input?.claim ?? spec.input?.text ?? "";
    this.body = h("div", { class: "pane-body" });
    this.el = h("section", { class: `pane pane-${spec.mode}`, "aria-label": `${spec.title} run` },
      h("header", { class: "pane-head" },
        h("h2", {}, spec.title, h("span", { class: "muted small", text: ` · ${spec.model || "default model"}` })),
        this.status),
      h("div", { class: "controls" }, controls),
      h("p", { class: "subject", text: subject }),
      this.stepsLine, this.body, this.errorBox);
    this.view = spec.mode === "text" ? new TextView(this.body) : new DebateView(this.body);
    container.append(this.el);
  }

  setStatus(text, kind) {
    this.status.textContent = text;
    this.status.className = `status status-${kind || "idle"}`;
    this.el.dataset.status = kind || "idle";
  }

  showError(message) {
    this.errorBox.textContent = message;
    this.errorBox.hidden = !message;
  }

  render(finished = false) {
    this.view.render(this.state, finished);
    const rounds = Math.max(0, ...(this.state.turns || []).map((t) => Number(t.round) || 0));
    if (this.running) this.setStatus(rounds ? `running · round ${rounds}` : "running", "running");
  }

  onEvent(event, data) {
    if (event === "metadata" && data?.run_id) this.runId = data.run_id;
    else if (event === "values" && data && typeof data === "object") this.state = data;
    else if (event === "updates" && data && typeof data === "object") {
      for (const [node, update] of Object.entries(data)) {
        if (node === "__interrupt__") this.waitingReview = (update || []).some((i) => i?.value?.kind === "review");
        if (node.startsWith("__")) continue;
        this.steps.push(node);
        mergeUpdate(this.state, update);
      }
      const shown = this.steps.slice(-MAX_STEPS);
      this.stepsLine.textContent = `${this.steps.length > MAX_STEPS ? "… › " : ""}${shown.join(" › ")}`;
    } else return;
    this.render();
  }

  async start() {
    this.setStatus("starting", "running");
    try {
      const thread = await api.createThread({
        fd_mode: this.spec.mode, fd_graph: this.spec.graph, fd_model: this.spec.model || "",
        fd_context: this.spec.context,
      });
      this.threadId = thread.thread_id;
      this.el.dataset.thread = this.threadId;
    } catch (err) {
      this.fail(err);
      return;
    }
    await this.run(this.spec.input);
  }

  async run(input) {
    this.running = true;
    this.stopping = false;
    this.waitingReview = false;
    this.showError("");
    this.stopBtn.disabled = false;
    this.resumeBtn.disabled = true;
    this.setStatus("running", "running");
    try {
      await streamRun(this.threadId, { assistant_id: this.spec.graph, input, context: this.spec.context },
        (event, data) => this.onEvent(event, data));
      this.running = false;
      if (this.stopping) this.stopped();
      else if (this.waitingReview) { this.render(true); this.setStatus("waiting for review", "review"); }
      else { this.render(true); this.setStatus("done", "done"); }
    } catch (err) {
      this.running = false;
      if (this.stopping) this.stopped(); else this.fail(err);
    } finally {
      this.stopBtn.disabled = true;
    }
  }

  stopped() {
    this.setStatus("stopped", "stopped");
    this.resumeBtn.disabled = false;
  }

  fail(err) {
    this.running = false;
    this.setStatus("failed", "failed");
    this.showError(err instanceof ApiError || err?.message ? err.message : String(err));
    this.resumeBtn.disabled = !this.threadId;
  }

  async stop() {
    if (!this.runId || !this.threadId) return;
    this.stopping = true;
    this.stopBtn.disabled = true;
    this.setStatus("stopping", "running");
    try {
      await api.cancel(this.threadId, this.runId);
    } catch (err) {
      this.stopping = false;
      this.showError(err.message);
    }
  }

  async resume() {
    this.resumeBtn.disabled = true;
    await this.run(null);
  }

  // A thread from the history: show its saved state; an interrupted or failed one can resume.
  openSaved(thread) {
    this.threadId = thread.thread_id;
    this.el.dataset.thread = this.threadId;
    this.state = thread.values || {};
    this.render(thread.status === "idle");
    const kind = { idle: "done", interrupted: "stopped", error: "failed", busy: "running" }[thread.status] || "idle";
    this.setStatus(thread.status === "busy" ? "running elsewhere" : kind, kind);
    if (thread.status === "error") this.showError("the last run of this thread failed; Resume retries it from its last step");
    this.resumeBtn.disabled = !(thread.status === "interrupted" || thread.status === "error");
    const pending = Object.values(thread.interrupts || {}).flat();
    if (thread.status === "interrupted" && pending.some((i) => i?.value?.kind === "review")) {
      this.render(true);
      this.setStatus("waiting for review", "review"); // decided in the Review queue tab
      this.resumeBtn.disabled = true;
    }
  }
}

