"""Per-call fast paths for langchain-core's chat-model call path (langchain-core 1.7.x).

Why: every ``BaseChatModel.ainvoke`` ends in ``_agenerate_with_cache``, which asks
``langchain_core.utils._signature._signature_parameters(self._agenerate)`` - a full
``inspect.signature`` - whether the model's ``_agenerate`` takes ``run_manager``. That is ~22 us of
interpreted work per call, recomputed for a method whose signature never changes: 4.6 % of the
event loop's CPU in a py-spy ``--gil`` profile of Tool-MAD claims with the scripted model (~43
chat-model calls per claim at T=3; ``factdebate bench``), all of it under that one caller.

What: :func:`cached_signature_parameters` answers from a cache for plain Python functions and
for bound methods of plain Python functions, keyed by the function object itself (a bound
method's signature depends only on its ``__func__``, never on ``__self__``, so every instance
shares one entry - and an instance whose ``_agenerate`` is a different function gets its own). A
hit is used only while the function's ``__code__``, ``__defaults__`` and ``__kwdefaults__`` are the
objects the entry was computed from and it carries no ``__wrapped__``/``__signature__`` of its
own; anything else (partials, callable objects, builtins, classes, decorated functions) goes to
the original function. The cache holds weak references, so functions made on the fly (lambdas
of a ``RunnableLambda``) are not kept alive. The value is the original's own result (an
immutable ``mappingproxy`` of immutable ``Parameter`` objects), so callers get exactly what they
got before. Only a function whose ``__annotations__`` dict is mutated in place after its first
call would see a stale annotation; langchain's chat/LLM callers read only parameter names.

The patch rebinds the name in ``langchain_core.language_models.chat_models`` and ``.llms`` (the
per-call users; tool and retriever code keeps the original). :func:`install` (called when
``factdebate.core.models`` is imported) does so only for the langchain-core versions in
``TESTED_VERSIONS`` and only if the original still has the expected shape; otherwise langchain is
left untouched (correct, just slower). Measured per call with ``timeit`` on the scripted model's
``_agenerate``: 21.8 us -> 1.1 us.

Not patched, measured and left: ``BaseChatModel._dict_for_compat`` (~16 us, mostly
``warnings.catch_warnings``) - skipping it would stop suppressing deprecation warnings a provider's
``_identifying_params`` might raise, so it would not be behaviour-identical.
"""

from __future__ import annotations

import inspect
import sys
import threading
import types
import weakref
from collections.abc import Callable, Mapping
from typing import Any

TESTED_VERSIONS = ("1.7.2",)
"""langchain-core releases whose ``_signature_parameters`` (and its callers) this module mirrors."""
PATCHED_MODULES = (
    "langchain_core.language_models.chat_models",
    "langchain_core.language_models.llms",
)
"""Modules whose per-call ``_signature_parameters`` binding is replaced."""

_original: Callable[[Any], Mapping[str, inspect.Parameter]] | None = None
_lock = threading.Lock()
# function -> (code, defaults, kwdefaults, parameters); one map for plain calls, one for bound
_plain: weakref.WeakKeyDictionary[types.FunctionType, tuple[Any, Any, Any, Any]] = (
    weakref.WeakKeyDictionary()
)
_bound: weakref.WeakKeyDictionary[types.FunctionType, tuple[Any, Any, Any, Any]] = (
    weakref.WeakKeyDictionary()
)


def cached_signature_parameters(obj: Callable[..., Any]) -> Mapping[str, inspect.Parameter]:
    """Drop-in for langchain-core's ``_signature_parameters`` (same argument, same result)."""
    original = _original
    assert original is not None, "install() first"
    kind = type(obj)
    if kind is types.MethodType:
        func = obj.__func__  # type: ignore[attr-defined]
        cache = _bound
    elif kind is types.FunctionType:
        func, cache = obj, _plain
    else:
        return original(obj)
    if type(func) is not types.FunctionType:
        return original(obj)
    own = func.__dict__
    if own and ("__wrapped__" in own or "__signature__" in own):
        return original(obj)
    code, defaults, kwdefaults = func.__code__, func.__defaults__, func.__kwdefaults__
    hit = cache.get(func)
    if hit is not None and hit[0] is code and hit[1] is defaults and hit[2] is kwdefaults:
        return hit[3]  # type: ignore[no-any-return]
    params = original(obj)
    cache[func] = (code, defaults, kwdefaults, params)
    return params


def install() -> bool:
    """Route langchain-core's per-call signature checks through the cache (idempotent).

    Returns:
        True if the fast path is active, False if this langchain-core is not one it supports.
    """
    global _original
    with _lock:
        if _original is not None:
            return True
        try:
            from langchain_core.utils import _signature
            from langchain_core.version import VERSION as version
        except ImportError:
            return False
        current = getattr(_signature, "_signature_parameters", None)
        if version not in TESTED_VERSIONS or not isinstance(current, types.FunctionType):
            return False
        if tuple(inspect.signature(current).parameters) != ("obj",):
            return False
        modules = []
        for name in PATCHED_MODULES:
            try:
                module = sys.modules.get(name) or __import__(name, fromlist=["_"])
            except ImportError:
                return False
            if getattr(module, "_signature_parameters", None) is not current:
                return False  # the module changed how it inspects signatures: leave it alone
            modules.append(module)
        _original = current
        for module in modules:
            module._signature_parameters = cached_signature_parameters  # type: ignore[attr-defined]
        return True


def installed() -> bool:
    """True once :func:`install` has replaced the function."""
    return _original is not None


def uninstall() -> None:
    """Restore langchain-core's own function (tests)."""
    global _original
    with _lock:
        if _original is None:
            return
        for name in PATCHED_MODULES:
            module = sys.modules.get(name)
            if module is not None and module._signature_parameters is cached_signature_parameters:  # type: ignore[attr-defined]
                module._signature_parameters = _original  # type: ignore[attr-defined]
        _original = None
        _plain.clear()
        _bound.clear()
