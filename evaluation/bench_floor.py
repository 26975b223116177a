"""``factdebate bench floor``: our CPU per Tool-MAD claim next to its floors.

One run, claims alternating between three measurements, each in process CPU seconds
(``time.process_time``: every thread of this process - the event loop, aiosqlite's thread, the
retrievers' and embeddings' worker threads - never wall time):

* **ours** - ``run_graph("tool_mad", ...)`` as the CLI runs it: stability scoring, T rounds, the
  scripted double at zero latency with debaters that disagree (``scripted:disagree``: every round
  and the judge run), the SQLite checkpointer of ``open_sqlite_saver`` with ``durability="sync"``,
  the demo index (Milvus Lite for ``rag``, tantivy for ``search``) and the bundled MiniLM.
* **floor** - a bare LangGraph graph of Tool-MAD's exact shape and nothing of the project: the same
  supersteps (``prepare -> open_round -> 2 x debate_turn (Send) -> check_consensus`` per round,
  then ``judge -> cite_verdict``), each ``debate_turn`` a subgraph compiled with
  ``checkpointer=False`` and invoked by a node (as ``graphs/turns.py``) running
  ``formulate_query -> retrieve -> respond -> score``, and in those nodes the same model calls to
  the same double: the calls ours made for this claim, recorded (messages, schema, role metadata,
  ``n``) and replayed through the double's ``with_structured_output`` (``agenerate`` with ``n`` for
  a multi-completion call), faithfulness' two calls in sequence beside answer relevancy's. Its
  state carries the same turns (query, retrieved passages, answer, label), so checkpoints hold
  about as much; it is checkpointed by the same saver class with the same pragmas and durability,
  with LangGraph's default serializer. No retries, ledger, negotiation, prompts, parsing fall-backs,
  RAGAS, retrieval or embeddings.
* **inline floor** - the floor whose ``debate_turn`` node calls the turn's four steps itself, in
  order, instead of invoking the subgraph: what ours does in a run nobody watches
  (graphs/turns.py, inline turns). Reported beside the judged ratio, as
  ``ours_over_inline_floor_plus_compute``, not judged: the judged floor is bare LangGraph with the
  turns as subgraphs, the straightforward design, so the inline turns' saving shows in the judged
  ratio; this one shows what our own code costs next to a bare graph that saves the same.
* **wide floor** - the floor with ours' state: Tool-MAD's own state schemas and, in every node,
  the keys and values ours wrote there (recorded from a second, untimed run of ours on the claim
  with ``astream(stream_mode="updates", subgraphs=True)``), the same Send payloads, the same calls.
  Wide floor - floor is what ours' state shape (channels, writes, checkpoint sizes) costs LangGraph;
  ours - wide floor - compute is what our own code costs (nodes, model-call path, RAGAS glue,
  callbacks, context). The row's ``wide_floor_replayed`` checks that the replay was whole (the same
  ledger call count and citation records as ours).
* **compute** - the real work ours cannot skip, measured on its own: the MiniLM encoder calls ours
  made for the claim, replayed batch for batch (recorded in ours' timed run by
  :class:`EncoderRecorder`: the queries before retrieval, RAGAS' claim and generated questions
  after each answer; the texts its query cache answered are not encoded again), the retrievals of
  every turn (Milvus Lite dense search with the query vector cached, tantivy BM25), and JSON
  parsing of every reply (pydantic ``model_validate_json``). Beside it, the distinct texts encoded
  as one batch (``encoder_one_batch_cpu_s`` beside ``encoder_calls_cpu_s``, and the budget ratio
  with it as ``ours_over_floor_plus_one_batch_compute``): an encoder call's fixed cost makes one
  batch cheaper than the calls ours has to make (the claim and the questions do not exist at the
  same time), so both figures are shown.

Figures: per-claim medians of ours, floor and compute, and the budget ratio ours / (floor +
compute) <= 1.3. The shape is checked, not assumed: model calls and checkpoints per claim of ours
and of the floor are reported side by side and must be equal.

Event loop and worker threads: each measurement also takes the CPU of the event loop's own thread
(``time.thread_time`` on the thread that awaits the graph: nodes, the model-call path, callbacks,
LangGraph's and LangChain's per-task and per-call work). Our code's share is split into what it
costs on the loop (ours' loop - the wide floor's loop) and in worker threads beyond the real
compute (ours' other threads - the wide floor's other threads - compute: thread hand-offs, Milvus
Lite's in-process gRPC, the executor that runs sync nodes); the two add up to ``our_code``.

The profile: ``py-spy record`` of a subprocess running ours alone (``python -m
factdebate.evaluation.bench_floor --profile-ours N --work DIR``), kept as ``OUT/floor-profile.txt``
(py-spy's raw collapsed stacks) with its top entries (self and inclusive samples by function, and
self samples by package) in ``floor.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import operator
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, TypedDict, get_type_hints

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.types import Send

from factdebate.evaluation.bench_budgets import budget, overall

RATIO_BUDGET = 1.3
"""ours / (floor + compute) per claim."""
RATIO_JUDGED_FROM_CLAIMS = 5
"""Timed claims the CPU ratio needs to be judged."""
AGENTS = ("rag", "search")


@dataclass
class Call:
    """One model call ours made, as the double saw it."""

    role: str
    agent: str
    round: int
    metric: str
    schema: Any
    messages: list[Any]
    n: int = 1
    replies: list[str] = field(default_factory=list)

    @property
    def metadata(self) -> dict[str, Any]:
        """The role metadata the double keys on (``nodes/llm.call_config``, ``tools/scoring``)."""
        meta: dict[str, Any] = {"fd_role": self.role, "fd_agent": self.agent,
                                "fd_round": self.round}
        if self.metric:
            meta["fd_metric"] = self.metric
        return meta


class EncoderRecorder:
    """Records the batches the embedding model encodes while ours runs a claim once.

    Installed on the shared embeddings instance (an instance attribute over its
    ``embed_documents``, which both its query cache and passages go through) for ours' timed run
    only: the real compute replays exactly these encoder calls, as ours made them - the query
    before retrieval, RAGAS' claim and generated questions after the answer - instead of one
    batch of the distinct texts (an encoder call has a fixed cost: compare the rows'
    ``encoder_calls_cpu_s`` and ``encoder_one_batch_cpu_s``).
    """

    def __init__(self, embeddings: Any) -> None:
        self.embeddings = embeddings
        self.batches: list[list[str]] = []

    def __enter__(self) -> EncoderRecorder:
        encode = type(self.embeddings).embed_documents.__get__(self.embeddings)

        def recorded(texts: list[str]) -> list[list[float]]:
            self.batches.append(list(texts))  # one append per encoder call
            return encode(texts)

        self.embeddings.embed_documents = recorded
        return self

    def __exit__(self, *exc: object) -> None:
        del self.embeddings.embed_documents  # the class's method again


class Recorder:
    """Wraps the double's responder while ours runs a claim once: every call and its replies.

    A call with ``n`` completions reaches the responder ``n`` times with the same ``ScriptCall``
    (``factdebate.testing.scripted``); it is recorded once with its ``n``.
    """

    def __init__(self, responder: Callable[[Any], Any]) -> None:
        self.responder = responder
        self.seen: list[tuple[Any, Any]] = []

    def __call__(self, call: Any) -> Any:
        """The responder's reply, recorded."""
        reply = self.responder(call)
        self.seen.append((call, reply))  # inside ours' timed run: one append, read in take()
        return reply

    def take(self) -> list[Call]:
        """The calls recorded so far (replies as JSON text), and a fresh record."""
        seen, self.seen = self.seen, []
        calls: list[Call] = []
        last = None
        for call, reply in seen:
            text = reply if isinstance(reply, str) else json.dumps(
                reply.model_dump() if hasattr(reply, "model_dump") else reply)
            if call is last:
                calls[-1].n += 1
                calls[-1].replies.append(text)
                continue
            last = call
            calls.append(Call(call.role, call.agent, call.round,
                              str(call.metadata.get("fd_metric", "") or ""), call.schema,
                              list(call.messages), 1, [text]))
        return calls


