"""Argument checks that fail early with a message naming the argument.

A shape error from deep inside ``torch.matmul`` tells a reader nothing
about which of *their* arguments was wrong; these helpers do.

Two kinds of check:

- **shape and dtype** (:func:`check_tensor`): Python comparisons of
  metadata, cheap enough for every layer;
- **values** (:func:`check_token_ids`, :func:`check_valid_lens`,
  :func:`check_key_lens`): a reduction over the tensor whose result
  Python must read, which on a GPU is a host-device synchronisation.
  They run once, at the public entry points (``EncoderDecoder.forward``,
  the stacks' ``forward``, the decoding functions, ``fit``, and the
  attention functions and layers when a reader calls them directly),
  never inside a model: its inner passes (``encode``, ``decode``) run
  under :func:`skip_value_checks`.  (One host read remains in the GRU
  baseline's encoder: packing needs the lengths on the CPU.)
"""

from __future__ import annotations

import contextvars
import functools

import torch

_KINDS = {
    "float": lambda t: t.is_floating_point(),
    "int": lambda t: not (t.is_floating_point() or t.is_complex()
                          or t.dtype == torch.bool),
    "bool": lambda t: t.dtype == torch.bool,
}


def check_tensor(name: str, x, *, ndim=None, kind: str | None = None,
                 last_dim: int | None = None) -> None:
    """Raise a ``TypeError``/``ValueError`` unless ``x`` is a tensor of the
    expected form: ``ndim`` an int or a tuple of allowed ranks, ``kind``
    ``"float"``, ``"int"`` or ``"bool"``, ``last_dim`` the size of the last
    axis."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, "
                        f"got {type(x).__name__}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if x.dim() not in allowed:
            want = " or ".join(str(n) for n in allowed)
            raise ValueError(f"{name} must have {want} dimensions, "
                             f"got shape {tuple(x.shape)}")
    if kind is not None and not _KINDS[kind](x):
        raise TypeError(f"{name} must have a {kind} dtype, got {x.dtype}")
    if last_dim is not None and (x.dim() == 0 or x.shape[-1] != last_dim):
        raise ValueError(f"{name} must have last dimension {last_dim}, "
                         f"got shape {tuple(x.shape)}")


def check_rows_match(queries, keys, values,
                     names=("queries", "keys", "values")) -> None:
    """``(B, Q, .)`` queries, ``(B, K, .)`` keys and values: one batch
    size, as many values as keys."""
    q, k, v = names
    if not queries.shape[0] == keys.shape[0] == values.shape[0]:
        raise ValueError(f"{q}, {k} and {v} must share the batch size, got "
                         f"shapes {tuple(queries.shape)}, "
                         f"{tuple(keys.shape)}, {tuple(values.shape)}")
    if keys.shape[1] != values.shape[1]:
        raise ValueError(f"{k} and {v} must have the same number of "
                         f"positions, got {tuple(keys.shape)} and "
                         f"{tuple(values.shape)}")


def check_positive_int(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        kind = type(value)
        hint = ("" if kind in (bool, int, float, str, type(None))
                else f" ({kind.__module__}.{kind.__name__}: pass int(...))")
        raise ValueError(f"{name} must be a positive int, got "
                         f"{value!r}{hint}")


def check_count(name: str, value) -> None:
    """An int >= 0 (a number of epochs, steps or pairs; a seed)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")


def size_or(name: str, size, default: int) -> int:
    """An optional width such as ``query_size``: ``default`` if ``None``,
    else a positive int."""
    if size is None:
        return default
    check_positive_int(name, size)
    return size


def check_probability(name: str, value) -> None:
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not 0.0 <= value < 1.0):
        raise ValueError(f"{name} must be a float in [0, 1), got {value!r}")


def check_heads_divide(num_hiddens: int, num_heads: int) -> None:
    """Every head gets ``num_hiddens / num_heads`` features: a whole
    number of them."""
    check_positive_int("num_hiddens", num_hiddens)
    check_positive_int("num_heads", num_heads)
    if num_hiddens % num_heads:
        raise ValueError(
            f"num_heads ({num_heads}) must divide num_hiddens "
            f"({num_hiddens}) so that every head gets num_hiddens / "
            f"num_heads features")


def out_of_range(x: torch.Tensor, low: int, high: int) -> bool:
    """Whether some value of ``x`` lies outside ``[low, high)``: the one
    check that reads a tensor on the host (a synchronisation on a GPU)."""
    return bool(x.numel()) and bool(((x < low) | (x >= high)).any())


