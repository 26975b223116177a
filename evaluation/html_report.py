"""Self-contained HTML reports: a checked text (``factdebate check --out``) and an eval run.

One file, no network: CSS and the few lines of JavaScript are inline, nothing is loaded from
anywhere (links to evidence pages are plain ``<a>`` links, ``http(s)`` only). Every value is
HTML-escaped. A checked text shows its sentences highlighted by verdict; clicking a sentence opens
the debates of its claims (rounds, queries, evidence, answers, scores, the deciding role's
verdict). ``write_eval_html(out_dir)`` renders an evaluation folder the same way, one drill-down
per item, reading each item's final state from ``OUT/checkpoints.sqlite`` when it is there (the
results rows keep labels, not the debate) and the results row otherwise; its summary shows the
run's evidence figures with their n (``evaluation/evidence_metrics.py``) and, per item, the cited
and seen passage counts and whether the gold evidence was cited, only retrieved, or not retrieved.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from html import escape
from pathlib import Path
from typing import Any

from factdebate.core.citations import passage_key
from factdebate.core.notes import summarise
from factdebate.core.readable import excerpt

TURN_EXCERPT_CHARS = 600
"""Characters of a passage shown in a turn (cut at a word, ``core/readable.excerpt``)."""

CITED_EXCERPT_CHARS = 400
"""Characters of a passage shown under "Evidence behind the verdict"."""

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
.cited-mark{color:#1b7a35;font-weight:600}.stance{font-weight:600}
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


def _evidence(evidence: Iterable[dict[str, Any]], cited: Iterable[str] | None = None) -> str:
    """A turn's passages; with ``cited`` (the turn's cited keys) each cited one is marked."""
    keys, items = set(cited or []), []
    for e in evidence:
        mark = ("<li class='cited'><span class='cited-mark'>✓ cited</span> "
                if passage_key(e) in keys else "<li>")
        text = excerpt(str(e.get("text") or e.get("snippet") or ""), TURN_EXCERPT_CHARS)
        items.append(f"{mark}<b>{_e(e.get('title'))}</b> ({_e(e.get('source'))}) "
                     f"{_link(e.get('url') or '')}<br>{_e(text)}</li>")
    return f"<ul class='ev'>{''.join(items)}</ul>" if items else ""


def verdict_evidence_html(result: dict[str, Any]) -> str:
    """The "Evidence behind the verdict" section (the cited passages: who cited each, with which
    stance) and, apart, "Retrieved, not cited" (titles). Nothing for a result that predates
    citations (no ``verdict_evidence``)."""
    cited = result.get("verdict_evidence")
    if cited is None:
        return ""
    retrieved = result.get("retrieved_evidence") or []
    if not cited and not retrieved:
        return "<p class='ev verdict-evidence'>No passages were retrieved: the verdict rests on none.</p>"
    items = []
    for e in cited:
        who = f" cited by {_e(', '.join(e['cited_by']))}" if e.get("cited_by") else ""
        stance = f" · <span class='stance'>{_e(e['stance'])}</span>" if e.get("stance") else ""
        text = excerpt(str(e.get("text") or e.get("snippet") or ""), CITED_EXCERPT_CHARS)
        items.append(f"<li><b>{_e(e.get('title') or e.get('id'))}</b> ({_e(e.get('source'))}) "
                     f"{_link(e.get('url') or '')}{who}{stance}<br><span class='ev'>{_e(text)}</span></li>")
    uncited = ("<p class='bad'>Uncited verdict: no reply behind it cited a passage it was shown.</p>"
               if result.get("label") or result.get("answers") else "<p class='ev'>none</p>")
    titles = "; ".join(str(e.get("title") or e.get("id") or e.get("url") or "") for e in retrieved)
    return (f"<div class='verdict-evidence'><h4>Evidence behind the verdict ({len(cited)} cited)</h4>"
            + (f"<ol class='cited'>{''.join(items)}</ol>" if items else uncited)
            + f"<h4>Retrieved, not cited ({len(retrieved)})</h4>"
            f"<p class='ev retrieved'>{_e(titles or 'none')}</p></div>")


def debate_html(result: dict[str, Any]) -> str:
    """One claim's debate: the deciding verdict, then every round's turns and the scores."""
    parts = [f"<p><span class='verdict'>{_e(result.get('label') or 'no verdict')}</span> "
             f"({_e(result.get('stopped_by'))}, {_e(result.get('rounds', result.get('round')))} "
             f"round(s))</p><p class='judge'>{_e(result.get('rationale'))}</p>",
             verdict_evidence_html(result)]
    turns = result.get("turns") or []
    for rnd in sorted({int(t.get("round") or 0) for t in turns}):
        parts.append(f"<h4>Round {rnd}</h4>")
        for t in (t for t in turns if int(t.get("round") or 0) == rnd):
            query = f"<br>query: <i>{_e(t.get('query'))}</i>" if t.get("query") else ""
            parts.append(f"<div class='turn'><b>{_e(t.get('agent'))}</b>: "
                         f"{_e(t.get('label') or 'no label')}{query}<br>{_e(t.get('answer'))}"
                         f"{_evidence(t.get('evidence') or [], t.get('cited'))}</div>")
    parts.append(_scores(result.get("scores") or {}))
    parts += [f"<p class='flag'>note: {_e(line)}</p>"
              for line in summarise(result.get("flags") or [], turns=len(turns) or None)]
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
        body = (debate_html(claim_debate(c)) if c.get("status") == "verify" else
                f"<p>{_e(c.get('category', '').replace('_', ' '))}: {_e(c.get('reason'))}</p>")
        parts.append(f"<details class='claim' id='{_e(prefix)}claim-{_e(c.get('number'))}'>"
                     f"<summary><span class='s {_e(c.get('category'))}'>#{_e(c.get('number'))}"
                     f" {_e(label)}</span> {_e(c.get('claim'))} <sup>{_e(cites)}</sup></summary>"
                     f"{body}</details>")
    stances = citing_claims(check)
    items = [f"<li value='{_e(c['n'])}'><b>{_e(c.get('title'))}</b> ({_e(c.get('source'))}) "
             f"{_link(c.get('url') or '')}"
             + (f" · <span class='stance'>{_e(', '.join(stances[c['n']]))}</span>"
                if stances.get(c["n"]) else "")
             + f"<br><span class='ev'>{_e(c.get('snippet'))}</span></li>"
             for c in check.get("citations") or []]
    if items:
        parts.append("<h3>Citations</h3><p class='ev'>The passages the claims' verdicts cite.</p>"
                     f"<ol class='citations'>{''.join(items)}</ol>")
    if any("retrieved" in c for c in check.get("claims") or []):
        titles = "; ".join(str(e.get("title") or e.get("id") or e.get("url") or "")
                           for e in retrieved_not_cited(check))
        parts.append(f"<h3>Retrieved, not cited</h3><p class='ev retrieved'>{_e(titles or 'none')}</p>")
    return "".join(parts)


def claim_debate(claim: dict[str, Any]) -> dict[str, Any]:
    """A checked claim as a debate result: its ``evidence`` is what its verdict cites when the
    claim also carries ``retrieved`` (older results only had retrieved passages)."""
    if "retrieved" not in claim or "verdict_evidence" in claim:
        return claim
    return {**claim, "verdict_evidence": claim.get("evidence") or [],
            "retrieved_evidence": claim.get("retrieved") or []}


def citing_claims(check: dict[str, Any]) -> dict[int, list[str]]:
    """Citation number -> ``claim N <stance>`` for every claim whose verdict cites it."""
    out: dict[int, list[str]] = {}
    for c in check.get("claims") or []:
        for n, e in zip(c.get("citations") or [], c.get("evidence") or [], strict=False):
            who = f"claim {c['number']}" + (f" {e['stance']}" if e.get("stance") else "")
            if who not in out.setdefault(n, []):
                out[n].append(who)
    return out


def retrieved_not_cited(check: dict[str, Any]) -> list[dict[str, Any]]:
    """Passages the claims' debates retrieved (``retrieved``) that no claim's verdict cites."""
    cited = {passage_key(c) for c in check.get("citations") or []}
    cited |= {passage_key(e) for c in check.get("claims") or [] for e in c.get("evidence") or []}
    out: dict[str, dict[str, Any]] = {}
    for c in check.get("claims") or []:
        for e in c.get("retrieved") or []:
            if passage_key(e) not in cited:
                out.setdefault(passage_key(e), e)
    return list(out.values())


def render_check_html(result: dict[str, Any]) -> str:
    """The report page of ``factdebate check`` for its result object."""
    check = result.get("check") or {}
    turns = sum(len(c.get("turns") or []) for c in check.get("claims") or [])
    flags = "".join(f"<p class='flag'>note: {_e(line)}</p>"
                    for line in summarise(result.get("flags") or [], turns=turns or None))
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
    from factdebate.core.checkpoint_serde import final_values

    return final_values(db, thread_id) or {}  # read as data: UnsupportedDataError, never code


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
        body += "<p>Final-round passages:</p>" + _evidence({"text": c} for c in row["contexts"])
    return (head + verdict_evidence_html(item_evidence(row, state))
            + f"<details class='claim' id='i{n}-claim-1'><summary>debate</summary>{body}</details>")


def item_evidence(row: dict[str, Any], state: dict[str, Any]) -> dict[str, Any]:
    """An eval item's cited and retrieved passages: from its final state, else from
    its results row (``evidence``/``retrieved``); none for rows that predate citations."""
    label = (row.get("prediction") or {}).get("label")
    answers = (row.get("prediction") or {}).get("answers")
    if state.get("verdict_evidence") is not None:
        return {"label": label, "answers": answers, "verdict_evidence": state["verdict_evidence"],
                "retrieved_evidence": state.get("retrieved_evidence") or []}
    if isinstance(row.get("evidence"), list):
        return {"label": label, "answers": answers, "verdict_evidence": row["evidence"],
                "retrieved_evidence": row.get("retrieved") or []}
    return {}


def _evidence_cells(row: dict[str, Any]) -> str:
    """An item's cited / seen passage counts and whether a complete gold set was cited."""
    from factdebate.evaluation.evidence_metrics import score_row

    if not isinstance(row.get("evidence"), list):
        return "<td>-</td><td>-</td>"
    cited = len(row["evidence"])
    scored = score_row(row)
    mark = "-" if scored is None or scored.gold_cited is None else (
        "<span class='ok'>yes</span>" if scored.gold_cited else
        "<span class='bad'>retrieved, not cited</span>" if scored.gold_retrieved else
        "<span class='bad'>not retrieved</span>")
    return f"<td>{cited} / {cited + len(row.get('retrieved') or [])}</td><td>{mark}</td>"