# -- the floor graph ---------------------------------------------------------------------------


class FloorTurn(TypedDict):
    """One debater's turn in the floor graph's state."""

    agent: str
    round: int
    query: str
    evidence: list[dict[str, Any]]
    answer: str
    label: str
    scores: dict[str, Any]


class FloorState(TypedDict, total=False):
    """The floor graph's state: the claim, the round counter, the turns and the verdict."""

    claim: str
    round: Annotated[int, operator.add]
    turns: Annotated[list[FloorTurn], operator.add]
    label: str


class FloorTurnState(TypedDict, total=False):
    """One turn subgraph's state."""

    claim: str
    agent: str
    round: int
    query: str
    evidence: list[dict[str, Any]]
    answer: str
    label: str
    scores: dict[str, Any]
    turns: Annotated[list[FloorTurn], operator.add]


class FloorOutput(TypedDict):
    """What a turn returns to the parent."""

    turns: list[FloorTurn]


@dataclass
class Script:
    """Ours' calls and turns for one claim, keyed for the floor's nodes."""

    calls: dict[tuple[str, int, str], list[Call]]
    evidence: dict[tuple[str, int], list[dict[str, Any]]]
    rounds: int
    writes: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)
    """Ours' update of every node, keyed (node, agent or "", round): the wide floor's writes."""

    @classmethod
    def of(cls, calls: list[Call], turns: list[dict[str, Any]], rounds: int) -> Script:
        """Group recorded calls by (agent, round, step); turns give each turn's passages."""
        grouped: dict[tuple[str, int, str], list[Call]] = {}
        for c in calls:
            step = c.role
            if c.role == "ragas":
                step = "ragas:relevancy" if c.metric == "answer_relevancy" else "ragas:faithfulness"
            grouped.setdefault((c.agent, c.round, step), []).append(c)
        evidence = {(t["agent"], t["round"]): [dict(e) for e in t.get("evidence") or []]
                    for t in turns}
        return cls(grouped, evidence, rounds)


async def _ask(model: Any, call: Call) -> list[Any]:
    """Replay one call through the double's public structured-output path."""
    config = {"metadata": call.metadata}
    if call.n == 1:
        out = await model.with_structured_output(call.schema, include_raw=True).ainvoke(
            call.messages, config)
        return [out.get("parsed")]
    result = await model.agenerate([call.messages], n=call.n, fd_schema=call.schema,
                                   metadata=call.metadata)
    return [call.schema.model_validate_json(str(g.message.content))
            for g in result.generations[0]]


async def _ask_all(model: Any, calls: list[Call]) -> list[Any]:
    out: list[Any] = []
    for c in calls:
        out += await _ask(model, c)
    return out


def _route_after_check(scripts: dict[str, Script]) -> Callable[[Any], str]:
    """Both floors' router after ``check_consensus``: agreement ends, round T goes to the judge."""
    def route_after_check(state: Any) -> str:
        labels = {t["label"] for t in state["turns"] if t["round"] == state["round"]}
        if len(labels) == 1:
            return "cite_verdict"
        return "judge" if state["round"] >= scripts[state["claim"]].rounds else "open_round"
    return route_after_check


