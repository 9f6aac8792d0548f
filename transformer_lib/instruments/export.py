"""The trained models for the browser.  The translator: ONNX graphs of
the encoder and of one greedy decoding step, which also returns that step's
cross-attention weights, and the vocabularies and decoding settings as
JSON.  Both graphs take :func:`~transformer_lib.model.intervene`'s
switches as inputs: a gate per head of each kind, the hidden source
positions and the encoder's window (all on, none hidden and a window as
long as the source: the model itself).  The book's page runs them with
ONNX Runtime Web (``translator.js``), with no server and no kernel.
The language model: one graph, the logits of the next token after a
sequence, which ``language_model.js`` samples from.

The weights are stored as float16 (half the bytes) or the matrices as
int8 with a scale per row (a quarter), and turned back into float32
inside the graph, so that every product is still float32.  The exported
model is therefore exactly the PyTorch model with its parameters rounded
that way: each export returns that model too, so that its translations,
its samples and its BLEU can be compared with the page's and with the
original's.  (With int8 weights, ONNX Runtime must run the graphs with
its session option ``session.disable_quant_qdq`` set: otherwise its
extended optimisations fuse each ``DequantizeLinear`` with its product
into an integer product that quantises the activations too, which
changes the numbers; with it, the weights are dequantized once, when the
graph loads.)
"""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import nn

from ..translation.checkpoint import (dequantize_int8, int8_matrices,
                                      rounded_to_int8)
from ..translation.data import SPECIAL_TOKENS, Vocab
from ..model import RotaryEmbedding
from ..model.intervene import intervene
from ..model.record import record_attention

ENCODER_FILE = "encoder.onnx"
DECODER_FILE = "decoder_step.onnx"
CONFIG_FILE = "translator.json"
TOKENIZER_FILE = "tokenizer.json"  # a subword vocabulary's, for the page
LM_FILE = "next_token.onnx"        # the language model's
LM_CONFIG_FILE = "language_model.json"
# the ids every vocabulary gives its special tokens, as the pages read them
SPECIAL_IDS = {"pad_id": Vocab.pad, "bos_id": Vocab.bos,
               "eos_id": Vocab.eos, "unk_id": Vocab.unk}
WEIGHT_FORMATS = ("int8", "float16", "float32")
OPSET = 17


class EncoderGraph(nn.Module):
    """src ``(1, S)`` ids with ``<eos>`` last, src_valid_len ``(1,)``,
    encoder_gate ``(blocks, heads)``, hidden ``(1, S)`` bool, window
    ``()`` -> memory ``(1, S, d)``."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, src, src_valid_len, encoder_gate, hidden, window):
        with intervene(self.model, gates={"encoder_self": encoder_gate},
                       hidden=hidden, window=window):
            return self.model.encoder.encode(src, src_valid_len)


class DecoderStepGraph(nn.Module):
    """One step of greedy decoding: the decoder on the whole prefix (no
    cache: the prefix is short, and a graph without state is simpler to
    run and to check) -> the next token's logits ``(1, V)`` and the
    cross-attention weights of that step, ``(1, blocks, heads, S)``."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, tgt, memory, src_valid_len, decoder_gate, cross_gate,
                hidden):
        decoder = self.model.decoder
        gates = {"decoder_self": decoder_gate, "cross": cross_gate}
        with intervene(self.model, gates=gates, hidden=hidden), \
                record_attention(decoder) as maps:
            logits = decoder.decode(tgt, memory, src_valid_len)
        cross = [maps.of(blk.attention2)[0][:, :, -1]      # (1, h, S) each
                 for blk in decoder.blks]
        return logits[:, -1], torch.stack(cross, dim=1)


@dataclass
class ExportedModel:
    """What an export wrote, and the PyTorch model that computes what the
    files compute."""

    directory: Path
    model: nn.Module                 # the parameters the files hold
    files: dict = field(default_factory=dict)   # name -> size in bytes

    @property
    def total_bytes(self) -> int:
        return sum(self.files.values())

    @property
    def gzip_bytes(self) -> int:
        """What a static host that compresses sends: the files
        gzip-compressed (level 6)."""
        import gzip

        return sum(len(gzip.compress(path.read_bytes(), 6))
                   for path in map(self.directory.joinpath, self.files))


def rounded_to_float16(model: nn.Module) -> nn.Module:
    """A copy of ``model`` on the CPU, in evaluation mode, with every
    parameter rounded to the nearest float16 (and kept as float32)."""
    rounded = copy.deepcopy(model).cpu().float().eval()
    with torch.no_grad():
        for p in rounded.parameters():
            p.copy_(p.half().float())
    return rounded


