"""The operator's per-run budget of model calls and tokens.

One request must not be able to buy unbounded work: a text check with many claims, a debate pushed
past its rounds by a state edit, a command that fans out many branches. The operator sets a budget
per run in the environment:

* ``FACTDEBATE_MAX_MODEL_CALLS_PER_RUN`` - model calls (every request sent to a model: debaters,
  judges, RAGAS scoring, retries and structured-output fall-backs included). Default on a LangGraph
  server: ``SERVER_DEFAULT_CALLS`` (400); elsewhere (CLI, ``eval``): no limit.
* ``FACTDEBATE_MAX_TOKENS_PER_RUN`` - prompt plus completion tokens as the provider reports them.
  Default: no limit. A call's tokens are known only when it returns, so the call that crosses the
  limit completes and the next one is refused.

``0`` (or ``off``/``none``/``unlimited``) means no limit. Exceeding either stops the run with a
``BudgetExceededError`` naming the budget and the variable; everything the run finished is in its
checkpoint (finished rounds, turns, claims), and resuming the run continues it with a new budget.

**What is counted, and where.** The count is not in the graph state: a server client can edit the
state (``update_state``, ``Command(update=...)``), and parallel branches each see only their own
copy of it. A ``RunBudget`` is a LangChain callback handler shared by every model call of one run:
``factdebate.nodes.llm.call_config`` (the config of every model call, RAGAS scoring's included)
attaches the run's budget, which counts at ``on_chat_model_start`` - before anything is sent, under
a lock, so parallel branches cannot overshoot - and refuses with ``raise_error`` once the budget is
spent. The run is found from LangGraph's config (``langgraph.config.get_config()``), which nested
graphs (``check_text``'s verifiers, the turn subgraphs) and ``Send`` branches inherit:

1. a ``RunBudget`` the caller put into the run's ``callbacks`` (:func:`new_run_budget` builds one
   from the environment),
2. else the LangGraph server's run id (``configurable.run_id``, set by the server for every run:
   a resumed run is a new run with a new budget),
3. else the invocation's ``RunControl`` (``langgraph.runtime``): LangGraph creates one per
   ``invoke``/``stream`` and shares it with nested graphs and ``Send`` branches, so the CLI, ``eval``
   and a resume in the same process each get a budget of their own,
4. else the thread id.

A node called outside a graph has no budget.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from langchain_core.outputs import LLMResult
from langgraph.config import get_config
from langgraph.runtime import get_runtime

from factdebate.core.errors import BudgetExceededError, ConfigError
from factdebate.core.ledger import ModelEventHandler, usage_of

__all__ = [
    "CALLS_ENV", "SERVER_DEFAULT_CALLS", "TOKENS_ENV", "BudgetLimits", "RunBudget",
    "current_budget", "limits_from_env", "new_run_budget", "raise_if_refused", "run_budget_for",
]

CALLS_ENV = "FACTDEBATE_MAX_MODEL_CALLS_PER_RUN"
TOKENS_ENV = "FACTDEBATE_MAX_TOKENS_PER_RUN"
SERVER_DEFAULT_CALLS = 400
"""Model calls per run on a LangGraph server when the operator sets nothing: ~9-13 Tool-MAD claims
with RAGAS scoring (31 calls each where the provider serves ``n``, 43 where it does not:
core/models/completions.py), ~30 with consistency scoring."""
MAX_TRACKED_RUNS = 4096
"""Budgets kept per process (least recently used dropped first): far more than run at once."""
_NO_LIMIT = ("0", "off", "none", "unlimited")

warnings.filterwarnings("ignore", message="coroutine 'ahandle_event' was never awaited",
                        category=RuntimeWarning)
"""LangChain creates every handler's start-event coroutine before awaiting them in turn; when this
budget refuses a call from its ``on_chat_model_start``, the later handlers' start events (of a
call that never started) are dropped unawaited and Python would print a RuntimeWarning."""


@dataclass(frozen=True)
class BudgetLimits:
    """The limits of one run; ``None`` = no limit."""

    calls: int | None = None
    tokens: int | None = None

    @property
    def unlimited(self) -> bool:
        """True when neither limit is set."""
        return self.calls is None and self.tokens is None


def _limit(env: Mapping[str, str], name: str, default: int | None) -> int | None:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    if raw.lower() in _NO_LIMIT:
        return None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        unit = "tokens" if name == TOKENS_ENV else "model calls"
        raise ConfigError(f"{name}={raw!r} is not a number of {unit}",
                          f"set {name} to a positive integer, or 0 for no limit")
    return value or None


def limits_from_env(*, server: bool, env: Mapping[str, str] | None = None) -> BudgetLimits:
    """The operator's limits: ``FACTDEBATE_MAX_MODEL_CALLS_PER_RUN`` (default
    ``SERVER_DEFAULT_CALLS`` on a server, else none) and ``FACTDEBATE_MAX_TOKENS_PER_RUN``
    (default none). Raises ``ConfigError`` naming a variable that is not a number."""
    env = os.environ if env is None else env
    return BudgetLimits(calls=_limit(env, CALLS_ENV, SERVER_DEFAULT_CALLS if server else None),
                        tokens=_limit(env, TOKENS_ENV, None))


class RunBudget(ModelEventHandler):
    """Counts one run's model calls and tokens; refuses a call once the budget is spent.

    Shared by every model call of the run (parallel branches, nested graphs), so the counts are
    kept under a lock. ``raise_error`` makes LangChain raise the refusal out of the model call
    (it would otherwise only log it); it is raised before the request is sent.
    """

    raise_error = True

    def __init__(self, limits: BudgetLimits, *, thread_id: str = "") -> None:
        self.limits = limits
        self.thread_id = thread_id
        self._lock = threading.Lock()
        self.calls = 0
        self.tokens = 0
        self.refused = 0

    def spent(self) -> BudgetExceededError | None:
        """The error for a spent budget, or None while calls and tokens are left."""
        if self.limits.tokens is not None and self.tokens >= self.limits.tokens:
            return self._error(f"{self.limits.tokens} tokens (used {self.tokens})", TOKENS_ENV,
                               "tokens")
        if self.limits.calls is not None and self.calls >= self.limits.calls:
            return self._error(f"{self.limits.calls} model calls", CALLS_ENV, "calls")
        return None

    def _error(self, what: str, env: str, budget: str) -> BudgetExceededError:
        where = (f"what it finished is checkpointed under thread {self.thread_id}: resume that "
                 f"thread to go on with a new budget (CLI: --resume --thread-id {self.thread_id})"
                 if self.thread_id else "what it finished is checkpointed; resume the run to go on")
        return BudgetExceededError(f"the run used its budget of {what}, set by {env}",
                                   f"{where}, or raise {env}", budget=budget, env=env)

    def check(self) -> None:
        """Raise ``BudgetExceededError`` if the budget is spent (no call is counted)."""
        with self._lock:
            error = self.spent()
            if error is not None:
                self.refused += 1
        if error is not None:
            raise error

    def charge(self) -> None:
        """Count one model call, or raise ``BudgetExceededError`` if the budget is spent."""
        with self._lock:
            error = self.spent()
            if error is None:
                self.calls += 1
            else:
                self.refused += 1
        if error is not None:
            raise error

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[Any]], *,
                            run_id: UUID, **kwargs: Any) -> None:
        """A chat-model call is about to be sent: count it or refuse it."""
        self.charge()

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID,
                     **kwargs: Any) -> None:
        """A completion-model call is about to be sent: count it or refuse it."""
        self.charge()

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Add the tokens the provider reported for the call."""
        prompt, completion = usage_of(response)
        with self._lock:
            self.tokens += prompt + completion