def _tool_mad_shaped(state: type, turn_state: type, turn_output: type,
                     turn_nodes: dict[str, Callable[..., Any]],
                     nodes: dict[str, Callable[..., Any]], route_debaters: Callable[..., Any],
                     route_after_check: Callable[[Any], str], *,
                     inline_turns: bool = False) -> StateGraph:
    """Tool-MAD's shape (graphs/tool_mad.py) over the given schemas and node functions:
    ``turn_nodes`` (formulate_query, retrieve, respond, score) in a ``checkpointer=False`` turn
    subgraph invoked by a node as ``graphs/turns.py`` does in a watched run, or with
    ``inline_turns`` called in order by the turn node as it does in a run nobody watches (each
    step's update merged into the turn's values; the turn returns its output keys); ``nodes`` are
    prepare, open_round, check_consensus, judge, cite_verdict and review (ours' last step,
    ``graphs/finish.py``: with the Context's ``review`` off it writes nothing, but it is a step and
    a checkpoint)."""
    turn = StateGraph(turn_state, output_schema=turn_output)
    order = ("formulate_query", "retrieve", "respond", "score")
    for name in order:
        turn.add_node(name, turn_nodes[name])
    for a, b in zip((START, *order), (*order, END), strict=True):
        turn.add_edge(a, b)
    compiled_turn = turn.compile(name="debate_turn", checkpointer=False)
    output_keys = tuple(get_type_hints(turn_output))

    async def debate_turn(state: Any, config: RunnableConfig) -> Any:
        if not inline_turns:
            return await compiled_turn.ainvoke(state, config, durability="exit")
        values = dict(state)
        for name in order:
            values.update(await turn_nodes[name](values) or {})
        return {key: values[key] for key in output_keys if key in values}

    g = StateGraph(state)
    for name in ("prepare", "open_round"):
        g.add_node(name, nodes[name])
    g.add_node("debate_turn", debate_turn)
    for name in ("check_consensus", "judge", "cite_verdict", "review"):
        g.add_node(name, nodes[name])
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "open_round")
    g.add_conditional_edges("open_round", route_debaters, ["debate_turn"])
    g.add_edge("debate_turn", "check_consensus")
    g.add_conditional_edges("check_consensus", route_after_check,
                            ["open_round", "judge", "cite_verdict"])
    g.add_edge("judge", "cite_verdict")
    g.add_edge("cite_verdict", "review")
    g.add_edge("review", END)
    return g


def build_floor_graph(model: Any, scripts: dict[str, Script], *,
                      inline_turns: bool = False) -> Any:
    """The bare LangGraph graph of Tool-MAD's shape (uncompiled), calling ``model`` as ours did.

    ``scripts`` maps a claim to what ours did for it (looked up per node: the floor makes the same
    calls with the same messages, and its turns carry the same passages). ``inline_turns``: the
    turn node calls the turn's steps itself (:func:`_tool_mad_shaped`).
    """
    def script(state: dict[str, Any]) -> Script:
        return scripts[state["claim"]]

    async def formulate_query(state: FloorTurnState) -> dict[str, Any]:
        key = (state["agent"], state["round"], "query")
        replies = await _ask_all(model, script(state).calls.get(key, []))
        return {"query": getattr(replies[-1], "query", "") if replies else state["claim"]}

    async def retrieve(state: FloorTurnState) -> dict[str, Any]:
        return {"evidence": script(state).evidence.get((state["agent"], state["round"]), [])}

    async def respond(state: FloorTurnState) -> dict[str, Any]:
        key = (state["agent"], state["round"], "debater")
        replies = await _ask_all(model, script(state).calls.get(key, []))
        last = replies[-1] if replies else None
        return {"answer": getattr(last, "reasoning", ""), "label": getattr(last, "label", "")}

    async def score(state: FloorTurnState) -> dict[str, Any]:
        calls = script(state).calls
        agent, round_ = state["agent"], state["round"]
        faithful, relevant = await asyncio.gather(
            _ask_all(model, calls.get((agent, round_, "ragas:faithfulness"), [])),
            asyncio.gather(*(_ask(model, c)
                             for c in calls.get((agent, round_, "ragas:relevancy"), []))))
        scores = {"statements": len(faithful), "questions": sum(len(r) for r in relevant)}
        turn = FloorTurn(agent=agent, round=round_, query=state.get("query", ""),
                         evidence=state.get("evidence", []), answer=state.get("answer", ""),
                         label=state.get("label", ""), scores=scores)
        return {"scores": scores, "turns": [turn]}

    def prepare(state: FloorState) -> dict[str, Any]:
        return {"claim": state["claim"].strip()}

    def open_round(state: FloorState) -> dict[str, Any]:
        return {"round": 1}

    def route_debaters(state: FloorState) -> list[Send]:
        return [Send("debate_turn", {"claim": state["claim"], "agent": a, "round": state["round"]})
                for a in AGENTS]

    def check_consensus(state: FloorState) -> dict[str, Any]:
        return {}

    async def judge(state: FloorState) -> dict[str, Any]:
        replies = await _ask_all(model, script(state).calls.get(("", state["round"], "judge"), []))
        return {"label": getattr(replies[-1], "label", "") if replies else ""}

    def cite_verdict(state: FloorState) -> dict[str, Any]:
        return {}

    def review(state: FloorState) -> dict[str, Any]:
        return {}

    return _tool_mad_shaped(
        FloorState, FloorTurnState, FloorOutput,
        {"formulate_query": formulate_query, "retrieve": retrieve, "respond": respond,
         "score": score},
        {"prepare": prepare, "open_round": open_round, "check_consensus": check_consensus,
         "judge": judge, "cite_verdict": cite_verdict, "review": review},
        route_debaters, _route_after_check(scripts), inline_turns=inline_turns)


