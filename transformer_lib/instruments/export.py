"""The trained translator for the browser: ONNX graphs of the encoder and
of one greedy decoding step, which also returns that step's
cross-attention weights, and the vocabularies and decoding settings as
JSON.  Both graphs take :func:`~transformer_lib.model.intervene`'s
switches as inputs: a gate per head of each kind, the hidden source
positions and the encoder's window (all on, none hidden and a window as
long as the source: the model itself).  The book's page runs them with
ONNX Runtime Web (``translator.js``), with no server and no kernel.

The weights are stored as float16 (half the bytes) or the matrices as
int8 with a scale per row (a quarter), and turned back into float32
inside the graph, so that every product is still float32.  The exported
model is therefore exactly the PyTorch model with its parameters rounded
that way: :func:`export_translator` returns that model too, so that its
translations and its BLEU can be compared with the page's and with the
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
from ..model.intervene import intervene
from ..model.record import record_attention

ENCODER_FILE = "encoder.onnx"
DECODER_FILE = "decoder_step.onnx"
CONFIG_FILE = "translator.json"
TOKENIZER_FILE = "tokenizer.json"  # a subword vocabulary's, for the page
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
class ExportedTranslator:
    """What :func:`export_translator` wrote, and the PyTorch model that
    computes what the files compute."""

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
                      ) -> ExportedTranslator:
    """Write ``encoder.onnx``, ``decoder_step.onnx`` and
    ``translator.json`` (vocabularies, special ids, ``max_len``, sizes,
    checksums) into ``directory``, and ``tokenizer.json`` for a subword
    vocabulary.  ``weights``: ``"float16"`` (stored as float16, computed
    in float32), ``"int8"`` (the matrices as int8 with a scale per row,
    :func:`~transformer_lib.translation.checkpoint.quantize_int8`; the
    rest float32) or ``"float32"``."""
    if weights not in WEIGHT_FORMATS:
        raise ValueError(f"weights must be one of {WEIGHT_FORMATS}, "
                         f"got {weights!r}")
    for name, vocab, size in [("src_vocab", src_vocab,
                               model.encoder.vocab_size),
                              ("tgt_vocab", tgt_vocab,
                               model.decoder.vocab_size)]:
        if len(vocab) != size:
            raise ValueError(f"{name} has {len(vocab)} tokens but the "
                             f"model's vocabulary has {size}")
    if weights == "float16":
        exported = rounded_to_float16(model)
    elif weights == "int8":
        matrices = int8_matrices(model)
        exported = rounded_to_int8(model, matrices)
    else:
        exported = copy.deepcopy(model).cpu().float().eval()
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
    import onnx

    for name in (ENCODER_FILE, DECODER_FILE):   # the weights' storage
        proto = onnx.load(str(directory / name))
        share_transposes(proto.graph)
        if weights == "int8":
            store_int8(proto.graph, matrices)
        if weights == "float16":
            store_float16(proto.graph)
        onnx.checker.check_model(proto)
        onnx.save(proto, str(directory / name))
    names = [ENCODER_FILE, DECODER_FILE]
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
        "special_tokens": list(SPECIAL_TOKENS),
        "pad_id": Vocab.pad, "bos_id": Vocab.bos, "eos_id": Vocab.eos,
        "unk_id": Vocab.unk,
        "max_len": getattr(config, "max_len", None),
        "num_blocks": len(exported.decoder.blks),
        "num_enc_blocks": len(exported.encoder.blks),
        "num_heads": exported.decoder.blks[0].attention2.num_heads,
        "weights": weights,
        "files": {name: {"bytes": size,
                         "sha256": _sha256(directory / name)}
                  for name, size in files.items()},
    }
    if subwords:  # the page reads tokenizer.json
        settings["tokenizer"] = "bpe"
    else:
        settings.update(tokenizer="words",
                        src_tokens=src_vocab.idx_to_token,
                        tgt_tokens=tgt_vocab.idx_to_token)
    text = json.dumps(settings, ensure_ascii=False, separators=(",", ":"))
    (directory / CONFIG_FILE).write_text(text, encoding="utf-8")
    files[CONFIG_FILE] = (directory / CONFIG_FILE).stat().st_size
    return ExportedTranslator(directory, exported, files)


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