def new_run_budget(*, server: bool = False, thread_id: str = "") -> RunBudget | None:
    """A budget for one invocation from the environment (None without limits): a caller passes
    it in the run's ``callbacks`` to give exactly that invocation its own budget."""
    limits = limits_from_env(server=server)
    return None if limits.unlimited else RunBudget(limits, thread_id=thread_id)


_runs: OrderedDict[str, tuple[object, RunBudget]] = OrderedDict()
_runs_lock = threading.Lock()


def _attached(callbacks: Any) -> RunBudget | None:
    """A ``RunBudget`` among the handlers a run's config carries (a list or a callback manager)."""
    handlers = callbacks if isinstance(callbacks, list) else getattr(callbacks, "handlers", None)
    return next((h for h in handlers or () if isinstance(h, RunBudget)), None)


def run_budget_for(config: Mapping[str, Any], control: object | None = None) -> RunBudget | None:
    """The budget of the run ``config`` belongs to (see the module docstring), or None.

    ``control`` is the run's ``langgraph.runtime.RunControl``: LangGraph makes one per invocation
    and hands the same object to nested graphs and ``Send`` branches, so it identifies the run
    where no server run id does (it has no weak references: the entry holds it, and identity is
    checked so a recycled ``id`` never finds another run's budget).
    """
    attached = _attached(config.get("callbacks"))
    if attached is not None:
        return attached
    configurable = config.get("configurable") or {}
    run_id = str(configurable.get("run_id") or "")
    thread_id = str(configurable.get("thread_id") or "")
    if run_id:
        key, anchor = f"run:{run_id}", None
    elif control is not None:
        key, anchor = f"control:{id(control)}", control
    elif thread_id:
        key, anchor = f"thread:{thread_id}", None
    else:
        return None
    with _runs_lock:
        entry = _runs.get(key)
        if entry is not None and entry[0] is anchor:
            _runs.move_to_end(key)
            return entry[1]
    limits = limits_from_env(server=bool(run_id))  # the server sets run_id on every run
    if limits.unlimited:
        return None
    with _runs_lock:
        entry = _runs.get(key)
        if entry is None or entry[0] is not anchor:
            entry = _runs[key] = (anchor, RunBudget(limits, thread_id=thread_id))
        while len(_runs) > MAX_TRACKED_RUNS:
            _runs.popitem(last=False)
    return entry[1]


def current_budget() -> RunBudget | None:
    """The budget of the run the calling node belongs to, or None outside a run."""
    try:
        config = get_config()
    except RuntimeError:  # not inside a graph (a node function called directly, a script)
        return None
    try:
        control = get_runtime().control
    except (RuntimeError, AttributeError):
        control = None
    return run_budget_for(config, control)


def raise_if_refused() -> None:
    """Raise the run's ``BudgetExceededError`` if its budget has refused a call.

    A library may swallow a model error: RAGAS turns a refused scoring call into a scoring fault
    and the debate would go on as if the answer had merely scored badly. A node after such a
    library (Tool-MAD's ``check_consensus``, after every round's scoring) calls this.
    """
    budget = current_budget()
    if budget is not None and budget.refused:
        error = budget.spent()
        if error is not None:
            raise error