def build_wide_floor_graph(model: Any, scripts: dict[str, Script], ctx: Any) -> Any:
    """The floor with ours' state: Tool-MAD's own state schemas (``DebateState``, ``DebaterState``
    with its ``DebateRecord`` output) and, in every node, the keys and values ours wrote there
    (recorded, :func:`record_writes`), plus the same model calls as the floor. No project logic
    runs: wide floor - floor is what ours' state shape costs LangGraph, ours - wide floor - compute
    what our own code costs (the "rest" of the floor comparison, split). The debaters' Send payloads are ours'
    (``fan_out_debaters`` with ``ctx``)."""
    from factdebate.core.state import DebateRecord, DebaterState, DebateState
    from factdebate.nodes.open_round import fan_out_debaters

    def script(state: dict[str, Any]) -> Script:
        return scripts[state["claim"]]

    def written(state: dict[str, Any], node: str, agent: str = "",
                round_: int | None = None) -> dict[str, Any]:
        return dict(script(state).writes.get((node, agent, state["round"] if round_ is None
                                              else round_), {}))

    async def formulate_query(state: Any) -> dict[str, Any]:
        agent, round_ = state["agent"], state["round"]
        replies = await _ask_all(model, script(state).calls.get((agent, round_, "query"), []))
        query = getattr(replies[-1], "query", "") if replies else state["claim"]
        return {"query": query, **written(state, "formulate_query", agent)}

    async def retrieve(state: Any) -> dict[str, Any]:
        agent, round_ = state["agent"], state["round"]
        return {"evidence": script(state).evidence.get((agent, round_), []),
                **written(state, "retrieve", agent)}

    async def respond(state: Any) -> dict[str, Any]:
        agent, round_ = state["agent"], state["round"]
        replies = await _ask_all(model, script(state).calls.get((agent, round_, "debater"), []))
        last = replies[-1] if replies else None
        return {"answer": getattr(last, "reasoning", ""), "label": getattr(last, "label", None),
                "parse": "structured", **written(state, "respond", agent)}

    async def score(state: Any) -> dict[str, Any]:
        calls = script(state).calls
        agent, round_ = state["agent"], state["round"]
        await asyncio.gather(
            _ask_all(model, calls.get((agent, round_, "ragas:faithfulness"), [])),
            asyncio.gather(*(_ask(model, c)
                             for c in calls.get((agent, round_, "ragas:relevancy"), []))))
        return written(state, "score", agent)

    def prepare(state: Any) -> dict[str, Any]:
        return written(state, "prepare", round_=0)

    def open_round(state: Any) -> dict[str, Any]:
        return written(state, "open_round", round_=state["round"] + 1)

    def route_debaters(state: Any) -> list[Send]:
        return fan_out_debaters(state, ctx)

    def check_consensus(state: Any) -> dict[str, Any]:
        return written(state, "check_consensus")

    async def judge(state: Any) -> dict[str, Any]:
        await _ask_all(model, script(state).calls.get(("", state["round"], "judge"), []))
        return written(state, "judge")

    def cite_verdict(state: Any) -> dict[str, Any]:
        return written(state, "cite_verdict")

    def review(state: Any) -> dict[str, Any]:
        return written(state, "review")

    return _tool_mad_shaped(
        DebateState, DebaterState, DebateRecord,
        {"formulate_query": formulate_query, "retrieve": retrieve, "respond": respond,
         "score": score},
        {"prepare": prepare, "open_round": open_round, "check_consensus": check_consensus,
         "judge": judge, "cite_verdict": cite_verdict, "review": review},
        route_debaters, _route_after_check(scripts))


async def record_writes(setup: Setup, claim: str) -> dict[tuple[str, str, int], dict[str, Any]]:
    """Ours once more on ``claim`` (untimed; the double answers as before): every node's update.

    ``astream(stream_mode="updates", subgraphs=True)`` shows a turn node's writes to the turn's
    output keys (the ``DebateRecord``); the wide floor's turn nodes add the other keys ours
    writes there (query, evidence, answer, label, parse) themselves.
    """
    from factdebate.core.state import complete_input
    from factdebate.run.claims import compiled_graph

    graph = compiled_graph("tool_mad", setup.ours_saver, None)
    setup.model.reset()
    writes: dict[tuple[str, str, int], dict[str, Any]] = {}
    pending: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    counts: Counter[str] = Counter()
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    async for namespace, chunk in graph.astream(
            complete_input({"claim": claim}), config, context=setup.ctx, stream_mode="updates",
            subgraphs=True, durability="sync"):
        for node, update in chunk.items():
            update = dict(update or {})
            if namespace:  # inside a turn: keyed by the turn's agent and round (from respond)
                steps = pending.setdefault(namespace[-1], [])
                steps.append((node, update))
                if node == "score":
                    turn = next(u["turns"][0] for n, u in steps if n == "respond")
                    for name, step in steps:
                        writes[(name, turn["agent"], turn["round"])] = step
            elif node != "debate_turn":  # the turn's own output is what its nodes wrote
                round_ = counts[node] + (1 if node == "open_round" else 0)
                if node in ("check_consensus", "judge", "cite_verdict", "review"):
                    round_ = counts["open_round"]
                counts[node] += 1
                writes[(node, "", round_)] = update
    return writes


# -- the measurements ----------------------------------------------------------------------------


def _context(index_dir: Path, rounds: int) -> Any:
    from factdebate.nodes.tool_mad.state import ToolMadContext

    return ToolMadContext(debater_model="scripted:disagree", max_rounds=rounds,
                          scoring_mode="stability", index_dir=str(index_dir),
                          search_backend="local_search")


