"""Checkpoints: the model's config, both vocabularies and the weights in
one file.

Written atomically (a temporary file, then ``os.replace``), so an
interrupted save never leaves a half-written checkpoint; read with
``torch.load(weights_only=True)``, which loads tensors and plain Python
values but never runs code from the file.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import torch

from .data import Vocab
from ..model import (LanguageModel, LanguageModelConfig, Transformer,
                     TransformerConfig)

FORMAT_VERSION = 1
WEIGHT_FORMATS = ("float32", "int8")


def _model_classes():
    from .rnn import GRUConfig, GRUSeq2Seq

    return {"Transformer": (Transformer, TransformerConfig),
            "GRUSeq2Seq": (GRUSeq2Seq, GRUConfig),
            "LanguageModel": (LanguageModel, LanguageModelConfig)}


def _vocab_sizes(config) -> tuple[int, int]:
    """The source and target vocabulary sizes a config was built for; a
    language model's one vocabulary is both."""
    if hasattr(config, "vocab_size"):
        return config.vocab_size, config.vocab_size
    return config.src_vocab_size, config.tgt_vocab_size


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: unreadable, or made for another
    model or vocabulary."""


def quantize_int8(weight: torch.Tensor):
    """``(q, scale)``: ``weight`` ``(rows, cols)`` as int8 ``q`` times a
    float32 scale per row ``(rows,)``, symmetric: a row's largest
    magnitude becomes 127.  ``dequantize_int8(q, scale)`` is the nearest
    such matrix (an error of at most half a step, ``scale / 2``)."""
    weight = weight.detach().float()
    scale = weight.abs().amax(dim=1) / 127
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.round(weight / scale[:, None]).clamp(-127, 127)
    return q.to(torch.int8), scale


def dequantize_int8(q: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """The float32 matrix that ``(q, scale)`` stands for."""
    return q.float() * scale[:, None]


def int8_quantizable(name: str, tensor: torch.Tensor) -> bool:
    """The tensors an int8 checkpoint stores in int8: the matrices (the
    embeddings and the linear layers' weights), not the biases, the
    layer norms' scales and shifts, or buffers."""
    return tensor.dim() == 2 and tensor.is_floating_point()


def int8_matrices(model) -> dict:
    """``{name: (q, scale)}``: each matrix of ``model`` in int8
    (:func:`quantize_int8`), a tied one once, under its first name."""
    return {name: quantize_int8(p.cpu())
            for name, p in model.named_parameters()
            if int8_quantizable(name, p)}


def rounded_to_int8(model, matrices: dict | None = None):
    """A copy of ``model`` on the CPU, in evaluation mode, whose matrices
    are replaced by their int8 version, kept as float32: what an int8
    checkpoint of ``model`` loads as.  ``matrices``: the model's
    :func:`int8_matrices`, when they were computed already."""
    import copy

    if matrices is None:
        matrices = int8_matrices(model)
    rounded = copy.deepcopy(model).cpu().float().eval()
    with torch.no_grad():
        for name, p in rounded.named_parameters():
            if name in matrices:
                p.copy_(dequantize_int8(*matrices[name]))
    return rounded


def save_checkpoint(path, model, src_vocab: Vocab, tgt_vocab: Vocab,
                    extra: dict | None = None, *,
                    weights: str = "float32") -> Path:
    """Save ``model`` (a :class:`Transformer`, :class:`GRUSeq2Seq` or
    :class:`LanguageModel`, whose one vocabulary is passed as both) with
    its vocabularies (word vocabularies, or a
    :class:`~.subwords.SubwordVocab`, kept whole).

    ``extra``: plain values to keep alongside (e.g. the data subset and
    split seed).  ``weights="int8"`` keeps each matrix as int8 with a
    scale per row (:func:`quantize_int8`: a quarter of the bytes);
    :func:`load_checkpoint` gives back :func:`rounded_to_int8`'s model.
    """
    kind = type(model).__name__
    if kind not in _model_classes():
        raise TypeError(f"model must be one of {sorted(_model_classes())}, "
                        f"got {kind}")
    if weights not in WEIGHT_FORMATS:
        raise ValueError(f"weights must be one of {WEIGHT_FORMATS}, "
                         f"got {weights!r}")
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    scales = {}
    if weights == "int8":
        # a tied matrix appears under several names: stored under its first
        params = dict(model.named_parameters())
        every_name = dict(model.named_parameters(remove_duplicate=False))
        for name in set(every_name) - set(params):
            del state[name]
        for name, (q, scale) in int8_matrices(model).items():
            state[name], scales[name] = q, scale
    payload = {
        "format": FORMAT_VERSION,
        "model": kind,
        "config": model.config.to_dict(),
        "src_vocab": _vocab_entry(src_vocab),
        "tgt_vocab": _vocab_entry(tgt_vocab),
        "state_dict": state,
        "extra": dict(extra or {}),
    }
    if scales:
        payload["int8_scales"] = scales
    return save_atomically(payload, path)


def save_atomically(payload, path) -> Path:
    """``torch.save(payload)`` into a temporary file, then ``os.replace``
    it onto ``path``: an interrupted save (even Ctrl-C) leaves the old
    file as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(payload, f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _read(path) -> dict:
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:
        # truncated file, not a torch file, or unsafe content
        raise CheckpointError(f"checkpoint {path} cannot be read: "
                              f"{err}") from err
    if (not isinstance(payload, dict)
            or payload.get("format") != FORMAT_VERSION):
        raise CheckpointError(f"{path} is not a transformer_lib checkpoint "
                              f"(format {FORMAT_VERSION})")
    if payload.get("model") not in _model_classes():
        raise CheckpointError(f"{path} holds an unknown model kind "
                              f"{payload.get('model')!r}")
    return payload


def load_checkpoint(path, device=None):
    """Rebuild the saved model.  Returns
    ``(model, src_vocab, tgt_vocab, extra)``; the model is in evaluation
    mode on ``device`` (default CPU)."""
    payload = _read(path)
    model_cls, config_cls = _model_classes()[payload["model"]]
    try:
        config = config_cls(**payload["config"])
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"checkpoint {path} has an invalid config: "
                              f"{err}") from err
    src_vocab = _vocab_from(payload["src_vocab"])
    tgt_vocab = _vocab_from(payload["tgt_vocab"])
    sizes = _vocab_sizes(config)
    if (len(src_vocab), len(tgt_vocab)) != sizes:
        raise CheckpointError(
            f"checkpoint {path}: vocabulary sizes "
            f"{len(src_vocab)}/{len(tgt_vocab)} do not match "
            f"the config's {sizes[0]}/{sizes[1]}")
    model = model_cls(config)
    _load_state(model, payload, path)
    return (model.to(device or "cpu").eval(), src_vocab, tgt_vocab,
            payload["extra"])


def load_weights(model, path, src_vocab: Vocab, tgt_vocab: Vocab) -> dict:
    """Load saved weights into an existing ``model`` built for
    ``src_vocab``/``tgt_vocab``.

    A checkpoint made with another config or other vocabularies is a
    :class:`CheckpointError` that says what differs.  Returns the
    checkpoint's ``extra``.
    """
    payload = _read(path)
    if payload["model"] != type(model).__name__:
        raise CheckpointError(f"checkpoint {path} holds a "
                              f"{payload['model']}, not a "
                              f"{type(model).__name__}")
    ours = model.config.to_dict()
    try:  # a field the checkpoint predates takes its default
        saved = type(model.config)(**payload["config"]).to_dict()
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"checkpoint {path} has an invalid config: "
                              f"{err}") from err
    differ = {k: (saved.get(k), v) for k, v in ours.items()
              if saved.get(k) != v}
    if differ:
        detail = ", ".join(f"{k}: saved {a!r} vs model {b!r}"
                           for k, (a, b) in differ.items())
        raise CheckpointError(f"checkpoint {path} was made for another "
                              f"config ({detail})")
    for side, saved, vocab in (("source", payload["src_vocab"], src_vocab),
                               ("target", payload["tgt_vocab"], tgt_vocab)):
        tokens = _vocab_from(saved).idx_to_token
        if list(tokens) != list(vocab.idx_to_token):
            raise CheckpointError(
                f"checkpoint {path} was made with another {side} vocabulary "
                f"({len(tokens)} tokens saved, {len(vocab)} given)"
            )
    _load_state(model, payload, path)
    return payload["extra"]


def _vocab_entry(vocab):
    """What a checkpoint keeps of a vocabulary: a word vocabulary's token
    list, or a subword vocabulary's whole tokenizer (its JSON)."""
    from .subwords import SubwordVocab

    if isinstance(vocab, SubwordVocab):
        return {"subwords": vocab.to_json()}
    return list(vocab.idx_to_token)


def _vocab_from(entry):
    from .subwords import SubwordVocab

    if isinstance(entry, dict):
        return SubwordVocab.from_json(entry["subwords"])
    return Vocab.from_tokens(entry)


def _load_state(model, payload, path) -> None:
    state = dict(payload["state_dict"])
    for name, scale in payload.get("int8_scales", {}).items():
        state[name] = dequantize_int8(state[name], scale)
    # a tied matrix stored once: its other names take the same tensor
    params = dict(model.named_parameters(remove_duplicate=False))
    for name, tensor in params.items():
        if name not in state:
            first = next((n for n, t in params.items()
                          if t is tensor and n in state), None)
            if first is not None:
                state[name] = state[first]
    try:
        model.load_state_dict(state)
    except RuntimeError as err:
        raise CheckpointError(f"checkpoint {path} does not fit the model: "
                              f"{err}") from err
