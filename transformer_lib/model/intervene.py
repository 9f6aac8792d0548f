"""Switching heads off and hiding source words in a trained model: one
scoped mechanism, like :func:`~transformer_lib.record_attention`.

    off = [("cross", 1, 0)]            # (kind, block, head)
    with tl.intervene(model, heads_off=off, hidden=hidden, window=2):
        model(src, tgt_in, src_valid_lens)

Inside the ``with`` block each attention layer of ``model`` is told what
to change, and no ``forward`` takes a new argument: a head that is off
contributes nothing (its output, and its recorded weights, are 0: the
same as zeroing its slice of the input of W^O); a hidden source position
gets weight exactly 0 in the encoder's self-attention and in the
cross-attention; with a ``window``, encoder position i attends only to
positions j with |i - j| <= window.  When the block ends, the layers are
as they were.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import nn

from .._checks import check_tensor

KINDS = ("encoder_self", "decoder_self", "cross")
SOURCE_KINDS = ("encoder_self", "cross")  # the layers whose keys are source


@dataclass
class LayerIntervention:
    """What one attention layer changes while :func:`intervene` runs.

    gate:   ``(h,)``: 1 for a head that is on, 0 for one that is off.
    hidden: ``(B, S)`` bool, True at hidden source positions (the keys).
    window: the largest |query - key| distance the layer may attend to.
    """

    gate: torch.Tensor | None = None
    hidden: torch.Tensor | None = None
    window: int | None = None

    def restrict(self, attn_mask, queries, keys):
        """``attn_mask`` (True = keep) with the hidden keys and the window
        removed; shapes broadcast to the scores ``(B, h, Q, K)``."""
        B, Q, K = keys.shape[0], queries.shape[-2], keys.shape[-2]
        allowed = None
        if self.hidden is not None:
            allowed = ~self.expand_hidden(B, K).to(keys.device)
            allowed = allowed.view(B, *[1] * (keys.dim() - 2), K)
        if self.window is not None:
            rows = torch.arange(Q, device=keys.device)[:, None] + (K - Q)
            distance = (torch.arange(K, device=keys.device) - rows).abs()
            band = distance <= self.window                     # (Q, K)
            allowed = band if allowed is None else allowed & band
        if allowed is None:
            return attn_mask
        return allowed if attn_mask is None else attn_mask & allowed

    def expand_hidden(self, B, K):
        """``hidden`` for a batch of ``B``: as given, or repeated for the
        beams of each sentence (``beam_search`` repeats the memory with
        ``repeat_interleave``)."""
        hidden = self.hidden
        if hidden.shape[1] != K:
            raise ValueError(f"hidden must have one column per source "
                             f"position ({K}), got {tuple(hidden.shape)}")
        if B % hidden.shape[0]:
            raise ValueError(f"hidden has {hidden.shape[0]} rows, which do "
                             f"not divide the batch of {B}")
        return hidden.repeat_interleave(B // hidden.shape[0], dim=0)

    def apply_gate(self, heads):
        """``heads`` ``(B, h, ...)`` (outputs or weights) times the gate."""
        if self.gate is None:
            return heads
        shape = (len(self.gate),) + (1,) * (heads.dim() - 2)
        return heads * self.gate.to(heads.device, heads.dtype).view(shape)


def _check_heads_off(heads_off, layers):
    checked = []
    for entry in heads_off:
        if not (isinstance(entry, (tuple, list)) and len(entry) == 3):
            raise ValueError(f"heads_off: each entry must be (kind, block, "
                             f"head), got {entry!r}")
        kind, block, head = entry
        if kind not in KINDS:
            raise ValueError(f"heads_off: kind must be one of {KINDS}, got "
                             f"{kind!r}")
        blocks = layers[kind]
        if not (isinstance(block, int) and 0 <= block < len(blocks)):
            raise ValueError(f"heads_off: {kind} has blocks 0 to "
                             f"{len(blocks) - 1}, got block {block!r}")
        h = blocks[block].num_heads
        if not (isinstance(head, int) and 0 <= head < h):
            raise ValueError(f"heads_off: {kind} block {block} has heads 0 "
                             f"to {h - 1}, got head {head!r}")
        checked.append((kind, block, head))
    return checked


def _check_window(window):
    if isinstance(window, torch.Tensor):  # a graph's input
        check_tensor("window", window, ndim=0, kind="int")
    elif window is not None and (isinstance(window, bool)
                                 or not isinstance(window, int)
                                 or window < 0):
        raise ValueError(f"window must be an int >= 0, got {window!r}")


def _check_gates(gates, layers):
    gates = dict(gates or {})
    for kind, gate in gates.items():
        if kind not in KINDS:
            raise ValueError(f"gates: kind must be one of {KINDS}, got "
                             f"{kind!r}")
        blocks = layers[kind]
        want = (len(blocks), blocks[0].num_heads)
        check_tensor(f"gates[{kind!r}]", gate, ndim=2, kind="float")
        if tuple(gate.shape) != want:
            raise ValueError(f"gates[{kind!r}] must have the shape (blocks, "
                             f"heads) = {want}, got {tuple(gate.shape)}")
    return gates


@contextmanager
def intervene(model: nn.Module, *, heads_off=(), gates=None, hidden=None,
              window=None):
    """Switch heads off, hide source positions and limit the encoder's
    self-attention to a window, for the duration of the ``with`` block.

    model:     a :class:`~transformer_lib.Transformer` (anything with
               ``attention_layers()`` by kind, as it has).
    heads_off: ``(kind, block, head)`` triples, kind one of
               ``"encoder_self"``, ``"decoder_self"``, ``"cross"``.
    gates:     ``{kind: (blocks, heads) tensor}``, each head's output
               times its entry (1: on, 0: off): the same switches as
               tensors, for graphs that take them as inputs (ONNX).
    hidden:    ``(B, S)`` bool, True at source positions no query may
               attend to, in the encoder's self-attention and in the
               cross-attention (one row per sentence; beams repeat it).
    window:    encoder query i sees only keys j with |i - j| <= window
               (an int, or a 0-d integer tensor for a graph's input).
    """
    if not hasattr(model, "attention_layers"):
        raise TypeError(f"model must have attention layers by kind (a "
                        f"Transformer), got {type(model).__name__}")
    layers = model.attention_layers()
    if set(layers) != set(KINDS):
        raise TypeError(f"intervene needs an encoder-decoder, whose "
                        f"attention kinds are {KINDS}; "
                        f"{type(model).__name__} has {tuple(layers)}")
    off = _check_heads_off(heads_off, layers)
    if hidden is not None:
        check_tensor("hidden", hidden, ndim=2, kind="bool")       # (B, S)
    _check_window(window)
    gates = _check_gates(gates, layers)
    inner = [layer.attention for kind in KINDS for layer in layers[kind]]
    if any(attention.intervention is not None for attention in inner):
        raise RuntimeError("the model's attention layers are being "
                           "intervened on already (nested intervene)")
    for kind in KINDS:
        for block, layer in enumerate(layers[kind]):
            gate = (gates[kind][block] if kind in gates
                    else torch.ones(layer.num_heads))
            for _, _, head in [e for e in off if e[:2] == (kind, block)]:
                gate = gate.clone()
                gate[head] = 0.0
            layer.attention.intervention = LayerIntervention(
                gate=gate,
                hidden=hidden if kind in SOURCE_KINDS else None,
                window=window if kind == "encoder_self" else None)
    try:
        yield
    finally:
        for attention in inner:
            attention.intervention = None