def _pct_n(value: float | None, n: Any) -> str:
    return "-" if value is None else f"{100 * value:.1f}% (n={_e(n)})"


def evidence_summary_html(rows: list[dict[str, Any]]) -> str:
    """The run's evidence figures (``evidence_metrics.evidence_summary``), each with its n."""
    from factdebate.evaluation.evidence_metrics import evidence_summary

    ev = evidence_summary(rows)
    if not ev:
        return ""
    cells = []
    for level in ("page", "sentence"):
        block = ev.get(level)
        if block:
            cells.append((f"Evidence precision / recall / F1 ({level} level)",
                          f"{_pct_n(block['precision'], block['n'])} / {_pct_n(block['recall'], block['n'])}"
                          f" / {_pct_n(block['f1'], block['n'])}"))
    if ev.get("fever"):
        fever = ev["fever"]
        name = "FEVER score" + (" (page level)" if fever["level"] == "page" else "")
        cells.append((name, _pct_n(fever["score"], fever["n"])))
    ceiling = ev.get("ceiling")
    for level in ("page", "sentence"):
        block = (ceiling or {}).get(level)
        if block:
            cells.append((f"Ceiling: complete gold evidence in the index at all ({level} level)",
                          _pct_n(block["share"], block["n"])))
    if ev.get("hover"):
        cells.append(("HoVer supporting facts EM / F1 (page level)",
                      f"{_pct_n(ev['hover']['em'], ev['hover']['n'])} / "
                      f"{_pct_n(ev['hover']['f1'], ev['hover']['n'])}"))
    if ev.get("retrieval"):
        x = ev["retrieval"]
        cells += [("Gold evidence retrieved (seen by the run)", _pct_n(x["gold_retrieved"], x["n"])),
                  ("Gold evidence cited", _pct_n(x["gold_cited"], x["n"]))]
    c = ev["citations"]
    cells += [("Verdicts without a citation", _pct_n(c["uncited_verdicts"], c["n_verdicts"])),
              ("Rows with a hallucinated (unshown) citation", _pct_n(c["hallucinated"], c["n_rows"]))]
    rows_html = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in cells)
    notes = "".join(f"<p class='ev'>{_e(note)}</p>" for note in ev.get("notes") or [])
    return f"<h2>Evidence</h2><table>{rows_html}</table>{notes}"


