"""Tool-MAD's prompts put the stable part first and show each passage once."""

from __future__ import annotations

from factdebate.nodes.citations import Shown
from factdebate.nodes.render import render_debate, render_history
from factdebate.prompts import load_prompts

PASSAGES = [{"id": f"d{i}", "title": f"T{i}", "text": f"Passage {i} text.", "source": "s",
             "url": "", "score": 0.0} for i in range(4)]
TURNS = [{"agent": agent, "round": r, "query": "q", "evidence": ev, "answer": "A.", "label": "X",
          "parse": "structured", "cited": []}
         for r in (1, 2) for agent, ev in (("rag", PASSAGES[:3]), ("search", PASSAGES[1:]))]
VALUES = {"subject": "Claim", "claim": "The sky is green.", "options": "", "task": "Verify it.",
          "labels": "Answer with one label.", "tool_name": "RAG", "tool_description": "search",
          "previous_query": "q", "opponents": "- search agent: X - A.", "evidence": "(docs)",
          "documents": "(docs)", "debate": "(debate)", "scores": "", "score_guide": "Guide."}


def test_every_tool_mad_prompt_of_a_claim_starts_with_the_same_system_message_and_claim() -> None:
    prompts = load_prompts("tool_mad")
    assert prompts.version == "tool_mad-3"
    rendered = [prompts.render(name, **VALUES) for name in
                ("query_initial", "query_followup", "debate_initial", "debate_followup", "judge")]
    assert len({m[0].content for m in rendered}) == 1  # one system message for every role
    for messages in rendered:
        assert messages[1].content.startswith("Claim: The sky is green.\n")
    # a debater's rounds share everything up to its documents
    first, later = rendered[2][1].content, rendered[3][1].content
    assert later.startswith(first.split("(docs)")[0] + "(docs)")


def test_the_judge_sees_each_passage_once_and_the_turns_cite_their_numbers() -> None:
    shown = Shown()
    debate = render_debate(TURNS, shown.add)
    documents = shown.render()
    assert [documents.count(f'title="T{i}"') for i in range(4)] == [1, 1, 1, 1]
    assert "documents: [1], [2], [3])" in debate and "documents: [2], [3], [4])" in debate
    # the same numbers as the history that repeats every passage of every turn
    again = Shown()
    history = render_history(TURNS, again.add)
    assert again.passages == shown.passages and history.count("<document") == 12
    assert len(documents) < len(history)
