"""Self-contained HTML reports: a checked text (``factdebate check --out``) and an eval run.

One file, no network: CSS and the few lines of JavaScript are inline, nothing is loaded from
anywhere (links to evidence pages are plain ``<a>`` links, ``http(s)`` only). Every value is
HTML-escaped. A checked text shows its sentences highlighted by verdict; clicking a sentence opens
the debates of its claims (rounds, queries, evidence, answers, scores, the deciding role's
verdict). ``write_eval_html(out_dir)`` renders an evaluation folder the same way, one drill-down
per item, reading each item's final state from ``OUT/checkpoints.sqlite`` when it is there (the
results rows keep labels, not the debate) and the results row otherwise.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from html import escape
from pathlib import Path
from typing import Any

MARKS = {"supported": "✓", "refuted": "✗", "unverifiable": "?", "no_verdict": "?",
         "skipped": "…", "not_check_worthy": "–", "no_claim": ""}

CSS = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}h3{font-size:1rem}
.text{white-space:pre-wrap;background:#fafafa;border:1px solid #ddd;padding:1rem;line-height:1.9}
.s{padding:.1rem .15rem;border-radius:3px;cursor:pointer}
.supported{background:#d8f3dc}.refuted{background:#ffd6d6}.unverifiable,.no_verdict{background:#fff3bf}
.skipped{background:#e5dbff}.not_check_worthy,.no_claim{color:#666}
sup{font-size:.7rem;color:#555}.verdict{font-weight:600}
details.claim{border:1px solid #ddd;border-radius:4px;margin:.5rem 0;padding:.4rem .8rem}
details.claim[open]{background:#fcfcfc}summary{cursor:pointer}
.turn{border-left:3px solid #ccc;margin:.4rem 0;padding:.2rem .6rem}
table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left}
.ev{font-size:.85rem;color:#444}.flag{color:#8a5a00}.ok{color:#1b7a35}.bad{color:#b00020}
"""

JS = """
document.addEventListener('click', function (e) {
  var s = e.target.closest('[data-claims]');
  if (!s) return;
  var first = null;
  s.getAttribute('data-claims').split(' ').forEach(function (n) {
    var d = document.getElementById(s.getAttribute('data-prefix') + 'claim-' + n);
    if (d) { d.open = true; first = first || d; }
  });
  if (first) first.scrollIntoView({behavior: 'smooth', block: 'start'});
});
"""


def _e(value: Any) -> str:
    return escape(str(value if value is not None else ""), quote=True)


def _link(url: str) -> str:
    if url.startswith(("http://", "https://")):
        return f'<a href="{_e(url)}" rel="noreferrer noopener">{_e(url)}</a>'
    return _e(url)


