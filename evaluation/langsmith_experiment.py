"""``eval --langsmith``: the sampled items as a LangSmith dataset, the run as an experiment.

Built with the LangSmith client's documented dataset and experiment calls (the records
``langsmith.evaluate`` makes, with this project's own runner doing the running):

* **Dataset**: one per data file version, ``factdebate-<dataset>-<version>-<sha256[:12]>``, with
  the file's name, version and full content hash in its metadata. An item is an example keyed by
  its item id (``metadata.item_id``, example id a UUID5 of the dataset name and the item id):
  examples the dataset holds are reused, items it lacks are added (a ``--limit 4`` run after a
  ``--limit 2`` run adds two), so every traced run links to an example that exists.
* **Experiment**: a project named after the eval run - ``<framework>-<dataset name>-<data file
  hash[:8]>-<run suffix>`` (:func:`experiment_name`; a file given by path is named by its stem,
  never by its folder), ``reference_dataset_id`` the dataset, its
  metadata the run's framework, models, prompt version, git SHA, data file hash and index identity
  (:func:`experiment_metadata`); its start time is set when it is created and its end time
  (``update_project(end_time=...)``) when the run closes. A resumed run reuses its project.
* **Runs and feedback**: each item's root run is traced into the project with its example id
  (``LangChainTracer(example_id=...)``) and gets feedback (:func:`item_feedback`): ``correct``,
  ``evidence_f1`` and ``fever_score`` where the item's gold evidence defines them, and the
  citation summary of :func:`citation_feedback`.

LangSmith is a side channel of the run: an endpoint that fails or answers what the client cannot
read (an HTML page, another service's JSON) is one warning line on stderr naming the endpoint and
the problem, and the local run goes on and finishes without the experiment (or without that
item's feedback). Only a missing ``LANGSMITH_API_KEY`` stops the run before it starts.
"""

from __future__ import annotations

import datetime
import os
import sys
import uuid
from typing import Any

from factdebate.core.citations import passage_key
from factdebate.core.errors import ConfigError