def export_translator(model, src_vocab: Vocab, tgt_vocab: Vocab,
                      directory, *, weights: str = "float16"
                      ) -> ExportedModel:
    """Write ``encoder.onnx``, ``decoder_step.onnx`` and
    ``translator.json`` (vocabularies, special ids, ``max_len``, sizes,
    checksums) into ``directory``, and ``tokenizer.json`` for a subword
    vocabulary.  ``weights``: ``"float16"`` (stored as float16, computed
    in float32), ``"int8"`` (the matrices as int8 with a scale per row,
    :func:`~transformer_lib.translation.checkpoint.quantize_int8`; the
    rest float32) or ``"float32"``."""
    _check_weights(weights)
    for name, vocab, size in [("src_vocab", src_vocab,
                               model.encoder.vocab_size),
                              ("tgt_vocab", tgt_vocab,
                               model.decoder.vocab_size)]:
        if len(vocab) != size:
            raise ValueError(f"{name} has {len(vocab)} tokens but the "
                             f"model's vocabulary has {size}")
    exported, matrices = _rounded(model, weights)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    src = torch.tensor([[4, 5, Vocab.eos]])
    lens = torch.tensor([3])
    tgt = torch.tensor([[Vocab.bos, 4]])
    switches = all_on(exported, S=src.shape[1])
    with torch.no_grad():
        memory = exported.encoder.encode(src, lens)
        _export(EncoderGraph(exported),
                (src, lens, switches["encoder_gate"], switches["hidden"],
                 switches["window"]),
                directory / ENCODER_FILE,
                ["src", "src_valid_len", "encoder_gate", "hidden", "window"],
                ["memory"],
                {"src": {1: "S"}, "hidden": {1: "S"}, "memory": {1: "S"}})
        _export(DecoderStepGraph(exported),
                (tgt, memory, lens, switches["decoder_gate"],
                 switches["cross_gate"], switches["hidden"]),
                directory / DECODER_FILE,
                ["tgt", "memory", "src_valid_len", "decoder_gate",
                 "cross_gate", "hidden"], ["logits", "cross"],
                {"tgt": {1: "T"}, "memory": {1: "S"}, "hidden": {1: "S"},
                 "cross": {3: "S"}})
    names = [ENCODER_FILE, DECODER_FILE]
    for name in names:
        _store_weights(directory / name, weights, matrices)
    subwords = hasattr(tgt_vocab, "to_json")  # a SubwordVocab
    if subwords:
        if src_vocab.to_json() != tgt_vocab.to_json():
            raise ValueError("a subword translator needs one vocabulary "
                             "for both sides; src_vocab and tgt_vocab "
                             "differ")
        (directory / TOKENIZER_FILE).write_text(tgt_vocab.to_json(),
                                                encoding="utf-8")
        names.append(TOKENIZER_FILE)
    else:
        (directory / TOKENIZER_FILE).unlink(missing_ok=True)
    files = {name: (directory / name).stat().st_size for name in names}
    config = getattr(exported, "config", None)
    settings = {
        "format": 1,
        "special_tokens": list(SPECIAL_TOKENS), **SPECIAL_IDS,
        "max_len": getattr(config, "max_len", None),
        "num_blocks": len(exported.decoder.blks),
        "num_enc_blocks": len(exported.encoder.blks),
        "num_heads": exported.decoder.blks[0].attention2.num_heads,
        "weights": weights,
        "files": _checksums(directory, files),
    }
    if subwords:  # the page reads tokenizer.json
        settings["tokenizer"] = "bpe"
    else:
        settings.update(tokenizer="words",
                        src_tokens=src_vocab.idx_to_token,
                        tgt_tokens=tgt_vocab.idx_to_token)
    files[CONFIG_FILE] = _write_json(directory / CONFIG_FILE, settings)
    return ExportedModel(directory, exported, files)


class RealRotaryEmbedding(RotaryEmbedding):
    """:class:`~transformer_lib.model.RotaryEmbedding` in real arithmetic,
    for ONNX, which has no complex numbers: the pair ``(x, y)`` turned by
    the angle a is ``(x cos a - y sin a, x sin a + y cos a)``, the real
    and imaginary parts of ``(x + i y) e^(i a)``."""

    @classmethod
    def like(cls, rotary: RotaryEmbedding) -> RealRotaryEmbedding:
        return cls(rotary.head_dim, rotary.max_len).to(rotary.cos.device)

    def forward(self, X, offset: int = 0):
        """X ``(B, h, T, d_k)`` at positions ``offset ..`` -> the same."""
        at = slice(offset, offset + X.shape[2])
        cos, sin = self.cos[at], self.sin[at]            # (T, d_k/2)
        pairs = X.unflatten(-1, (-1, 2))                # (B, h, T, d_k/2, 2)
        x, y = pairs[..., 0], pairs[..., 1]
        turned = torch.stack([x * cos - y * sin, x * sin + y * cos], -1)
        return turned.flatten(-2)                        # (B, h, T, d_k)