def check_token_ids(name: str, tokens, vocab_size: int) -> None:
    """Token ids: a 2-D integer tensor (batch, steps) of ids in
    ``[0, vocab_size)``."""
    check_tensor(name, tokens, ndim=2, kind="int")
    if out_of_range(tokens, 0, vocab_size):
        raise ValueError(
            f"{name} holds ids outside [0, {vocab_size}): "
            f"min {int(tokens.min())}, max {int(tokens.max())}")


def check_valid_lens(name: str, valid_lens, X: torch.Tensor) -> None:
    """``None``, or one length per row of ``X`` (B, T, ...): integers in
    ``[0, T]``."""
    if valid_lens is None:
        return
    check_tensor(name, valid_lens, ndim=1, kind="int")
    if valid_lens.shape[0] != X.shape[0]:
        raise ValueError(f"{name} must have one length per batch row, "
                         f"shape ({X.shape[0]},), got "
                         f"{tuple(valid_lens.shape)}")
    check_lengths_up_to(name, valid_lens, X.shape[1], "the sequence length")


def check_lengths_up_to(name: str, lengths, longest: int, what: str):
    """Integer lengths in ``[0, longest]``; ``what`` names ``longest``."""
    if out_of_range(lengths, 0, longest + 1):
        raise ValueError(
            f"{name} must lie in [0, {longest}] ({what}), got values from "
            f"{int(lengths.min())} to {int(lengths.max())}")


# True while a model's inner pass runs: its entry point checked the values
_SKIPPING = contextvars.ContextVar("skip_value_checks", default=False)


def skip_value_checks(function):
    """Decorate a model's unchecked inner pass (``encode``, ``decode``):
    its caller checked the values once, so the layers inside skip
    :func:`check_key_lens` and read nothing on the host (on a GPU, one
    read per layer and step would be a synchronisation each)."""
    @functools.wraps(function)
    def unchecked(*args, **kwargs):
        token = _SKIPPING.set(True)
        try:
            return function(*args, **kwargs)
        finally:
            _SKIPPING.reset(token)
    return unchecked


def check_key_lens(valid_lens: torch.Tensor, num_keys: int) -> None:
    """The attention functions' ``valid_lens``, ``(B,)`` or ``(B, Q)``:
    integers in ``[0, num_keys]`` (0: a query with no key, whose weights
    are all zero).  Not checked inside :func:`skip_value_checks`."""
    if not _SKIPPING.get():
        check_lengths_up_to("valid_lens", valid_lens, num_keys,
                            "the number of keys")


def check_pre_norm(norm: str) -> None:
    """The pre-norm blocks (``norm_first=True``) have LayerNorm only."""
    if norm != "layer":
        raise ValueError(f"norm_first=True (pre-norm) uses LayerNorm: "
                         f"norm must be 'layer', got {norm!r}")


def check_flag(name: str, value) -> None:
    """A configuration's switch: ``True`` or ``False``, nothing else."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")


def check_model_sizes(num_hiddens: int, num_heads: int,
                      dropout: float) -> None:
    """What every Transformer configuration asks of its width, heads and
    dropout: ``num_heads`` divides ``num_hiddens``, which is even for the
    sinusoidal positional encoding; dropout is a probability."""
    check_heads_divide(num_hiddens, num_heads)
    if num_hiddens % 2:
        raise ValueError(f"num_hiddens must be even for the positional "
                         f"encoding, got {num_hiddens}")
    check_probability("dropout", dropout)


def check_one_stack_config(config) -> None:
    """The fields a one-stack model's configuration shares (the
    decoder-only model's, the language model's): positive sizes, heads
    that divide the width, dropout, and True/False switches."""
    for name in ("vocab_size", "ffn_num_hiddens", "num_blks", "max_len"):
        check_positive_int(name, getattr(config, name))
    check_model_sizes(config.num_hiddens, config.num_heads, config.dropout)
    for name in ("use_bias", "norm_first", "tie_embeddings"):
        check_flag(name, getattr(config, name))


def check_tie_embeddings(tie: bool, src_vocab_size: int,
                         tgt_vocab_size: int) -> None:
    """Tied embeddings share one (V, d) matrix: one vocabulary serves both
    sides."""
    check_flag("tie_embeddings", tie)
    if tie and src_vocab_size != tgt_vocab_size:
        raise ValueError(f"tie_embeddings=True needs one vocabulary for "
                         f"both sides, got src_vocab_size="
                         f"{src_vocab_size} and tgt_vocab_size="
                         f"{tgt_vocab_size}")