async def _checkpoints(saver: Any, thread_id: str) -> int:
    return len([c async for c in saver.alist({"configurable": {"thread_id": thread_id}})])


@dataclass
class Setup:
    """What the alternating loop shares: the context, the double, the savers and the scripts."""

    ctx: Any
    model: Any
    ours_saver: Any
    floor_saver: Any
    floor_graph: Any
    wide_graph: Any
    inline_floor_graph: Any
    scripts: dict[str, Script] = field(default_factory=dict)
    ours_rows: dict[str, dict[str, Any]] = field(default_factory=dict)


class _CpuClock:
    """Process CPU and the event loop's own thread CPU over one measurement (see the docstring's
    "event loop and worker threads"): ``cpu_s`` and ``loop_cpu_s`` once stopped."""

    def __enter__(self) -> _CpuClock:
        self._process, self._loop = time.process_time(), time.thread_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cpu_s = time.process_time() - self._process
        self.loop_cpu_s = time.thread_time() - self._loop


async def _ours(setup: Setup, claim: str) -> dict[str, Any]:
    from factdebate.run.engine import run_graph
    from factdebate.tools.embeddings import get_embeddings

    setup.model.reset()
    with EncoderRecorder(get_embeddings(setup.ctx.embedding_model)) as encoder, \
            _CpuClock() as clock:
        result = await run_graph("tool_mad", {"claim": claim}, setup.ctx,
                                 checkpointer=setup.ours_saver)  # a new thread, as `verify` makes
    return {"cpu_s": clock.cpu_s, "loop_cpu_s": clock.loop_cpu_s, "encoded": encoder.batches,
            "calls": len(setup.model.timeline),
            "checkpoints": await _checkpoints(setup.ours_saver, result["thread_id"]),
            "label": result["label"], "rounds": result["rounds"],
            "stopped_by": result["stopped_by"], "turns": result["turns"],
            "ledger": result["ledger"], "citations": len(result.get("citations") or [])}


async def _floor(setup: Setup, claim: str, inline_turns: bool = False) -> dict[str, Any]:
    setup.model.reset()
    thread = uuid.uuid4().hex
    graph = setup.inline_floor_graph if inline_turns else setup.floor_graph
    with _CpuClock() as clock:
        values = await graph.ainvoke({"claim": claim}, {"configurable": {
            "thread_id": thread}}, durability="sync")
    return {"cpu_s": clock.cpu_s, "loop_cpu_s": clock.loop_cpu_s, "calls": len(setup.model.timeline),
            "checkpoints": await _checkpoints(setup.floor_saver, thread),
            "label": values.get("label")}


async def _wide(setup: Setup, claim: str) -> dict[str, Any]:
    from factdebate.core.state import complete_input

    setup.model.reset()
    thread = uuid.uuid4().hex
    with _CpuClock() as clock:
        values = await setup.wide_graph.ainvoke(complete_input({"claim": claim}), {
            "configurable": {"thread_id": thread}}, durability="sync")
    return {"cpu_s": clock.cpu_s, "loop_cpu_s": clock.loop_cpu_s, "calls": len(setup.model.timeline),
            "checkpoints": await _checkpoints(setup.floor_saver, thread),
            "label": values.get("label"),
            "ledger_calls": (values.get("ledger") or {}).get("llm_calls"),
            "citations": len(values.get("citations") or [])}


def _compute_once(script: Script, turns: list[dict[str, Any]], batches: list[list[str]],
                  retrievers: dict[str, Any], embeddings: Any) -> float:
    """Blocking: the claim's encoder calls, retrievals and reply parsing once; the encoder calls'
    own process CPU seconds."""
    start = time.process_time()
    for batch in batches:  # the encoder calls ours made, as it made them (MiniLM, no cache)
        embeddings.embed_documents(batch)
    encoder = time.process_time() - start
    for t in turns:  # the query vector is in MiniLM's query cache: the search itself
        if t.get("query") and t["agent"] in retrievers:
            retrievers[t["agent"]].search_sync(t["query"], len(t.get("evidence") or []) or 3)
    for calls in script.calls.values():
        for c in calls:
            for reply in c.replies:
                c.schema.model_validate_json(reply)
    return encoder


def _compute(setup: Setup, claim: str, repeat: int = 3) -> dict[str, Any]:
    from factdebate.nodes.retrieval import resolve_backend, retriever_settings
    from factdebate.tools.base import get_retriever
    from factdebate.tools.embeddings import get_embeddings

    settings = retriever_settings(setup.ctx)
    retrievers = {agent: get_retriever(str(resolve_backend(agent, setup.ctx)[0]), settings)
                  for agent in AGENTS}
    embeddings = get_embeddings(setup.ctx.embedding_model)
    turns, batches = setup.ours_rows[claim]["turns"], setup.ours_rows[claim]["encoded"]
    start, replayed = time.process_time(), 0.0
    for _ in range(repeat):
        replayed += _compute_once(setup.scripts[claim], turns, batches, retrievers, embeddings)
    cpu = (time.process_time() - start) / repeat
    # the same texts as one batch, beside the replayed calls: what the replay adds to the compute
    # is reported, so both ratios can be read off one run
    distinct = sorted({text for batch in batches for text in batch})
    start = time.process_time()
    for _ in range(repeat):
        if distinct:
            embeddings.embed_documents(distinct)
    one_batch = (time.process_time() - start) / repeat
    return {"cpu_s": cpu, "encoder_calls": len(batches), "texts_embedded": len(distinct),
            "encoder_calls_cpu_s": replayed / repeat, "encoder_one_batch_cpu_s": one_batch}


