"""``eval --langsmith``: the sampled items as a LangSmith dataset, the run as an experiment."""

from __future__ import annotations

import os
import uuid
from typing import Any

from factdebate.core.citations import passage_key
from factdebate.core.errors import ConfigError


def citation_feedback(row: dict[str, Any]) -> list[tuple[str, float, str, str]]:
    """Issue #22, as LangSmith feedback ``(key, score, value, comment)`` of a results row:
    ``cited_evidence_ids`` (score: how many passages the verdict cites, 0 = an uncited verdict;
    value: their ids, comma-separated) and ``citation_flags`` (score: the run's ``citation: ``
    flags, hallucinated or missing citations; comment: the first). Nothing for a row without
    citation data (an error row, a result from before citations)."""
    if not isinstance(row.get("evidence"), list):
        return []
    ids = [passage_key(e) for e in row["evidence"]]
    flags = [f for f in row.get("flags") or [] if "citation: " in f]
    retrieved = len(row.get("retrieved") or [])
    return [("cited_evidence_ids", float(len(ids)), ", ".join(ids),
             f"{len(ids)} cited, {retrieved} retrieved and not cited"),
            ("citation_flags", float(len(flags)), str(len(flags)), flags[0] if flags else "")]


class LangSmithExperiment:
    """``--langsmith``: the sampled items as a LangSmith dataset, this run as an experiment.

    Each item's root run is traced into the experiment project with its example id (as
    ``langsmith.evaluate`` records experiments) and gets a ``correct`` feedback score, plus the
    citation summary of :func:`citation_feedback` (issue #22).
    """

    def __init__(self, run_id: str, dataset: str, version: str, items: list[Any],
                 metadata: dict[str, Any]) -> None:
        if not os.environ.get("LANGSMITH_API_KEY"):
            raise ConfigError("--langsmith needs LANGSMITH_API_KEY", "set it, or drop --langsmith")
        from langsmith import Client

        self.client = Client()
        name = f"factdebate-{dataset}-{version}"
        self.example_ids = {it.id: uuid.uuid5(uuid.NAMESPACE_URL, f"{name}:{it.id}") for it in items}
        if self.client.has_dataset(dataset_name=name):
            ds = self.client.read_dataset(dataset_name=name)
        else:
            ds = self.client.create_dataset(name, description=f"factdebate {dataset} ({version})")
            self.client.create_examples(dataset_id=ds.id, examples=[
                {"id": self.example_ids[it.id], "inputs": dict(it.input),
                 "outputs": {"label": it.gold_label, "answers": list(it.gold_answers)},
                 "metadata": {"item_id": it.id}} for it in items])
        self.project = run_id
        self.session_id = self.client.create_project(
            run_id, reference_dataset_id=ds.id, metadata=metadata, upsert=True).id

    def config_for(self, item_id: str) -> dict[str, Any]:
        """Run-config callbacks tracing this item into the experiment."""
        from langchain_core.tracers import LangChainTracer

        tracer = LangChainTracer(project_name=self.project, example_id=self.example_ids[item_id],
                                 client=self.client)
        return {"callbacks": [tracer]}

    def record(self, trace_id: str, correct: bool | None,
               row: dict[str, Any] | None = None) -> None:
        """The item's ``correct`` feedback on its root run, and its results row's citations."""
        if correct is not None:
            self.client.create_feedback(trace_id, key="correct", score=float(correct),
                                        trace_id=trace_id, session_id=self.session_id)
        for key, score, value, comment in citation_feedback(row or {}):
            self.client.create_feedback(trace_id, key=key, score=score, value=value,
                                        comment=comment, trace_id=trace_id,
                                        session_id=self.session_id)

    def close(self) -> None:
        """Send everything still queued."""
        self.client.flush()
