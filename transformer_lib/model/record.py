"""Recording attention weights: one explicit, scoped mechanism.

Attention layers do not return or keep their weights.  To look at them,
run the model inside :func:`record_attention`::

    with tl.record_attention(model) as maps:
        model(src, tgt_in, src_valid_lens)
    maps["encoder.blks.block0.attention"]   # [(B, h, Q, K)]: one per call

Inside the ``with`` block the attention layers compute their weights
explicitly and append them to ``maps``; when it ends they are detached
from ``maps``, keep no reference to any weight, and use torch's fused
kernel again.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import torch
from torch import nn

from .attention import AdditiveAttention, DotProductAttention

WEIGHING = (DotProductAttention, AdditiveAttention)  # they form the weights


def attention_layers(model: nn.Module) -> dict[str, nn.Module]:
    """``{name: layer}`` for every layer of ``model`` that computes
    attention weights.  A :class:`DotProductAttention` held as
    ``.attention`` by a multi-head layer is named after that layer
    (``...block0.attention``, not ``...block0.attention.attention``)."""
    modules = dict(model.named_modules())
    layers = {}
    for name, module in modules.items():
        if isinstance(module, WEIGHING):
            parent = name.rpartition(".")[0]
            held = parent and getattr(modules[parent], "attention", None)
            if isinstance(module, DotProductAttention) and held is module:
                name = parent
            layers[name] = module
    return layers


class AttentionMaps(dict):
    """``{layer name: [weights of each call]}``, filled by
    :func:`record_attention`.  Weights are ``(B, h, Q, K)`` for multi-head
    layers and ``(B, Q, K)`` for additive attention."""

    def __init__(self, layers: dict[str, nn.Module]):
        super().__init__({name: [] for name in layers})
        self.layers = layers

    def of(self, layer: nn.Module) -> list[torch.Tensor]:
        """The weights recorded for ``layer`` (an attention layer or a
        multi-head layer), one tensor per call."""
        inner = getattr(layer, "attention", layer)
        for name, module in self.layers.items():
            if module is inner:
                return self[name]
        raise KeyError(f"{type(layer).__name__} is not an attention layer "
                       f"of the recorded model")


@contextmanager
def record_attention(model: nn.Module):
    """Record the weights of every attention layer of ``model`` while the
    ``with`` block runs; yields an :class:`AttentionMaps`."""
    layers = attention_layers(model)
    if not layers:
        raise ValueError(f"{type(model).__name__} has no attention layer")
    busy = [name for name, layer in layers.items()
            if layer.recorder is not None]
    if busy:
        raise RuntimeError(f"attention layers {busy} are being recorded "
                           f"already (nested record_attention)")
    maps = AttentionMaps(layers)
    for name, layer in layers.items():
        layer.recorder = maps[name]
    try:
        yield maps
    finally:
        for layer in layers.values():
            layer.recorder = None


class GradientNorms:
    """Filled by :func:`record_gradient_norms` when its ``with`` block
    ends: ``per_step``, a ``(steps, blocks)`` NumPy array."""

    per_step = None


@contextmanager
def record_gradient_norms(blocks):
    """Record the norm of each block's whole gradient (all its parameters
    together, as they accumulate: before any clipping) at every backward
    pass while the ``with`` block runs::

        with tl.record_gradient_norms(model.encoder.blks) as norms:
            fit(model, ...)
        norms.per_step          # (steps, blocks)

    ``blocks``: modules with parameters, e.g. a model's blocks."""
    blocks = list(blocks)
    if not blocks or not all(isinstance(b, nn.Module) for b in blocks):
        raise TypeError("blocks must be a non-empty list of modules")
    sizes = [len(list(block.parameters())) for block in blocks]
    if 0 in sizes:
        raise ValueError(f"blocks[{sizes.index(0)}] has no parameters")
    squares = [[] for _ in blocks]       # one entry per parameter per step

    def hook(i):
        return lambda p: squares[i].append(
            p.grad.detach().float().pow(2).sum())
    handles = [p.register_post_accumulate_grad_hook(hook(i))
               for i, block in enumerate(blocks)
               for p in block.parameters()]
    norms = GradientNorms()
    try:
        yield norms
    finally:
        for handle in handles:
            handle.remove()
    steps = len(squares[0]) // sizes[0]
    if any(len(s) != steps * n for s, n in zip(squares, sizes)):
        raise RuntimeError("some parameters got no gradient in some "
                           "backward pass: norms per step are undefined")
    if steps == 0:
        norms.per_step = np.zeros((0, len(blocks)))
        return
    per_block = [torch.stack(s).view(steps, n).sum(1).sqrt()
                 for s, n in zip(squares, sizes)]
    norms.per_step = torch.stack(per_block, dim=1).cpu().numpy()