def with_real_rotations(model: nn.Module) -> nn.Module:
    """``model`` (changed in place) with every rotary embedding computed
    in real arithmetic (:class:`RealRotaryEmbedding`)."""
    for module in list(model.modules()):
        for name, child in module.named_children():
            if type(child) is RotaryEmbedding:
                setattr(module, name, RealRotaryEmbedding.like(child))
    return model


class NextTokenGraph(nn.Module):
    """ids ``(1, T)`` -> the logits of the token after them ``(1, V)``:
    the whole sequence read at every step (no cache, as the translator's
    decoder step: a graph without state is simpler to run and check)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(ids)[:, -1]


def export_language_model(model, vocab: Vocab, directory, *,
                          weights: str = "float16") -> ExportedModel:
    """Write a :class:`~transformer_lib.model.LanguageModel` for the page:
    ``next_token.onnx`` (:class:`NextTokenGraph`) and
    ``language_model.json`` (its characters or tokens, the special ids,
    ``max_len``, checksums) into ``directory``.  ``weights`` as for
    :func:`export_translator`.  The model returned computes what the
    file computes, up to float32's rounding (its rotations in complex
    numbers, the file's in real ones)."""
    _check_weights(weights)
    if len(vocab) != model.vocab_size:
        raise ValueError(f"vocab has {len(vocab)} tokens but the model's "
                         f"vocabulary has {model.vocab_size}")
    exported, matrices = _rounded(model, weights)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    graph = NextTokenGraph(with_real_rotations(copy.deepcopy(exported)))
    with torch.no_grad():
        _export(graph, (torch.tensor([[Vocab.eos, 4, 5]]),),
                directory / LM_FILE, ["ids"], ["logits"], {"ids": {1: "T"}})
    _store_weights(directory / LM_FILE, weights, matrices)
    files = {LM_FILE: (directory / LM_FILE).stat().st_size}
    settings = {
        "format": 1, "tokens": vocab.idx_to_token, **SPECIAL_IDS,
        "max_len": exported.config.max_len,
        "weights": weights, "files": _checksums(directory, files),
    }
    files[LM_CONFIG_FILE] = _write_json(directory / LM_CONFIG_FILE,
                                        settings)
    return ExportedModel(directory, exported, files)


def _check_weights(weights) -> None:
    if weights not in WEIGHT_FORMATS:
        raise ValueError(f"weights must be one of {WEIGHT_FORMATS}, "
                         f"got {weights!r}")


def _rounded(model, weights: str):
    """A CPU float32 copy of ``model`` with its parameters rounded as
    ``weights`` stores them, and the int8 matrices (``None`` unless
    int8)."""
    if weights == "float16":
        return rounded_to_float16(model), None
    if weights == "int8":
        matrices = int8_matrices(model)
        return rounded_to_int8(model, matrices), matrices
    return copy.deepcopy(model).cpu().float().eval(), None


def _store_weights(path, weights: str, matrices) -> None:
    """Rewrite the exported graph at ``path`` so that it stores its weights
    as ``weights`` says (a tied matrix once)."""
    import onnx

    proto = onnx.load(str(path))
    share_transposes(proto.graph)
    if weights == "int8":
        store_int8(proto.graph, matrices)
    if weights == "float16":
        store_float16(proto.graph)
    onnx.checker.check_model(proto)
    onnx.save(proto, str(path))


def _checksums(directory, files: dict) -> dict:
    return {name: {"bytes": size, "sha256": _sha256(directory / name)}
            for name, size in files.items()}


def _write_json(path, settings: dict) -> int:
    text = json.dumps(settings, ensure_ascii=False, separators=(",", ":"))
    path.write_text(text, encoding="utf-8")
    return path.stat().st_size


def _rewrite(graph, initializers: list, first_nodes: list) -> None:
    """Give the ONNX ``graph`` these ``initializers``, and ``first_nodes``
    (those that compute weights from them) before its own nodes."""
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    nodes = first_nodes + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)