def index_head_html(out_dir: Path) -> str:
    """The head of an eval's report.html: the report's loud caveats (demo corpus, low retrieval
    ceiling: ``evaluation/caveats.py``) and the index the run searched
    (``evaluation/index_identity.py``); "" for a folder without a readable run.json."""
    from factdebate.evaluation.caveats import loud_caveats
    from factdebate.evaluation.index_identity import describe
    from factdebate.evaluation.reports import summarize_run

    try:
        run = summarize_run(Path(out_dir))
    except (OSError, ValueError, KeyError):
        return ""
    caveats = "".join(f"<p class='bad'><strong>Caveat:</strong> "
                      f"{_e(line.replace('**', '').replace('`', ''))}</p>"
                      for line in loud_caveats(run))
    return f"{caveats}<p>Index searched: {_e(describe(run.get('index')))}</p>"


def write_eval_html(out_dir: Path) -> Path:
    """``OUT/report.html`` for an evaluation folder: a summary table and one drill-down per item."""
    from factdebate.evaluation.results import RESULTS, read_results

    out_dir = Path(out_dir)
    rows = read_results(out_dir / RESULTS)
    db = out_dir / "checkpoints.sqlite"
    table = ["<table><tr><th>#</th><th>item</th><th>gold</th><th>predicted</th>"
             "<th>cited / seen passages</th><th>gold evidence cited</th></tr>"]
    sections = []
    for n, row in enumerate(rows, start=1):
        pred = (row.get("prediction") or {}).get("label")
        table.append(f"<tr><td><a href='#item-{n}'>{n}</a></td><td>{_e(row.get('item_id'))}</td>"
                     f"<td>{_e((row.get('gold') or {}).get('label'))}</td><td>{_e(pred)}</td>"
                     f"{_evidence_cells(row)}</tr>")
        sections.append(_item_html(n, row, _final_state(db, row.get("thread_id") or "")))
    title = f"factdebate eval: {out_dir.name}"
    body = (f"<h1>{_e(title)}</h1>{index_head_html(out_dir)}<p>{len(rows)} item(s)</p>"
            f"{evidence_summary_html(rows)}"
            f"{''.join(table)}</table>{''.join(sections)}")
    path = out_dir / "report.html"
    path.write_text(page(title, body), encoding="utf-8")
    return path
