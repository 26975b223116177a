"""The papers' baselines, one graph module each (wiring only), all returning ``DebateOutput``.

Single agent: ``standard``, ``cot``, ``self_consistency``, ``react``, ``rag``, ``no_rag``,
``concat_rag``, ``self_reflection``, ``self_ask``, ``astute_rag``, ``speculative_rag``.
Multi-agent: ``mad`` (Liang et al.), ``multi_agent_debate`` (Du et al.). Shared wiring of the
one-call baselines is in ``single_call``; nodes are in ``nodes/``, prompts in
``prompts/baselines/``, knobs in ``factdebate/baseline_context.py``.
"""
