"""patches/: every gate matches the tested pins, and a moved pin fails here first."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from factdebate import patches

REPO = Path(__file__).resolve().parents[2]


def _constraints() -> dict[str, str]:
    pins = {}
    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = version.strip()
    return pins


def _declared() -> dict[str, Requirement]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += [r for r in extra if not r.startswith("factdebate")]
    return {canonicalize_name(Requirement(r).name): Requirement(r) for r in reqs}


PINS = [(name, dist, versions) for name, patch in patches.PATCHES.items()
        for dist, versions in patch.pins.items()]


@pytest.mark.parametrize(("name", "dist", "versions"), PINS, ids=[f"{n}-{d}" for n, d, _ in PINS])
def test_each_gate_admits_the_pinned_and_installed_version(name, dist, versions):
    pinned = _constraints()[canonicalize_name(dist)]
    assert pinned in versions, (
        f"constraints.txt pins {dist}=={pinned} but patch {name!r} is gated on {versions}: "
        f"re-check patches/{name}.py against {dist} {pinned}, then update its gate")
    assert metadata.version(dist) in versions  # so the tests below run the patched path
    req = _declared()[canonicalize_name(dist)]
    assert req.specifier.contains(pinned), f"pyproject's {req} excludes the tested {pinned}"


def test_every_patch_is_active_with_the_tested_set():
    assert patches.install_all() == dict.fromkeys(patches.PATCHES, True)
    assert all(patches.gate(name) is None for name in patches.PATCHES)


def test_every_patch_module_names_why_and_its_gate():
    for name, patch in patches.PATCHES.items():
        path = REPO / "patches" / f"{name}.py"
        doc = path.read_text(encoding="utf-8").split('"""')[1]
        assert patch.module == f"factdebate.patches.{name}"
        assert re.search(r"\bWhy\b|\bwhy\b|because", doc), f"{name}: no reason in the docstring"
        assert "gate" in doc, f"{name}: the docstring does not mention its version gate"


def test_a_moved_pin_closes_the_gate(monkeypatch):
    monkeypatch.setitem(patches.PATCHES, "milvus_lite", patches.Patch(
        "factdebate.patches.milvus_lite", {"milvus-lite": ("9.9.9",)}))
    monkeypatch.setattr(patches, "_state", {})
    assert patches.gate("milvus_lite") == "milvus-lite 3.2.2 is not one of 9.9.9"
    assert patches.enabled("milvus_lite") is False


def test_a_missing_library_closes_the_gate(monkeypatch):
    monkeypatch.setitem(patches.PATCHES, "ghost", patches.Patch(
        "factdebate.patches.milvus_lite", {"no-such-distribution-xyz": ("1.0",)}))
    monkeypatch.setattr(patches, "_state", {})
    assert patches.gate("ghost") == "no-such-distribution-xyz is not installed"
    assert patches.enabled("ghost") is False


def test_the_local_model_names_the_version_when_its_gate_is_closed(monkeypatch):
    from factdebate.core.errors import ConfigError
    from factdebate.core.models.local import load_local_model

    monkeypatch.setitem(patches.PATCHES, "llama_decode", patches.Patch(
        "factdebate.patches.llama_decode", {"llama-cpp-python": ("0.0.1",)}))
    monkeypatch.setattr(patches, "_state", {})
    with pytest.raises(ConfigError, match=r"llama-cpp-python 0\.3\.36 is not one of 0\.0\.1.*"
                                          r"install llama-cpp-python==0\.0\.1"):
        load_local_model("smollm2", {})