async def _run(index_dir: Path, work: Path, claims: list[str], warmup: str, rounds: int,
               compute_repeat: int) -> dict[str, Any]:
    from factdebate.core.models import load_model
    from factdebate.run.claims import compiled_graph, open_sqlite_saver

    ctx = _context(index_dir, rounds)
    model = load_model(ctx.debater_model)
    async with open_sqlite_saver(work / "floor-ours.sqlite") as ours_saver, \
            open_sqlite_saver(work / "floor-bare.sqlite") as template:
        saver_class = type(template)
        floor_saver = saver_class(template.conn)  # same class and connection set-up, default serde
        scripts: dict[str, Script] = {}
        graph = build_floor_graph(model, scripts).compile(checkpointer=floor_saver,
                                                          name="tool_mad_floor")
        wide = build_wide_floor_graph(model, scripts, ctx).compile(checkpointer=floor_saver,
                                                               name="tool_mad_wide_floor")
        inline = build_floor_graph(model, scripts, inline_turns=True).compile(
            checkpointer=floor_saver, name="tool_mad_inline_floor")
        setup = Setup(ctx, model, ours_saver, floor_saver, graph, wide, inline, scripts)
        compiled_graph("tool_mad", ours_saver, None)
        original = model.responder
        recorder = Recorder(original)
        rows = []
        try:
            # each claim once through ours (recorded as it runs: no content cache - MiniLM's
            # query cache, the double's memos - is warm from an earlier run of the same claim),
            # then the floor replaying what ours did, then the real compute on its own; the first,
            # extra claim is the untimed warm-up (imports, RAGAS, MiniLM, indexes, both graphs)
            for i, claim in enumerate([warmup, *claims]):
                model.responder = recorder  # ours only; the floor replays with the plain one
                ours = await _ours(setup, claim)
                model.responder = original
                scripts[claim] = Script.of(recorder.take(), ours["turns"], rounds)
                setup.ours_rows[claim] = ours
                scripts[claim].writes = await record_writes(setup, claim)
                floor = await _floor(setup, claim)
                inline_floor = await _floor(setup, claim, inline_turns=True)
                wide = await _wide(setup, claim)
                compute = await asyncio.to_thread(_compute, setup, claim,
                                                  1 if i == 0 else compute_repeat)
                if i == 0:
                    continue
                rows.append({"claim": claim, "ours_cpu_s": round(ours["cpu_s"], 4),
                             "floor_cpu_s": round(floor["cpu_s"], 4),
                             "inline_floor_cpu_s": round(inline_floor["cpu_s"], 4),
                             "wide_floor_cpu_s": round(wide["cpu_s"], 4),
                             "compute_cpu_s": round(compute["cpu_s"], 4),
                             "ours_loop_cpu_s": round(ours["loop_cpu_s"], 4),
                             "floor_loop_cpu_s": round(floor["loop_cpu_s"], 4),
                             "wide_floor_loop_cpu_s": round(wide["loop_cpu_s"], 4),
                             "encoder_calls": compute["encoder_calls"],
                             "texts_embedded": compute["texts_embedded"],
                             "encoder_calls_cpu_s": round(compute["encoder_calls_cpu_s"], 4),
                             "encoder_one_batch_cpu_s": round(
                                 compute["encoder_one_batch_cpu_s"], 4),
                             "ours_calls": ours["calls"], "floor_calls": floor["calls"],
                             "inline_floor_calls": inline_floor["calls"],
                             "wide_floor_calls": wide["calls"],
                             "ours_checkpoints": ours["checkpoints"],
                             "floor_checkpoints": floor["checkpoints"],
                             "inline_floor_checkpoints": inline_floor["checkpoints"],
                             "wide_floor_checkpoints": wide["checkpoints"],
                             "label": ours["label"], "floor_label": floor["label"],
                             "wide_floor_label": wide["label"],
                             # ours' writes replayed whole: the same ledger and citation records
                             "wide_floor_replayed": (
                                 wide["ledger_calls"] == ours["ledger"].get("llm_calls")
                                 and wide["citations"] == ours["citations"]),
                             "rounds": ours["rounds"], "stopped_by": ours["stopped_by"],
                             "prompt_tokens": ours["ledger"].get("prompt_tokens", 0),
                             "completion_tokens": ours["ledger"].get("completion_tokens", 0)})
        finally:
            model.responder = original
        return {"saver_class": saver_class.__name__, "rows": rows}


def _ours_only(index_dir: Path, work: Path, claims: list[str], rounds: int, spy: list[str]) -> None:
    """The profiled subprocess: ours alone; ``spy`` (a ``py-spy record`` command without
    ``--pid``) attaches to this process after two untimed warm-up claims and is stopped with
    SIGINT (py-spy then writes its file) when the last claim is done."""
    from factdebate.core.models import load_model
    from factdebate.run.claims import open_sqlite_saver, run_async
    from factdebate.run.engine import run_graph

    ctx = _context(index_dir, rounds)

    async def go() -> None:
        recorder: subprocess.Popen[bytes] | None = None
        async with open_sqlite_saver(work / "floor-profile.sqlite") as saver:
            try:
                for i, claim in enumerate(claims):
                    if i == min(2, len(claims) - 1):
                        recorder = subprocess.Popen([*spy, "--pid", str(os.getpid())])
                        await asyncio.sleep(1.0)  # attached before the first profiled claim
                    load_model(ctx.debater_model).reset()
                    await run_graph("tool_mad", {"claim": claim}, ctx, checkpointer=saver)
            finally:
                if recorder is not None:
                    recorder.send_signal(signal.SIGINT)
                    recorder.wait(timeout=120)

    run_async(go())


