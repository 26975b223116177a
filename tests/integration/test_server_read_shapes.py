"""History and state reads of every shape on ``langgraph dev``: an answer or a 422 naming the field,
never a 500, and the keep-alive connection serves the next request; a read at a checkpoint the
thread does not hold (pruned by the history bound, another user's, made up) is 404 as a fork is;
a state update's checkpoint object carries nothing but checkpoint fields.

One real server with ``FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD=5``; one thread of Tool-MAD runs with
scripted debaters (its debater turns checkpoint under namespaces of their own), so its oldest
checkpoints are pruned; a second user's thread supplies checkpoint ids that are not the first's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from tests.integration.servers import needs_langgraph, serving, user_client, users_env

pytestmark = needs_langgraph

KEYS = {"reader": "reader-shapes-key-0123456789", "other": "other-shapes-key-0123456789"}
HISTORY = 5
RUN = {"assistant_id": "tool_mad", "input": {"claim": "Berlin is the capital of Germany."},
       "context": {"debater_model": "scripted:agree", "scoring_mode": "consistency",
                   "max_rounds": 1}}


@dataclass
class Served:
    url: str
    thread: str
    pruned: str
    kept: list[str]
    turn_ns: str
    others: str
    other_thread: str


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    work = tmp_path_factory.mktemp("read-shapes-server")
    with serving(work, {**users_env(work, KEYS),
                        "FACTDEBATE_MAX_CHECKPOINTS_PER_THREAD": str(HISTORY)}) as url:
        with user_client(url, KEYS["reader"], timeout=120) as client:
            thread = client.post("/threads", json={}).json()["thread_id"]
            assert client.post(f"/threads/{thread}/runs/wait", json=RUN).status_code == 200
            first = client.post(f"/threads/{thread}/history", json={"limit": 100}).json()
            pruned = first[-1]["checkpoint"]["checkpoint_id"]
            assert client.post(f"/threads/{thread}/runs/wait", json=RUN).status_code == 200
            client.post(f"/threads/{thread}/state", json={"values": {"claim": "Berlin."}})
            streamed = client.post(f"/threads/{thread}/runs/stream", json={  # with the turns'
                **RUN, "context": {**RUN["context"], "inner_checkpoints": True},  # checkpoints
                "stream_mode": ["updates"], "stream_subgraphs": True})
            assert streamed.status_code == 200, streamed.text[:500]
            turns = [ln.split("|")[1].strip() for ln in streamed.text.splitlines()
                     if ln.startswith("event: updates|") and ":" in ln[15:]]
            kept = [h["checkpoint"]["checkpoint_id"] for h in
                    client.post(f"/threads/{thread}/history", json={"limit": 100}).json()]
            assert pruned not in kept and len(kept) >= 3
        with user_client(url, KEYS["other"], timeout=120) as other:
            other_thread = other.post("/threads", json={}).json()["thread_id"]
            assert other.post(f"/threads/{other_thread}/runs/wait", json=RUN).status_code == 200
            others = other.get(f"/threads/{other_thread}/state").json()["checkpoint"][
                "checkpoint_id"]
        yield Served(url, thread, pruned, kept, turns[0] if turns else "", others, other_thread)


DEEP = {"a": 1}
for _ in range(40):
    DEEP = {"a": DEEP}
HUGE = 10 ** 30

# (name, method, path after /threads/{thread}, JSON body or raw bytes or None, expected status)
# "{pruned}", "{kept}", "{older}", "{others}", "{thread}", "{turn}" are filled in per server.
SHAPES: list[tuple[str, str, str, Any, int]] = [
    ("before string id (pruned)", "POST", "/history", {"before": "{pruned}"}, 404),
    ("before string junk", "POST", "/history", {"before": "x"}, 404),
    ("before empty object", "POST", "/history", {"before": {}}, 422),
    ("before configurable number", "POST", "/history", {"before": {"configurable": 1}}, 422),
    ("before configurable empty", "POST", "/history", {"before": {"configurable": {}}}, 422),
    ("before configurable list", "POST", "/history", {"before": {"configurable": []}}, 422),
    ("before configurable id number", "POST", "/history",
     {"before": {"configurable": {"checkpoint_id": 5}}}, 422),
    ("before list", "POST", "/history", {"before": []}, 422),
    ("before number", "POST", "/history", {"before": 7}, 422),
    ("before huge number", "POST", "/history", {"before": HUGE}, 422),
    ("before float", "POST", "/history", {"before": 1.5}, 422),
    ("before bool", "POST", "/history", {"before": True}, 422),
    ("before null", "POST", "/history", {"before": None}, 200),
    ("before checkpoint object (kept)", "POST", "/history", {"before": {"checkpoint_id": "{kept}"}},
     200),
    ("before runnable config (kept)", "POST", "/history",
     {"before": {"configurable": {"checkpoint_id": "{kept}"}}}, 200),
    ("before checkpoint object (pruned)", "POST", "/history",
     {"before": {"checkpoint_id": "{pruned}"}}, 404),
    ("before another user's checkpoint", "POST", "/history",
     {"before": {"checkpoint_id": "{others}"}}, 404),
    ("before with another thread id", "POST", "/history",
     {"before": {"checkpoint_id": "{kept}", "thread_id": "{other_thread}"}}, 422),
    ("before with an extra key", "POST", "/history",
     {"before": {"checkpoint_id": "{kept}", "__pregel_checkpointer": 1}}, 422),
    ("before deeply nested", "POST", "/history", {"before": DEEP}, 422),
    ("before unicode id", "POST", "/history", {"before": "\u2028\U0001f600\u202e"}, 404),
    ("before control characters", "POST", "/history", {"before": "a\u0000b"}, 422),
    ("before 10k characters", "POST", "/history", {"before": "c" * 10_000}, 422),
    ("limit zero", "POST", "/history", {"limit": 0}, 422),
    ("limit negative", "POST", "/history", {"limit": -5}, 422),
    ("limit huge", "POST", "/history", {"limit": HUGE}, 422),
    ("limit string", "POST", "/history", {"limit": "5"}, 422),
    ("limit float", "POST", "/history", {"limit": 2.5}, 422),
    ("limit whole float", "POST", "/history", {"limit": 2.0}, 200),
    ("limit bool", "POST", "/history", {"limit": True}, 422),
    ("limit object", "POST", "/history", {"limit": {"n": 1}}, 422),
    ("limit 1000", "POST", "/history", {"limit": 1000}, 200),
    ("limit 1001", "POST", "/history", {"limit": 1001}, 422),
    ("metadata number", "POST", "/history", {"metadata": 1}, 422),
    ("metadata list", "POST", "/history", {"metadata": [1]}, 422),
    ("metadata string", "POST", "/history", {"metadata": "step"}, 422),
    ("metadata nested", "POST", "/history", {"metadata": {"a": {"b": [1, {"c": None}]}}}, 200),
    ("metadata deep", "POST", "/history", {"metadata": DEEP}, 422),
    ("metadata huge integer", "POST", "/history", {"metadata": {"step": HUGE}}, 422),
    ("metadata unicode", "POST", "/history", {"metadata": {"\u00e9\U0001f600": "\u202e"}}, 200),
    ("checkpoint string", "POST", "/history", {"checkpoint": "x"}, 422),
    ("checkpoint list", "POST", "/history", {"checkpoint": []}, 422),
    ("checkpoint empty", "POST", "/history", {"checkpoint": {}}, 200),
    ("checkpoint id number", "POST", "/history", {"checkpoint": {"checkpoint_id": 1}}, 422),
    ("checkpoint pruned", "POST", "/history", {"checkpoint": {"checkpoint_id": "{pruned}"}}, 404),
    ("checkpoint unknown namespace", "POST", "/history", {"checkpoint": {"checkpoint_ns": "x:y"}},
     404),
    ("checkpoint turn namespace", "POST", "/history", {"checkpoint": {"checkpoint_ns": "{turn}"}},
     200),
    ("checkpoint namespace number", "POST", "/history", {"checkpoint": {"checkpoint_ns": 3}}, 422),
    ("checkpoint injected configurable", "POST", "/history",
     {"checkpoint": {"__pregel_read": "x"}}, 422),
    ("checkpoint map of numbers", "POST", "/history", {"checkpoint": {"checkpoint_map": {"a": 1}}},
     422),
    ("checkpoint map string", "POST", "/history", {"checkpoint": {"checkpoint_map": "x"}}, 422),
    ("unknown field", "POST", "/history", {"limt": 5}, 422),
    ("body list", "POST", "/history", [], 422),
    ("body string", "POST", "/history", "history", 422),
    ("body number", "POST", "/history", HUGE, 422),
    ("body null", "POST", "/history", b"null", 422),
    ("body empty", "POST", "/history", b"", 200),
    ("body not JSON", "POST", "/history", b"{limit: 1", 422),
    ("body NaN", "POST", "/history", b'{"limit": NaN}', 422),
    ("body Infinity in metadata", "POST", "/history", b'{"metadata": {"a": -Infinity}}', 422),
    ("body not UTF-8", "POST", "/history", b'{"before": "\xff\xfe"}', 422),
    ("body nested 5000 deep", "POST", "/history", b"[" * 5000 + b"]" * 5000, 422),
    ("body metadata nested 900 deep", "POST", "/history",
     b'{"metadata": ' + b'{"a": ' * 900 + b"1" + b"}" * 901, 422),
    ("GET limit negative", "GET", "/history?limit=-1", None, 422),
    ("GET limit zero", "GET", "/history?limit=0", None, 422),
    ("GET limit huge", "GET", f"/history?limit={HUGE}", None, 422),
    ("GET limit word", "GET", "/history?limit=ten", None, 422),
    ("GET limit unicode digits", "GET", "/history?limit=%D9%A1%D9%A2", None, 422),
    ("GET limit ok", "GET", "/history?limit=3", None, 200),
    ("GET before pruned", "GET", "/history?before={pruned}", None, 404),
    ("GET before kept", "GET", "/history?before={kept}&limit=2", None, 200),
    ("GET before another user's", "GET", "/history?before={others}", None, 404),
    ("GET before empty", "GET", "/history?before=", None, 200),
    ("GET before NUL", "GET", "/history?before=%00", None, 422),
    ("GET two limits", "GET", "/history?limit=2&limit=-2", None, 422),
    ("GET state pruned", "GET", "/state/{pruned}", None, 404),
    ("GET state kept", "GET", "/state/{kept}", None, 200),
    ("GET state another user's", "GET", "/state/{others}", None, 404),
    ("GET state junk", "GET", "/state/x", None, 404),
    ("GET state unicode", "GET", "/state/%E2%80%AE%F0%9F%98%80", None, 404),
    ("GET state NUL", "GET", "/state/%00", None, 422),
    ("GET state 5000 characters", "GET", "/state/" + "a" * 5000, None, 422),
    ("GET state subgraphs junk", "GET", "/state/{kept}?subgraphs=%00", None, 200),
    ("POST state checkpoint kept", "POST", "/state/checkpoint",
     {"checkpoint": {"checkpoint_id": "{kept}"}}, 200),
    ("POST state checkpoint as returned", "POST", "/state/checkpoint",
     {"checkpoint": {"checkpoint_id": "{kept}", "thread_id": "{thread}", "checkpoint_ns": "",
                     "checkpoint_map": None}}, 200),
    ("POST state checkpoint pruned", "POST", "/state/checkpoint",
     {"checkpoint": {"checkpoint_id": "{pruned}"}}, 404),
    ("POST state checkpoint another user's", "POST", "/state/checkpoint",
     {"checkpoint": {"checkpoint_id": "{others}"}}, 404),
    ("POST state checkpoint missing", "POST", "/state/checkpoint", {}, 422),
    ("POST state checkpoint null", "POST", "/state/checkpoint", {"checkpoint": None}, 422),
    ("POST state checkpoint string", "POST", "/state/checkpoint", {"checkpoint": "{kept}"}, 422),
    ("POST state checkpoint empty", "POST", "/state/checkpoint", {"checkpoint": {}}, 200),
    ("POST state checkpoint unknown namespace", "POST", "/state/checkpoint",
     {"checkpoint": {"checkpoint_ns": "nope:1"}}, 404),
    ("POST state checkpoint turn namespace", "POST", "/state/checkpoint",
     {"checkpoint": {"checkpoint_ns": "{turn}"}}, 200),
    ("POST state checkpoint configurable injected", "POST", "/state/checkpoint",
     {"checkpoint": {"configurable": {"checkpoint_id": "{kept}"}}}, 422),
    ("POST state subgraphs string", "POST", "/state/checkpoint",
     {"checkpoint": {}, "subgraphs": "yes"}, 422),
    ("POST state subgraphs true", "POST", "/state/checkpoint",
     {"checkpoint": {"checkpoint_id": "{kept}"}, "subgraphs": True}, 200),
    ("POST state body list", "POST", "/state/checkpoint", [{"checkpoint": {}}], 422),
    ("POST state body deep", "POST", "/state/checkpoint", {"checkpoint": DEEP}, 422),
    # a state update's checkpoint is merged into its configurable: only refusals here (a write
    # would move the thread's history under the other shapes)
    ("state update injected configurable", "POST", "/state",
     {"values": {"claim": "y"}, "checkpoint": {"__pregel_task_id": "x"}}, 422),
    ("state update checkpoint id object", "POST", "/state",
     {"values": {"claim": "y"}, "checkpoint_id": {}}, 422),
    ("state update checkpoint id list", "POST", "/state",
     {"values": {"claim": "y"}, "checkpoint_id": [1]}, 422),
    ("state update checkpoint id number", "POST", "/state",
     {"values": {"claim": "y"}, "checkpoint": {"checkpoint_id": 5}}, 422),
    ("state update checkpoint of another thread", "POST", "/state",
     {"values": {"claim": "y"}, "checkpoint": {"checkpoint_id": "{kept}",
                                               "thread_id": "{other_thread}"}}, 422),
    ("state update from a pruned checkpoint", "POST", "/state",
     {"values": {"claim": "y"}, "checkpoint_id": "{pruned}"}, 404),
    ("state update body list", "POST", "/state", [{"values": {}}], 422),
]


def _filled(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        for name, text in names.items():
            value = value.replace("{" + name + "}", text)
        return value
    if isinstance(value, dict):
        return {_filled(k, names): _filled(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, names) for v in value]
    return value


def _client_port(response: httpx.Response) -> Any:
    return response.extensions["network_stream"].get_extra_info("client_addr")


@pytest.mark.parametrize(("name", "method", "path", "body", "expected"), SHAPES,
                         ids=[s[0] for s in SHAPES])
def test_every_read_shape_answers_or_names_its_field(served: Served, name: str, method: str,
                                                     path: str, body: Any, expected: int):
    names = {"pruned": served.pruned, "kept": served.kept[1], "others": served.others,
             "thread": served.thread, "other_thread": served.other_thread, "turn": served.turn_ns}
    if "{turn}" in repr(body) and not served.turn_ns:
        pytest.skip("the thread kept no debater-turn namespace")
    url = f"/threads/{served.thread}{_filled(path, names)}"
    with user_client(served.url, KEYS["reader"], timeout=60) as client:
        if method == "GET":
            answer = client.get(url)
        elif isinstance(body, bytes):
            answer = client.post(url, content=body, headers={"content-type": "application/json"})
        else:
            answer = client.post(url, json=_filled(body, names))
        assert answer.status_code == expected, (name, answer.status_code, answer.text[:500])
        if expected == 422:
            detail = answer.json()["detail"]
            assert isinstance(detail, str) and len(detail) < 1000, detail
        if expected == 404:
            assert "not in the history" in answer.text or "holds no checkpoint" in answer.text, (
                answer.text[:500])
        # the same keep-alive connection serves the next request
        after = client.get(f"/threads/{served.thread}/state")
        assert after.status_code == 200, after.text[:300]
        assert _client_port(after) == _client_port(answer), "the connection was not kept"


def test_paging_by_a_checkpoint_object_lists_what_is_older(served: Served):
    """``before`` in the shape the SDK sends (a checkpoint object) pages the history."""
    with user_client(served.url, KEYS["reader"], timeout=60) as client:
        page = client.post(f"/threads/{served.thread}/history", json={
            "limit": 100, "before": {"checkpoint_id": served.kept[0], "checkpoint_ns": "",
                                     "thread_id": served.thread}})
        assert page.status_code == 200, page.text[:500]
        assert [h["checkpoint"]["checkpoint_id"] for h in page.json()] == served.kept[1:]
        at = client.get(f"/threads/{served.thread}/state/{served.kept[1]}")
        assert at.status_code == 200 and at.json()["values"], at.text[:500]


def test_a_read_without_a_key_is_401_whatever_its_body(served: Served):
    with httpx.Client(base_url=served.url, timeout=60) as anonymous:
        for body in ({"before": {}}, {"before": "x"}):
            answer = anonymous.post(f"/threads/{served.thread}/history", json=body)
            assert answer.status_code == 401, answer.text
        assert anonymous.get(f"/threads/{served.thread}/state/x").status_code == 401


def test_another_users_thread_is_not_found_whatever_the_checkpoint(served: Served):
    """A read of another user's thread gets langgraph-api's own "not found" for a checkpoint it
    holds and one it does not alike: the refusal tells nothing of the thread's history."""
    with user_client(served.url, KEYS["reader"], timeout=60) as client:
        answers = [client.get(f"/threads/{served.other_thread}/state/{checkpoint}")
                   for checkpoint in (served.others, served.pruned)]
    assert {a.status_code for a in answers} == {404}, [a.text for a in answers]
    assert answers[0].text.replace(served.others, "C") == answers[1].text.replace(
        served.pruned, "C")
