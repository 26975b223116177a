"""``factdebate.patches.lc_fastpaths``: the cached signature inspection answers as langchain-core's."""

from __future__ import annotations

import functools
import gc
import inspect

import pytest
from langchain_core.language_models import chat_models, llms
from langchain_core.messages import HumanMessage
from langchain_core.utils import _signature

import factdebate.core.models  # noqa: F401  (installs the fast path)
from factdebate.core.ledger import UsageTracker
from factdebate.core.models.scripted import scripted
from factdebate.patches import lc_fastpaths

original = _signature._signature_parameters


class Model:
    def _agenerate(self, messages, stop=None, run_manager=None, **kwargs):  # noqa: ANN001
        return messages

    @classmethod
    def build(cls, size: int = 1, *, name: str = ""):  # noqa: ANN206
        return cls()

    @staticmethod
    def helper(a, b=2):  # noqa: ANN001, ANN205
        return a


class Legacy(Model):
    def _agenerate(self, messages, stop=None, **kwargs):  # noqa: ANN001 - no run_manager
        return messages


class Star:
    def method(*args, **kwargs):  # noqa: ANN002, ANN003, N805 - first parameter is *args
        return args


class CallableObject:
    def __call__(self, x, *, config=None):  # noqa: ANN001
        return x


def plain(x, y=1, *, config=None, **rest):  # noqa: ANN001, ANN003
    return x


def per_instance_agenerate(messages, run_manager=None):  # noqa: ANN001
    return messages


def decorated_target(a, run_manager=None):  # noqa: ANN001
    return a


@functools.wraps(decorated_target)
def decorated(*args, **kwargs):  # noqa: ANN002, ANN003
    return decorated_target(*args, **kwargs)


def callables() -> list:
    with_own = Model()
    with_own._agenerate = per_instance_agenerate  # type: ignore[method-assign]  # differs per instance
    return [
        Model()._agenerate, Model()._agenerate, Legacy()._agenerate, with_own._agenerate,
        Model.build, Model().build, Model.helper, Star().method, plain,
        functools.partial(plain, 1), functools.partial(Model()._agenerate, []), CallableObject(),
        len, Model, lambda a, run_manager=None: a, decorated,
        scripted(lambda call: "x")._agenerate, scripted(lambda call: "x")._generate,
    ]


def describe(params) -> list[tuple]:  # noqa: ANN001
    return [(p.name, p.kind, p.default, p.annotation) for p in params.values()]


def test_installed_on_this_langchain_core_in_the_per_call_modules() -> None:
    assert lc_fastpaths.installed()
    assert chat_models._signature_parameters is lc_fastpaths.cached_signature_parameters
    assert llms._signature_parameters is lc_fastpaths.cached_signature_parameters
    assert _signature._signature_parameters is original  # tools, retrievers keep the original


@pytest.mark.parametrize("index", range(len(callables())))
def test_same_parameters_as_langchain_for_every_kind_of_callable(index: int) -> None:
    obj = callables()[index]
    expected = describe(original(obj))
    assert describe(lc_fastpaths.cached_signature_parameters(obj)) == expected
    assert describe(lc_fastpaths.cached_signature_parameters(obj)) == expected  # from the cache


def test_bound_methods_share_one_entry_per_function_and_instances_with_their_own_differ() -> None:
    first, second = Model(), Model()
    a = lc_fastpaths.cached_signature_parameters(first._agenerate)
    assert lc_fastpaths.cached_signature_parameters(second._agenerate) is a  # cached, not recomputed
    assert a.get("run_manager") is not None
    assert lc_fastpaths.cached_signature_parameters(Legacy()._agenerate).get("run_manager") is None
    own = Model()
    own._agenerate = per_instance_agenerate  # type: ignore[method-assign]
    assert list(lc_fastpaths.cached_signature_parameters(own._agenerate)) == [
        "messages", "run_manager"]
    # a bound method and its plain function have different signatures (self dropped)
    assert list(lc_fastpaths.cached_signature_parameters(Model._agenerate))[0] == "self"
    assert list(lc_fastpaths.cached_signature_parameters(first._agenerate))[0] == "messages"


def test_a_function_whose_code_or_defaults_change_is_inspected_again() -> None:
    def f(a, b=1):  # noqa: ANN001, ANN202
        return a

    def g(x, run_manager=None):  # noqa: ANN001, ANN202
        return x

    assert list(lc_fastpaths.cached_signature_parameters(f)) == ["a", "b"]
    f.__defaults__ = (5,)
    assert lc_fastpaths.cached_signature_parameters(f)["b"].default == 5
    f.__code__ = g.__code__
    assert list(lc_fastpaths.cached_signature_parameters(f)) == ["x", "run_manager"]
    f.__signature__ = inspect.Signature()  # type: ignore[attr-defined]
    assert list(lc_fastpaths.cached_signature_parameters(f)) == []


def test_functions_made_on_the_fly_are_not_kept_alive() -> None:
    before = len(lc_fastpaths._plain)
    fns = [eval("lambda a, run_manager=None: a") for _ in range(50)]  # noqa: S307
    for fn in fns:
        lc_fastpaths.cached_signature_parameters(fn)
    assert len(lc_fastpaths._plain) >= before + 50
    del fns, fn
    gc.collect()
    assert len(lc_fastpaths._plain) <= before


async def test_a_chat_model_call_through_the_fast_path_still_passes_run_manager() -> None:
    tracker = UsageTracker()
    model = scripted(lambda call: f"seen {call.metadata.get('fd_role')}")
    reply = await model.ainvoke([HumanMessage("one two three")],
                                config={"callbacks": [tracker], "metadata": {"fd_role": "probe"}})
    # the role comes from run_manager.metadata: run_manager was passed to _agenerate
    assert reply.content == "seen probe"
    assert tracker.delta() == {"llm_calls": 1, "prompt_tokens": 3, "completion_tokens": 2}


@pytest.fixture
def reinstall():  # noqa: ANN201
    lc_fastpaths.uninstall()
    yield
    lc_fastpaths.uninstall()
    assert lc_fastpaths.install()


def test_uninstall_restores_langchain(reinstall) -> None:  # noqa: ANN001
    assert not lc_fastpaths.installed()
    assert chat_models._signature_parameters is original
    assert llms._signature_parameters is original


def test_refuses_an_untested_langchain_core_version(reinstall, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setattr(lc_fastpaths, "TESTED_VERSIONS", ("0.0.1",))
    assert lc_fastpaths.install() is False
    assert not lc_fastpaths.installed()
    assert chat_models._signature_parameters is original


def test_refuses_when_a_module_no_longer_uses_the_function(reinstall, monkeypatch) -> None:  # noqa: ANN001
    def other(obj):  # noqa: ANN001, ANN202
        return original(obj)

    monkeypatch.setattr(llms, "_signature_parameters", other)
    assert lc_fastpaths.install() is False
    assert chat_models._signature_parameters is original  # nothing half-patched
    assert llms._signature_parameters is other


def test_refuses_when_the_function_changed_shape(reinstall, monkeypatch) -> None:  # noqa: ANN001
    def reshaped(obj, *, follow=True):  # noqa: ANN001, ANN202
        return original(obj)

    for module in (_signature, chat_models, llms):  # a consistent release, only the shape differs
        monkeypatch.setattr(module, "_signature_parameters", reshaped)
    assert lc_fastpaths.install() is False
    assert chat_models._signature_parameters is reshaped


def test_install_is_idempotent() -> None:
    assert lc_fastpaths.install() and lc_fastpaths.install()
    assert chat_models._signature_parameters is lc_fastpaths.cached_signature_parameters