def share_transposes(graph) -> None:
    """Rewrite the ONNX ``graph`` so that a weight it holds both as it is
    and transposed (a tied output layer: the embedding's ``(V, d)`` and
    the output layer's ``(d, V)``) is stored once, the other computed from
    it by a ``Transpose`` node."""
    from onnx import TensorProto, helper, numpy_helper

    kept, transposes, seen = [], [], {}  # seen: bytes -> initializer name
    for init in graph.initializer:
        if init.data_type == TensorProto.FLOAT and len(init.dims) == 2:
            array = numpy_helper.to_array(init)
            source = seen.get(array.T.copy().tobytes())
            if source is not None:
                transposes.append(helper.make_node(
                    "Transpose", [source], [init.name], perm=[1, 0],
                    name=f"{init.name}__transpose"))
                continue
            seen[array.tobytes()] = init.name
        kept.append(init)
    _rewrite(graph, kept, transposes)


def store_int8(graph, matrices: dict) -> None:
    """Rewrite the ONNX ``graph`` so that each float32 weight that
    is one of ``matrices`` (:func:`int8_matrices`' ``{name: (q, scale)}``)
    rounded, as it is or transposed (an exported graph may hold a weight
    transposed), is stored as int8 with a scale per row and turned back
    into exactly the same float32 numbers by a ``DequantizeLinear`` node
    (``q * scale``), followed by a ``Transpose`` node where the graph
    holds it transposed."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    known = {}    # float32 bytes -> (q, scale, transposed)
    for q, scale in matrices.values():
        matrix = dequantize_int8(q, scale).numpy()
        q, scale = q.numpy(), scale.numpy().astype(np.float32)
        known[matrix.tobytes()] = (q, scale, False)
        known[matrix.T.copy().tobytes()] = (q, scale, True)
    kept, nodes = [], []
    for init in graph.initializer:
        match = None
        if init.data_type == TensorProto.FLOAT and len(init.dims) == 2:
            match = known.get(numpy_helper.to_array(init).tobytes())
        if match is None:
            kept.append(init)
            continue
        q, scale, transposed = match
        parts = [f"{init.name}__{part}" for part in ("q", "scale", "zero")]
        kept += [numpy_helper.from_array(q, parts[0]),
                 numpy_helper.from_array(scale, parts[1]),
                 numpy_helper.from_array(np.zeros(len(scale), np.int8),
                                         parts[2])]
        plain = f"{init.name}__plain" if transposed else init.name
        nodes.append(helper.make_node(
            "DequantizeLinear", parts, [plain], axis=0,
            name=f"{init.name}__dequantize"))
        if transposed:
            nodes.append(helper.make_node(
                "Transpose", [plain], [init.name], perm=[1, 0],
                name=f"{init.name}__transpose"))
    _rewrite(graph, kept, nodes)


def all_on(model, S: int) -> dict:
    """The graphs' switch inputs that leave ``model`` as it is, for a
    source of ``S`` positions: every gate 1, nothing hidden, a window of
    ``S``."""
    layers = model.attention_layers()
    gate = {kind: torch.ones(len(blocks), blocks[0].num_heads)
            for kind, blocks in layers.items()}
    return {"encoder_gate": gate["encoder_self"],
            "decoder_gate": gate["decoder_self"],
            "cross_gate": gate["cross"],
            "hidden": torch.zeros(1, S, dtype=torch.bool),
            "window": torch.tensor(S)}


def _export(module, args, path, input_names, output_names, dynamic_axes):
    import warnings

    with warnings.catch_warnings():
        # the tracer warns about Python ints taken from shapes; the
        # tests run the graphs at other lengths than the traced ones
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), args, str(path), dynamo=False,
                          input_names=input_names,
                          output_names=output_names,
                          dynamic_axes=dynamic_axes, opset_version=OPSET)


def store_float16(graph) -> None:
    """Rewrite the ONNX ``graph`` so that each float32 weight that float16
    holds exactly is stored as float16 and cast back to float32 by the
    graph (a ``Cast`` node per weight): the same numbers in half the
    bytes."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    kept, casts = [], []
    for init in graph.initializer:
        array = numpy_helper.to_array(init)
        if init.data_type == TensorProto.FLOAT and array.size >= 64:
            half = array.astype(np.float16)
            if np.array_equal(half.astype(np.float32), array):
                stored = numpy_helper.from_array(half, f"{init.name}__fp16")
                kept.append(stored)
                casts.append(helper.make_node(
                    "Cast", [stored.name], [init.name],
                    to=TensorProto.FLOAT, name=f"{init.name}__cast"))
                continue
        kept.append(init)
    _rewrite(graph, kept, casts)


def _sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