def page(title: str, body: str) -> str:
    """A complete HTML document with the inline stylesheet and script."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{_e(title)}</title><style>{CSS}</style></head><body>{body}"
            f"<script>{JS}</script></body></html>\n")


def _scores(scores: dict[str, Any]) -> str:
    rows = []
    for agent, value in sorted((scores or {}).items()):
        per_round = value.get("rounds", []) if isinstance(value, dict) else value
        for row in per_round or []:
            cells = ", ".join(f"{k}={v:.2f}" for k, v in row.items()
                              if k != "round" and isinstance(v, int | float))
            rows.append(f"<tr><td>{_e(agent)}</td><td>{_e(row.get('round', ''))}</td>"
                        f"<td>{_e(cells)}</td></tr>")
    if not rows:
        return ""
    return ("<table class='scores'><tr><th>agent</th><th>round</th><th>scores</th></tr>"
            + "".join(rows) + "</table>")


def _evidence(evidence: Iterable[dict[str, Any]]) -> str:
    items = [f"<li><b>{_e(e.get('title'))}</b> ({_e(e.get('source'))}) {_link(e.get('url') or '')}"
             f"<br>{_e(' '.join(str(e.get('text') or e.get('snippet') or '').split())[:600])}</li>"
             for e in evidence]
    return f"<ul class='ev'>{''.join(items)}</ul>" if items else ""


def debate_html(result: dict[str, Any]) -> str:
    """One claim's debate: the deciding verdict, then every round's turns and the scores."""
    parts = [f"<p><span class='verdict'>{_e(result.get('label') or 'no verdict')}</span> "
             f"({_e(result.get('stopped_by'))}, {_e(result.get('rounds', result.get('round')))} "
             f"round(s))</p><p class='judge'>{_e(result.get('rationale'))}</p>"]
    turns = result.get("turns") or []
    for rnd in sorted({int(t.get("round") or 0) for t in turns}):
        parts.append(f"<h4>Round {rnd}</h4>")
        for t in (t for t in turns if int(t.get("round") or 0) == rnd):
            query = f"<br>query: <i>{_e(t.get('query'))}</i>" if t.get("query") else ""
            parts.append(f"<div class='turn'><b>{_e(t.get('agent'))}</b>: "
                         f"{_e(t.get('label') or 'no label')}{query}<br>{_e(t.get('answer'))}"
                         f"{_evidence(t.get('evidence') or [])}</div>")
    parts.append(_scores(result.get("scores") or {}))
    parts += [f"<p class='flag'>note: {_e(f)}</p>" for f in result.get("flags") or []]
    return "".join(parts)


def _text_html(check: dict[str, Any], prefix: str) -> str:
    text, pos, out = check.get("text") or "", 0, []
    for s in check.get("sentences") or []:
        out.append(_e(text[pos:s["start"]]))
        mark = s.get("mark", "no_claim")
        cites = "".join(f"[{n}]" for n in s.get("citations") or [])
        claims = " ".join(map(str, s.get("claims") or []))
        attrs = f' data-claims="{_e(claims)}" data-prefix="{_e(prefix)}"' if claims else ""
        out.append(f'<span class="s {_e(mark)}" title="{_e(mark.replace("_", " "))}"{attrs}>'
                   f"{_e(MARKS.get(mark, ''))} {_e(text[s['start']:s['end']])}</span>"
                   + (f"<sup>{_e(cites)}</sup>" if cites else ""))
        pos = s["end"]
    out.append(_e(text[pos:]))
    return f"<div class='text'>{''.join(out)}</div>"


def check_html(check: dict[str, Any], *, prefix: str = "") -> str:
    """The body of a checked text: verdict and counts, marked text, claims, citations."""
    counts = check.get("counts") or {}
    summary = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in counts.items())
    parts = [f"<p><span class='verdict'>{_e(check.get('verdict'))}</span> "
             f"(verifier: {_e(check.get('framework'))}) - {_e(summary)}</p>",
             _text_html(check, prefix), "<h3>Claims</h3>"]
    for c in check.get("claims") or []:
        cites = "".join(f"[{n}]" for n in c.get("citations") or [])
        label = c.get("label") or c.get("category", "").replace("_", " ")
        body = (debate_html(c) if c.get("status") == "verify" else
                f"<p>{_e(c.get('category', '').replace('_', ' '))}: {_e(c.get('reason'))}</p>")
        parts.append(f"<details class='claim' id='{_e(prefix)}claim-{_e(c.get('number'))}'>"
                     f"<summary><span class='s {_e(c.get('category'))}'>#{_e(c.get('number'))}"
                     f" {_e(label)}</span> {_e(c.get('claim'))} <sup>{_e(cites)}</sup></summary>"
                     f"{body}</details>")
    items = [f"<li value='{_e(c['n'])}'><b>{_e(c.get('title'))}</b> ({_e(c.get('source'))}) "
             f"{_link(c.get('url') or '')}<br><span class='ev'>{_e(c.get('snippet'))}</span></li>"
             for c in check.get("citations") or []]
    if items:
        parts.append(f"<h3>Citations</h3><ol class='citations'>{''.join(items)}</ol>")
    return "".join(parts)


def render_check_html(result: dict[str, Any]) -> str:
    """The report page of ``factdebate check`` for its result object."""
    check = result.get("check") or {}
    flags = "".join(f"<p class='flag'>note: {_e(f)}</p>" for f in result.get("flags") or [])
    ledger = result.get("ledger") or {}
    foot = (f"<p class='ev'>LLM calls {_e(ledger.get('llm_calls', 0))}, thread "
            f"{_e(result.get('thread_id'))}, models {_e(json.dumps(result.get('models') or {}))}"
            f", git {_e(result.get('git_sha'))}</p>")
    return page("factdebate check", f"<h1>Checked text: {_e(check.get('verdict'))}</h1>"
                f"{check_html(check)}{flags}{foot}")


def write_check_html(result: dict[str, Any], path: Path) -> Path:
    """Write the report of a checked text to ``path`` (its folder must exist)."""
    path.write_text(render_check_html(result), encoding="utf-8")
    return path


def _final_state(db: Path, thread_id: str) -> dict[str, Any]:
    """The thread's last checkpointed values in an eval folder's SQLite database ({} if none)."""
    if not db.is_file() or not thread_id:
        return {}
    from langgraph.checkpoint.sqlite import SqliteSaver

    with sqlite3.connect(f"file:{db}?mode=ro", uri=True, check_same_thread=False) as conn:
        saved = SqliteSaver(conn).get_tuple(
            {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    return dict((saved.checkpoint or {}).get("channel_values") or {}) if saved else {}


def _item_html(n: int, row: dict[str, Any], state: dict[str, Any]) -> str:
    gold, pred = (row.get("gold") or {}).get("label"), (row.get("prediction") or {}).get("label")
    ok = "ok" if gold is not None and gold == pred else "bad"
    head = (f"<h2 id='item-{n}'>{_e(row.get('item_id'))} <span class='{ok}'>gold {_e(gold)} / "
            f"predicted {_e(pred)}</span></h2><p>{_e(row.get('claim'))}</p>")
    if row.get("status") != "ok":
        return head + f"<p class='bad'>error: {_e((row.get('error') or {}).get('message'))}</p>"
    if state.get("check"):
        return head + check_html(state["check"], prefix=f"i{n}-")
    result = {"label": pred, "rationale": (row.get("prediction") or {}).get("rationale"),
              "rounds": row.get("rounds"), "stopped_by": row.get("stopped_by"),
              "turns": state.get("turns") or [], "scores": state.get("scores") or {},
              "flags": row.get("flags") or []}
    body = debate_html(result)
    if not state and row.get("contexts"):
        body += "<p>Final-round evidence:</p>" + _evidence({"text": c} for c in row["contexts"])
    return head + f"<details class='claim' id='i{n}-claim-1'><summary>debate</summary>{body}</details>"


def write_eval_html(out_dir: Path) -> Path:
    """``OUT/report.html`` for an evaluation folder: a summary table and one drill-down per item."""
    from factdebate.evaluation.results import RESULTS, read_results

    out_dir = Path(out_dir)
    rows = read_results(out_dir / RESULTS)
    db = out_dir / "checkpoints.sqlite"
    table = ["<table><tr><th>#</th><th>item</th><th>gold</th><th>predicted</th></tr>"]
    sections = []
    for n, row in enumerate(rows, start=1):
        pred = (row.get("prediction") or {}).get("label")
        table.append(f"<tr><td><a href='#item-{n}'>{n}</a></td><td>{_e(row.get('item_id'))}</td>"
                     f"<td>{_e((row.get('gold') or {}).get('label'))}</td><td>{_e(pred)}</td></tr>")
        sections.append(_item_html(n, row, _final_state(db, row.get("thread_id") or "")))
    title = f"factdebate eval: {out_dir.name}"
    body = f"<h1>{_e(title)}</h1><p>{len(rows)} item(s)</p>{''.join(table)}</table>{''.join(sections)}"
    path = out_dir / "report.html"
    path.write_text(page(title, body), encoding="utf-8")
    return path
