"""Shared fixtures: d2l 1.0.3 as a numerical oracle, and weight-copying helpers."""

from __future__ import annotations

import importlib
import sys
import types

import pytest
import torch
from hypothesis import settings

# Property tests: at least 200 examples each, no per-example deadline (CI machines are slow),
# and the same examples on every run so that a failure is reproducible.
settings.register_profile("book", max_examples=200, deadline=None, derandomize=True,
                          database=None)
settings.load_profile("book")


def import_or_skip(name: str):
    """``pytest.importorskip``, except on CI, whose set-up installs the book's extras (onnx,
    onnxruntime): there a missing module is a failure, not a quiet skip of its tests."""
    import os

    if os.environ.get("CI"):
        return importlib.import_module(name)
    return pytest.importorskip(name)


def _import_d2l():
    """``from d2l import torch as d2l``, with a stand-in for torchvision where it cannot load.

    d2l imports torchvision only for its image data sets, which these tests never touch;
    there is no CPU build of torchvision on the CI machine.
    """
    try:
        importlib.import_module("torchvision")
    except Exception:  # not installed, or built for another torch
        stub = types.ModuleType("torchvision")
        stub.transforms = types.ModuleType("torchvision.transforms")
        stub.datasets = types.ModuleType("torchvision.datasets")
        sys.modules.update({"torchvision": stub, "torchvision.transforms": stub.transforms,
                            "torchvision.datasets": stub.datasets})
    from d2l import torch as d2l

    return d2l


@pytest.fixture(scope="session")
def d2l():
    return _import_d2l()


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def randomize_(module: torch.nn.Module, scale: float = 0.3) -> torch.nn.Module:
    """Give every parameter random values (LayerNorm's 1s and 0s would hide a mix-up)."""
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn_like(p) * scale)
    return module


@torch.no_grad()
def mha_into_torch(ours, ref: torch.nn.MultiheadAttention) -> None:
    """Copy our MultiHeadAttention's weights into a torch.nn.MultiheadAttention."""
    if ref._qkv_same_embed_dim:
        ref.in_proj_weight.copy_(torch.cat([ours.W_q.weight, ours.W_k.weight, ours.W_v.weight]))
    else:
        ref.q_proj_weight.copy_(ours.W_q.weight)
        ref.k_proj_weight.copy_(ours.W_k.weight)
        ref.v_proj_weight.copy_(ours.W_v.weight)
    ref.out_proj.weight.copy_(ours.W_o.weight)
    if ours.W_q.bias is not None:
        ref.in_proj_bias.copy_(torch.cat([ours.W_q.bias, ours.W_k.bias, ours.W_v.bias]))
        ref.out_proj.bias.copy_(ours.W_o.bias)


def with_weights(layer, *args, **kwargs):
    """Call an attention layer inside ``record_attention``: ``(output, the
    weights of that one call)``."""
    import transformer_lib as tl

    with tl.record_attention(layer) as maps:
        out = layer(*args, **kwargs)
    [weights] = maps.of(layer)
    return out, weights


@pytest.fixture(scope="session")
def data_dir():
    """The folder holding fra-eng/fra.txt: $TRANSFORMER_LIB_DATA, else ../shared/data beside
    the repository (where CI has it).  Tests that need the real pairs skip without it, except
    on CI (where the book's build needs the data too): there a missing copy is a failure, not a
    quiet skip of every test that reads the real pairs."""
    import os
    from pathlib import Path

    beside = Path(__file__).resolve().parents[2] / "shared" / "data"
    candidates = [os.environ.get("TRANSFORMER_LIB_DATA"), beside]
    for c in candidates:
        if c and (Path(c) / "fra-eng" / "fra.txt").is_file():
            return Path(c)
    missing = "the fra-eng data is not available (set TRANSFORMER_LIB_DATA)"
    if os.environ.get("CI"):
        pytest.fail(f"{missing}; CI is set, so the tests that read it would all skip")
    pytest.skip(missing)


@pytest.fixture(scope="session")
def raw_text(data_dir):
    from transformer_lib.translation.download import read_fra_eng

    return read_fra_eng(data_dir)
