"""One chat completion on a llama.cpp context: prompt, token loop, grammar, stopping (gated patch).

Moved here from ``core/models/local_decode.py``: it reads llama-cpp-python's
private ``Llama._model`` / ``Llama._ctx`` / ``Llama._init_sampler``, so it runs only with the exact
llama-cpp-python in ``factdebate.patches.PATCHES`` (ask ``factdebate.patches.enabled
("llama_decode")``; ``factdebate.core.models.local`` refuses the embedded model otherwise, naming
the version to install). ``engine`` is any object with ``llama`` (a ``llama_cpp.Llama``) and a
``cache`` dict (``factdebate.core.models.local_engine.Engine``); this package imports nothing of
``factdebate``.

It replaces ``Llama.create_chat_completion`` (same chat template, same prompt tokens, same
greedy picks) because of what a profile of ``local:smollm2`` showed (~9 s per call):

* **Grammar cost.** llama-cpp-python applies the GBNF grammar to all ~49k vocabulary entries
  before every pick: ~10 ms per token next to a ~21 ms forward pass (1.5 ms here). Greedy decoding
  checks the model's top token against the grammar first and constrains the whole vocabulary only
  when that token is not allowed (what llama.cpp's own ``common_sampler`` does). The pick is the
  same - the best allowed token is the best token whenever that one is allowed.
* **Degenerate loops.** The 135M model often repeats a phrase until the string cap or
  ``max_tokens`` ("This is a fact. This is a fact. ..." in a search query: 150-330 generated
  tokens where ~30 carry the answer). When the reply ends in back-to-back copies of one token
  block (``repeated_tail``), the copies after the first are dropped; inside a JSON string the
  string is then closed, so the grammar finishes the object, and plain text stops there.
  ``Completion.repetition_cut`` reports it.
* **Prompt evaluation** (~80-110 tokens/s on one core for this Q4_1 file, ~600-token debater
  prompts) is what remains; it is not changed here (see ``local_engine`` for running two calls
  at once).

Sampling at temperature > 0 uses llama-cpp-python's sampler chain with its
``create_chat_completion`` defaults (top-k 40, top-p 0.95, min-p 0.05), after the grammar.
"""

from __future__ import annotations

import ctypes
import math
import time
from dataclasses import dataclass
from typing import Any, Protocol

import llama_cpp
import numpy as np
from llama_cpp import llama_chat_format


class Engine(Protocol):
    """What a decode needs of ``factdebate.core.models.local_engine.Engine``."""

    llama: Any
    cache: dict[str, Any]

MIN_LOOP_TOKENS = 16
"""A block repeated back to back counts as a loop once the copies span this many tokens ..."""
MAX_LOOP_PERIOD = 48
"""... for blocks of up to this many tokens (always at least two copies)."""

_TOKEN_DTYPE = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)], align=True)