# -- the profile ---------------------------------------------------------------------------------


LANGGRAPH_PARTS = frozenset(("pregel", "_internal", "channels", "graph", "serde", "base", "sqlite",
                             "managed", "func", "runtime", "store", "checkpoint"))
"""First path parts py-spy shows for langgraph's modules (a namespace package: py-spy shortens
``langgraph/pregel/main.py`` to ``pregel/main.py``)."""


HARNESS_FRAMES = ("main (factdebate/evaluation/", "_ours_only", "<module> (factdebate/evaluation/",
                  "Runner.run (", "run_async (", "_run_code (", "_run_module_as_main (")
"""Frames of the profiled subprocess itself, left out of the inclusive top entries."""


OWN_ROOT = str(Path(__file__).resolve().parents[1]) + "/"  # the factdebate package
OWN_FOLDERS = frozenset(p.name for p in Path(OWN_ROOT).iterdir() if (p / "__init__.py").is_file())
"""The package's folders (core, graphs, nodes ...): the repository root is the package."""


def _frame_name(frame: str) -> tuple[str, str]:
    """``("function (file)", package)`` of a raw py-spy frame ``function (file:line)``; py-spy
    shortens paths to the package (``langgraph/pregel/main.py``, ``threading.py``)."""
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    # the checkout is the factdebate package: py-spy shows its files by absolute path
    # or relative to the working directory; name them as the package does
    checkout = Path(OWN_ROOT).name + "/"  # py-spy may cut the path after a sys.path entry above it
    if path.startswith(OWN_ROOT):
        path = "factdebate/" + path[len(OWN_ROOT):]
    elif path.startswith(checkout) and path[len(checkout):].split("/", 1)[0] in OWN_FOLDERS:
        path = "factdebate/" + path[len(checkout):]
    elif path.split("/", 1)[0] in OWN_FOLDERS:
        path = "factdebate/" + path
    top = path.split("/", 1)[0].removesuffix(".py")
    if path.startswith("<frozen") or top in sys.stdlib_module_names:
        package = "stdlib"
    elif top in LANGGRAPH_PARTS:
        package = "langgraph"
    else:
        package = top
    return f"{name} ({path})", package


def raw_samples(path: Path) -> Iterator[tuple[list[str], int]]:
    """(frames, outermost first, and count) of each sample of a py-spy raw profile; lines that
    are not samples, and frames without a source (``(idle)``), are left out."""
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = [f for f in stack.split(";") if " (" in f]
        if frames:
            yield frames, int(count)


def summarise_profile(path: Path, top: int = 15) -> dict[str, Any]:
    """Top entries of a py-spy raw profile: self and inclusive samples by function (inclusive
    without the harness' frames, :data:`HARNESS_FRAMES`, and frames in 80% or more of the
    samples), self by package (shares of all samples)."""
    self_s: Counter[str] = Counter()
    incl: Counter[str] = Counter()
    pkg: Counter[str] = Counter()
    total = 0
    for frames, n in raw_samples(path):
        total += n
        name, package = _frame_name(frames[-1])
        self_s[name] += n
        pkg[package] += n
        # outermost first, once each: ties keep the stack's order (a set's order varies per run)
        for seen in dict.fromkeys(_frame_name(f)[0] for f in frames):
            incl[seen] += n

    def share(counter: Counter[str]) -> list[list[Any]]:
        return [[k, round(v / total, 4)] for k, v in counter.most_common(top)] if total else []

    # the harness' frames (the profiled script, the asyncio runner, run_async: in most samples)
    below = Counter({k: v for k, v in incl.items()
                     if v < 0.8 * total and not k.startswith(HARNESS_FRAMES)})
    return {"samples": total, "self": share(self_s), "inclusive": share(below),
            "self_by_package": share(pkg)}