def citation_feedback(row: dict[str, Any]) -> list[tuple[str, float, str, str]]:
    """Evidence quality as LangSmith feedback ``(key, score, value, comment)`` of a results row:
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


def item_feedback(row: dict[str, Any]) -> list[tuple[str, float, str, str]]:
    """LangSmith feedback ``(key, score, value, comment)`` of a finished results row: the
    evidence metrics its gold evidence defines (``evidence_f1``: page-level F1 of the cited
    passages; ``fever_score``: label right and a complete gold set cited in the first five, FEVER
    and FEVEROUS only), then :func:`citation_feedback`."""
    from factdebate.evaluation.evidence_metrics import item_value

    out = []
    for key in ("evidence_f1", "fever_score"):
        value = item_value(key)(row)
        if value is not None:
            out.append((key, value, "", ""))
    return out + citation_feedback(row)


def experiment_metadata(record: dict[str, Any]) -> dict[str, Any]:
    """The experiment's metadata from the eval run's ``run.json`` record."""
    keys = ("framework", "dataset", "dataset_version", "data_sha256", "prompt_version", "git_sha",
            "models", "limit", "seed", "server", "paper", "started_at")
    out = {k: record[k] for k in keys if record.get(k) not in (None, "")}
    out["eval_run_id"] = record.get("run_id", "")
    models = record.get("models") or {}
    out |= {f"model_{role}": spec for role, spec in models.items() if spec}
    if record.get("index"):  # evaluation/index_identity.py: the index build the run searched
        out["index"] = record["index"]
    return out


def experiment_name(run_id: str, record: dict[str, Any]) -> str:
    """The experiment (project) name of an eval run: ``<framework>-<dataset>-<sha[:8]>-<suffix>``.

    ``dataset`` is the dataset's name (a file's stem, never its path), ``sha`` the data file's
    SHA-256 (the version hash: another file content is another experiment series) and ``suffix``
    the run id's last part, so a resumed run names the same experiment and two runs never share
    one. Characters other than letters, digits, ``-``, ``_`` and ``.`` become ``_``.
    """
    dataset = os.path.basename(str(record.get("dataset") or "data"))
    for ending in (".jsonl", ".json"):
        dataset = dataset.removesuffix(ending)
    parts = [str(record.get("framework") or "eval"), dataset]
    sha = str(record.get("data_sha256") or "")
    if sha:
        parts.append(sha[:8])
    parts.append(run_id.rsplit("-", 1)[-1])
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in "-".join(parts))


def _warn(line: str) -> None:
    print(f"warning: {line}", file=sys.stderr, flush=True)


def _problem(exc: BaseException) -> str:
    """An exception as one short line (type and first line of its text, credentials masked)."""
    from factdebate.core.settings import mask_url

    text = (str(exc).strip().splitlines() or [""])[0][:200]
    return mask_url(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


class LangSmithExperiment:
    """``--langsmith``: the run's items as examples of the data file's dataset, this run as an
    experiment of it (module docstring).

    ``active`` is False when LangSmith could not be set up (one warning line said why): the run
    then goes on without tracing into an experiment, and every method is a no-op.
    """

    def __init__(self, run_id: str, dataset: str, version: str, items: list[Any],
                 record: dict[str, Any]) -> None:
        if not os.environ.get("LANGSMITH_API_KEY"):
            raise ConfigError("--langsmith needs LANGSMITH_API_KEY", "set it, or drop --langsmith")
        from factdebate.core.trace_filter import trace_client

        self.client = trace_client()  # what it posts passes the secret filter
        sha = str(record.get("data_sha256") or "")
        self.dataset_name = f"factdebate-{dataset}-{version}" + (f"-{sha[:12]}" if sha else "")
        self.project = experiment_name(run_id, record)
        self.example_ids: dict[str, uuid.UUID] = {}
        self.session_id: Any = None
        self.active = False
        self._feedback_failed = False
        try:
            ds = self._dataset(dataset, version, record)
            self.example_ids = self._examples(ds.id, items)
            self.session_id = self.client.create_project(
                self.project, reference_dataset_id=ds.id, metadata=experiment_metadata(record),
                description=f"factdebate eval {run_id}", upsert=True).id
        except Exception as exc:  # noqa: BLE001  # LangSmith is a side channel of the run
            _warn(f"--langsmith: cannot record the experiment at {self._endpoint()} "
                  f"({_problem(exc)}); the run goes on without it")
            return
        self.active = True

    def _endpoint(self) -> str:
        from factdebate.core.settings import mask_url

        return mask_url(str(getattr(self.client, "api_url", "") or "LangSmith"))

    def _dataset(self, dataset: str, version: str, record: dict[str, Any]) -> Any:
        """The data file version's dataset, created when LangSmith lacks it."""
        from langsmith.utils import LangSmithConflictError, LangSmithNotFoundError

        try:
            return self.client.read_dataset(dataset_name=self.dataset_name)
        except LangSmithNotFoundError:
            pass
        try:
            return self.client.create_dataset(
                self.dataset_name, description=f"factdebate {dataset} ({version})",
                metadata={"dataset": dataset, "dataset_version": version,
                          "data_file": os.path.basename(str(record.get("data_file") or "")),
                          "data_sha256": record.get("data_sha256", "")})
        except LangSmithConflictError:  # another run created it meanwhile
            return self.client.read_dataset(dataset_name=self.dataset_name)

    def _examples(self, dataset_id: Any, items: list[Any]) -> dict[str, uuid.UUID]:
        """Item id -> example id for ``items``: the dataset's own examples, the missing added."""
        held = {str((e.metadata or {}).get("item_id")): e.id
                for e in self.client.list_examples(dataset_id=dataset_id)}
        ids = {it.id: held.get(it.id) or uuid.uuid5(uuid.NAMESPACE_URL,
                                                    f"{self.dataset_name}:{it.id}")
               for it in items}
        missing = [it for it in items if it.id not in held]
        if missing:
            self.client.create_examples(dataset_id=dataset_id, examples=[
                {"id": ids[it.id], "inputs": dict(it.input),
                 "outputs": {"label": it.gold_label, "answers": list(it.gold_answers)},
                 "metadata": {"item_id": it.id}} for it in missing])
        return ids

    def config_for(self, item_id: str) -> dict[str, Any]:
        """Run-config callbacks tracing this item into the experiment (none when inactive)."""
        from langchain_core.tracers import LangChainTracer

        if not self.active:
            return {}
        tracer = LangChainTracer(project_name=self.project, example_id=self.example_ids[item_id],
                                 client=self.client)
        return {"callbacks": [tracer]}

    def record(self, trace_id: str, correct: bool | None,
               row: dict[str, Any] | None = None) -> None:
        """The item's feedback on its root run: ``correct`` and :func:`item_feedback`.

        A failure is one warning line for the whole run (the first); the run goes on."""
        if not self.active:
            return
        try:
            if correct is not None:
                self.client.create_feedback(trace_id, key="correct", score=float(correct),
                                            trace_id=trace_id, session_id=self.session_id)
            for key, score, value, comment in item_feedback(row or {}):
                self.client.create_feedback(trace_id, key=key, score=score, value=value or None,
                                            comment=comment or None, trace_id=trace_id,
                                            session_id=self.session_id)
        except Exception as exc:  # noqa: BLE001  # LangSmith is a side channel of the run
            if not self._feedback_failed:
                self._feedback_failed = True
                _warn(f"--langsmith: cannot send feedback to {self._endpoint()} "
                      f"({_problem(exc)}); the run goes on without it")

    def close(self) -> None:
        """Send everything still queued, then give the experiment its end time."""
        if not self.active:
            return
        try:
            self.client.flush()
            self.client.update_project(self.session_id,
                                       end_time=datetime.datetime.now(datetime.UTC))
        except Exception as exc:  # noqa: BLE001  # LangSmith is a side channel of the run
            _warn(f"--langsmith: cannot close the experiment at {self._endpoint()} "
                  f"({_problem(exc)}); the local run is complete")