@dataclass
class Completion:
    """What one call produced."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    """Tokens generated, including any dropped as a repetition."""
    finish_reason: str
    """``stop`` (end of turn, stop string, loop cut in plain text) or ``length``."""
    repetition_cut: int
    """Tokens dropped as back-to-back repetitions (0: none)."""
    prompt_s: float
    generation_s: float


def repeated_tail(tokens: list[int], start: int = 0) -> tuple[int, int]:
    """``(tokens to drop, block length)`` when ``tokens[start:]`` ends in back-to-back copies of
    one block, else ``(0, 0)``.

    A block of ``p`` tokens is a loop after ``max(2, ceil(MIN_LOOP_TOKENS / p))`` copies; all
    copies but the first are dropped.
    """
    n = len(tokens) - start
    end = len(tokens)
    for p in range(1, min(MAX_LOOP_PERIOD, n // 2) + 1):
        copies = max(2, -(-MIN_LOOP_TOKENS // p))
        if copies * p > n:
            continue
        block = tokens[end - p :]
        if all(tokens[end - (k + 1) * p : end - k * p] == block for k in range(1, copies)):
            return (copies - 1) * p, p
    return 0, 0


def sentence_end(detokenize: Any, kept: list[int], block: list[int]) -> int:
    """How many tokens of the next copy of ``block`` to keep so that ``kept`` ends a sentence.

    The first copy of a loop starts wherever the repetition was noticed ("... Korea. This is a
    fact" + ". This is a fact" ...); ending it at its sentence mark reads better. 0 when ``kept``
    already ends one or the block has no sentence mark.
    """
    marks = (".", "!", "?")
    if detokenize(kept).rstrip().endswith(marks):
        return 0
    for r in range(1, len(block)):
        if detokenize(block[:r]).rstrip().endswith(marks):
            return r
    return 0


class Picker:
    """Next-token choice under an optional GBNF grammar: greedy, or the sampler chain."""

    def __init__(self, llama: Any, gbnf: str | None, temperature: float, seed: int) -> None:
        self.n_vocab = int(llama.n_vocab())
        self.grammar = None
        if gbnf is not None:
            self.grammar = llama_cpp.llama_sampler_init_grammar(
                llama._model.vocab, gbnf.encode("utf-8"), b"root"
            )
            if not self.grammar:
                raise ValueError("llama.cpp rejected the structured-output grammar")
        self.chain = None
        if temperature > 0:
            llama.set_seed(seed)
            self.chain = llama._init_sampler(temp=temperature, top_k=40, top_p=0.95, min_p=0.05)
        self._all = np.zeros(self.n_vocab, dtype=_TOKEN_DTYPE)
        self._one = np.zeros(1, dtype=_TOKEN_DTYPE)

    def close(self) -> None:
        """Free the llama.cpp samplers."""
        if self.grammar:
            llama_cpp.llama_sampler_free(self.grammar)
            self.grammar = None
        if self.chain is not None:
            self.chain.close()
            self.chain = None

    def _apply(self, sampler: Any, data: np.ndarray) -> ctypes.Structure:
        arr = llama_cpp.llama_token_data_array(
            data=data.ctypes.data_as(llama_cpp.llama_token_data_p),
            size=len(data),
            selected=-1,
            sorted=False,
        )
        llama_cpp.llama_sampler_apply(sampler, ctypes.byref(arr))
        return arr

    def allows(self, token: int) -> bool:
        """Whether the grammar accepts ``token`` next (always, without a grammar)."""
        if not self.grammar:
            return True
        self._one["id"], self._one["logit"] = token, 0.0
        self._apply(self.grammar, self._one)
        return bool(math.isfinite(self._one["logit"][0]))

    def pick(self, logits: np.ndarray) -> int | None:
        """The next token (not yet accepted), or None when the grammar allows nothing."""
        if self.chain is None:
            best = int(np.argmax(logits))
            if self.allows(best):
                return best
        self._all["id"] = np.arange(self.n_vocab)
        self._all["logit"] = logits
        if self.grammar:
            self._apply(self.grammar, self._all)
        if self.chain is None:
            best = int(np.argmax(self._all["logit"]))
            return best if math.isfinite(self._all["logit"][best]) else None
        arr = self._apply(self.chain.sampler, self._all)
        if arr.selected < 0 or not math.isfinite(self._all["logit"][arr.selected]):
            return None
        return int(self._all["id"][arr.selected])

    def accept(self, token: int) -> None:
        """Advance the grammar (and the chain's state) past ``token``."""
        if self.grammar:
            llama_cpp.llama_sampler_accept(self.grammar, token)
        if self.chain is not None:
            self.chain.accept(token)


def chat_prompt(engine: Engine, messages: list[dict[str, str]]) -> tuple[list[int], list[str]]:
    """Prompt tokens and stop strings for ``messages``, as ``create_chat_completion`` makes them.

    The GGUF's own chat template (Jinja), else llama-cpp-python's fallback (``llama-2``).
    """
    llama = engine.llama
    if "formatter" not in engine.cache:
        template = llama.metadata.get("tokenizer.chat_template")
        if template:
            eos, bos = llama.token_eos(), llama.token_bos()
            engine.cache["formatter"] = llama_chat_format.Jinja2ChatFormatter(
                template=template,
                eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
                stop_token_ids=[eos],
            )
        else:
            engine.cache["formatter"] = llama_chat_format.format_llama2
    result = engine.cache["formatter"](messages=messages)
    tokens = llama.tokenize(
        result.prompt.encode("utf-8"), add_bos=not result.added_special, special=True
    )
    stops = result.stop if isinstance(result.stop, list) else [result.stop] if result.stop else []
    return list(tokens), [s for s in stops if s]


def complete(
    engine: Engine,
    messages: list[dict[str, str]],
    *,
    max_tokens: int,
    temperature: float,
    seed: int,
    stop: list[str],
    gbnf: str | None,
) -> Completion:
    """The reply to ``messages`` (which must fit the context together with ``max_tokens``)."""
    llama = engine.llama
    prompt, template_stops = chat_prompt(engine, messages)
    stops = [*stop, *template_stops]
    start = time.perf_counter()
    # Every prompt is evaluated afresh: llama-cpp-python's KV prefix reuse decodes the suffix in a
    # different batch split, which changes near-tied greedy picks (replies would depend on the
    # previous call).
    llama.reset()
    llama.eval(prompt)
    prompt_s = time.perf_counter() - start
    picker = Picker(llama, gbnf, temperature, seed)
    try:
        out, generated, dropped, finish = _decode(
            llama, picker, len(prompt), max_tokens, stops, gbnf is not None
        )
    finally:
        picker.close()
    text = bytes(llama.detokenize(out, prev_tokens=prompt)).decode("utf-8", errors="ignore")
    cut = _first_stop(text, stops)
    return Completion(
        text=text if cut is None else text[:cut],
        prompt_tokens=len(prompt),
        completion_tokens=generated,
        finish_reason=finish,
        repetition_cut=dropped,
        prompt_s=prompt_s,
        generation_s=time.perf_counter() - start - prompt_s,
    )


def _first_stop(text: str, stops: list[str]) -> int | None:
    hits = [i for i in (text.find(s) for s in stops) if i >= 0]
    return min(hits) if hits else None


def _decode(
    llama: Any, picker: Picker, n_prompt: int, max_tokens: int, stops: list[str], structured: bool
) -> tuple[list[int], int, int, str]:
    """Token loop: ``(kept tokens, tokens generated, tokens dropped, finish reason)``."""
    vocab = llama._model.vocab
    quote = llama.tokenize(b'"', add_bos=False, special=False)
    quote_token = quote[0] if len(quote) == 1 else None
    out: list[int] = []
    generated = dropped = guard_from = 0
    while generated < max_tokens:
        logits = np.ctypeslib.as_array(llama._ctx.get_logits_ith(-1), shape=(picker.n_vocab,))
        token = picker.pick(logits)
        if token is None or llama_cpp.llama_vocab_is_eog(vocab, token):
            return out, generated, dropped, "stop"
        picker.accept(token)
        out.append(token)
        generated += 1
        loop, period = repeated_tail(out, guard_from)
        if loop and _may_cut(llama, out[-loop:], structured, quote_token, picker):
            keep = len(out) - loop
            keep += sentence_end(lambda t: _text(llama, t), out[:keep], out[keep : keep + period])
            dropped += len(out) - keep
            del out[keep:]
            llama.n_tokens = n_prompt + len(out)  # the next eval() drops the later KV cells
            if not structured:
                return out, generated, dropped, "stop"
            token = int(quote_token)  # type: ignore[arg-type]  # _may_cut checked it
            picker.accept(token)
            out.append(token)
            guard_from = len(out)
        if stops and _first_stop(_text(llama, out), stops) is not None:
            return out, generated, dropped, "stop"
        llama.eval([token])
    return out, generated, dropped, "length"


def _text(llama: Any, tokens: list[int]) -> str:
    return bytes(llama.detokenize(tokens)).decode("utf-8", errors="ignore")


def _may_cut(
    llama: Any, block: list[int], structured: bool, quote: int | None, picker: Picker
) -> bool:
    """Plain text can always be cut; JSON only inside a string the grammar lets us close here."""
    if not structured:
        return True
    text = _text(llama, block)
    return quote is not None and '"' not in text and "\\" not in text and picker.allows(quote)


def n_ctx_train(llama: Any) -> int:
    """The context length the model was trained with (``Llama._model``: no public accessor)."""
    return int(llama._model.n_ctx_train())


def install() -> bool:
    """Whether ``llama_cpp.Llama`` still has the private members the decode loop reads."""
    try:
        from llama_cpp import Llama
    except ImportError:
        return False
    return callable(getattr(Llama, "_init_sampler", None))