def profile_ours(index_dir: Path, work: Path, out_dir: Path, claims: list[str],
                 rounds: int) -> dict[str, Any]:
    """``py-spy record --gil`` (raw format, 250 Hz: the thread holding the GIL, i.e. Python work on
    any thread; native work that releases it - ONNX Runtime, SQLite - shows as its caller's
    absence) of ours in a subprocess, attached after its warm-up (``_ours_only``)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    target = out_dir / "floor-profile.txt"
    target.unlink(missing_ok=True)
    record = [spy, "record", "--gil", "-r", "250", "-f", "raw", "-o", str(target)]
    command = [sys.executable, "-m", "factdebate.evaluation.bench_floor", "--profile-ours",
               "--index", str(index_dir), "--work", str(work), "--rounds", str(rounds),
               "--claims-json", json.dumps(claims), "--spy-json", json.dumps(record)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=1800,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})
    if proc.returncode != 0 or not target.is_file():
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-400:]}"}
    return {"file": target.name,
            "command": f"py-spy record --gil -r 250 -f raw -o {target.name} --pid <subprocess> "
                       "(python -m factdebate.evaluation.bench_floor --profile-ours: "
                       f"{len(claims)} Tool-MAD claims, the first 2 untimed, then attached)",
            "profiled_claims": max(0, len(claims) - 2), **summarise_profile(target)}


def run_floor_bench(work_dir: Path, out_dir: Path, index: Path, claims: list[str],
                    profile_claims: list[str], *, rounds: int = 3, compute_repeat: int = 3,
                    profile: bool = True) -> dict[str, Any]:
    """Ours vs the bare-LangGraph floor vs real compute, CPU seconds per Tool-MAD claim.

    ``claims[0]`` is the untimed warm-up; ``profile_claims`` run in the profiled subprocess (the
    first two untimed). ``index`` is the demo index (``evaluation/bench.py`` builds it)."""
    from factdebate.run.claims import run_async

    measured = run_async(_run(index, work_dir, claims[1:], claims[0], rounds, compute_repeat))
    rows = measured["rows"]
    med = {k: statistics.median(r[k] for r in rows)
           for k in ("ours_cpu_s", "floor_cpu_s", "inline_floor_cpu_s", "wide_floor_cpu_s",
                     "compute_cpu_s",
                     "ours_loop_cpu_s", "wide_floor_loop_cpu_s")}
    # the compute with the claim's distinct texts encoded as one batch (not a possible run of
    # the debate: the claim is needed before retrieval, the questions after the answer)
    one_batch_compute = statistics.median(
        r["compute_cpu_s"] - r["encoder_calls_cpu_s"] + r["encoder_one_batch_cpu_s"] for r in rows)
    ratio = med["ours_cpu_s"] / (med["floor_cpu_s"] + med["compute_cpu_s"])
    shape_ok = all(r["ours_calls"] == r["floor_calls"] == r["wide_floor_calls"]
                   == r["inline_floor_calls"] and r["ours_checkpoints"] == r["floor_checkpoints"]
                   == r["wide_floor_checkpoints"] == r["inline_floor_checkpoints"] for r in rows)
    result: dict[str, Any] = {
        "rounds": rounds, "claims": len(rows), "scoring_mode": "stability",
        "model": "scripted:disagree (zero latency)", "checkpointer": measured["saver_class"],
        "ours_cpu_s_per_claim": round(med["ours_cpu_s"], 4),
        "floor_cpu_s_per_claim": round(med["floor_cpu_s"], 4),
        "compute_cpu_s_per_claim": round(med["compute_cpu_s"], 4),
        "rest_cpu_s_per_claim": round(med["ours_cpu_s"] - med["floor_cpu_s"]
                                      - med["compute_cpu_s"], 4),
        "ours_over_floor_plus_compute": round(ratio, 3),
        "ours_over_floor_plus_one_batch_compute": round(
            med["ours_cpu_s"] / (med["floor_cpu_s"] + one_batch_compute), 3),
        # the floor whose turn node calls the turn's steps itself, as ours does when nobody
        # watches the run (graphs/turns.py): beside the judged ratio, not judged
        "inline_floor_cpu_s_per_claim": round(med["inline_floor_cpu_s"], 4),
        "ours_over_inline_floor_plus_compute": round(
            med["ours_cpu_s"] / (med["inline_floor_cpu_s"] + med["compute_cpu_s"]), 3),
        # the rest, split: what ours' state shape costs LangGraph, and what our own code costs
        "wide_floor_cpu_s_per_claim": round(med["wide_floor_cpu_s"], 4),
        "state_shape_cpu_s_per_claim": round(med["wide_floor_cpu_s"] - med["floor_cpu_s"], 4),
        "our_code_cpu_s_per_claim": round(med["ours_cpu_s"] - med["wide_floor_cpu_s"]
                                          - med["compute_cpu_s"], 4),
        # our code, split by thread: on the event loop (nodes, the model-call path, callbacks,
        # what LangGraph and LangChain do per task and per call for it) and in worker threads
        # beyond the real compute (thread hand-offs, Milvus Lite's gRPC, sync nodes' executor)
        "ours_loop_cpu_s_per_claim": round(med["ours_loop_cpu_s"], 4),
        "wide_floor_loop_cpu_s_per_claim": round(med["wide_floor_loop_cpu_s"], 4),
        "our_code_loop_cpu_s_per_claim": round(
            med["ours_loop_cpu_s"] - med["wide_floor_loop_cpu_s"], 4),
        "our_code_workers_cpu_s_per_claim": round(
            (med["ours_cpu_s"] - med["ours_loop_cpu_s"])
            - (med["wide_floor_cpu_s"] - med["wide_floor_loop_cpu_s"]) - med["compute_cpu_s"], 4),
        "same_shape": shape_ok,
        "model_calls_per_claim": statistics.median(r["ours_calls"] for r in rows),
        "checkpoints_per_claim": statistics.median(r["ours_checkpoints"] for r in rows),
        "budget": f"ours <= {RATIO_BUDGET} x (floor + compute) CPU per claim",
        "budgets": [
            budget("ours_over_floor_plus_compute", f"ours <= {RATIO_BUDGET} x (floor + compute) "
                   "CPU per claim", round(ratio, 3), "<=", RATIO_BUDGET, unit="x",
                   why_not_judged="" if len(rows) >= RATIO_JUDGED_FROM_CLAIMS else
                   f"needs >= {RATIO_JUDGED_FROM_CLAIMS} claims (this run: {len(rows)}; "
                   "--claims): the median of fewer is one claim's noise"),
            budget("same_shape", "ours, the floor and the wide floor make the same model calls "
                   "and checkpoints", shape_ok, "==", True)],
        "per_claim": rows,
    }
    result["budget_met"] = overall(result["budgets"])
    if profile:
        from factdebate.tools.base import clear_retriever_cache

        clear_retriever_cache()  # a Milvus Lite folder is open in one process at a time
        result["profile"] = profile_ours(index, work_dir, out_dir, profile_claims, rounds)
    return result


def main(argv: list[str] | None = None) -> None:
    """The profiled subprocess (``--profile-ours``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--profile-ours", action="store_true")
    parser.add_argument("--index", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--claims-json", required=True)
    parser.add_argument("--spy-json", required=True)
    args = parser.parse_args(argv)
    _ours_only(Path(args.index), Path(args.work), json.loads(args.claims_json), args.rounds,
               json.loads(args.spy_json))


if __name__ == "__main__":
    main()
