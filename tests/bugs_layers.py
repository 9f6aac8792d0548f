"""Planted bugs for the checkers of chapters 4 and 5 (layer_norm and
sinusoidal_encoding): each a copy of a right answer with one mistake a
student makes, and the case that must catch it first."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from planted_bugs import PlantedBug
from torch import nn
from torch.func import functional_call

import transformer_lib as tl
from transformer_lib.instruments.exercises.layers import (
    check_layer_norm, check_sinusoidal_encoding)

# --- Right answers: layer_norm ---------------------------------------------


def layer_norm(X, gamma, beta, eps=1e-5):
    """The notebook's solution."""
    mean = X.mean(-1, keepdim=True)
    var = X.var(-1, keepdim=True, unbiased=False)
    return gamma * (X - mean) / torch.sqrt(var + eps) + beta


def torch_layer_norm(X, gamma, beta, eps=1e-5):
    return F.layer_norm(X, X.shape[-1:], gamma, beta, eps)


def module_layer_norm(X, gamma, beta, eps=1e-5):
    """nn.LayerNorm, its weight and bias replaced by gamma and beta (so
    that the gradient reaches them)."""
    module = nn.LayerNorm(X.shape[-1], eps=eps).to(X.dtype)
    return functional_call(module, {"weight": gamma, "bias": beta}, (X,))


def addnorm_layer_norm(X, gamma, beta, eps=1e-5):
    """The library's AddNorm with a zero sub-layer output and no dropout:
    LayerNorm(X + 0)."""
    addnorm = tl.AddNorm(X.shape[-1]).to(X.dtype).eval()
    addnorm.ln.eps = eps
    return functional_call(addnorm, {"ln.weight": gamma, "ln.bias": beta},
                           (X, torch.zeros_like(X)))


# --- Right answers: sinusoidal_encoding -----------------------------------


def sinusoidal_encoding(T, d):
    """The notebook's solution, in float32 throughout."""
    t = torch.arange(T, dtype=torch.float32)[:, None]          # (T, 1)
    two_i = torch.arange(0, d, 2, dtype=torch.float32)         # (d/2,)
    angles = t / 10000 ** (two_i / d)                          # (T, d/2)
    P = torch.zeros(T, d)
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P


CORRECT = [
    (check_layer_norm, layer_norm, "the notebook's layer_norm"),
    (check_layer_norm, torch_layer_norm, "torch's F.layer_norm"),
    (check_layer_norm, module_layer_norm,
     "nn.LayerNorm with gamma and beta as its weights"),
    (check_layer_norm, addnorm_layer_norm,
     "the library's AddNorm, its LayerNorm alone"),
    (check_sinusoidal_encoding, sinusoidal_encoding,
     "the notebook's sinusoidal_encoding"),
    (check_sinusoidal_encoding, tl.sinusoidal_encoding,
     "the library's sinusoidal_encoding"),
]


# --- Planted bugs: layer_norm ---------------------------------------------


def in_float64(X, gamma, beta, eps=1e-5):
    X = X.double()                      # BUG: never cast back to X's dtype
    mean = X.mean(-1, keepdim=True)
    var = X.var(-1, keepdim=True, unbiased=False)
    return gamma * (X - mean) / torch.sqrt(var + eps) + beta


def unbiased_variance(X, gamma, beta, eps=1e-5):
    mean = X.mean(-1, keepdim=True)
    var = X.var(-1, keepdim=True)       # BUG: torch.var divides by d - 1
    return gamma * (X - mean) / torch.sqrt(var + eps) + beta


def eps_outside_the_root(X, gamma, beta, eps=1e-5):
    mean = X.mean(-1, keepdim=True)
    std = X.std(-1, keepdim=True, unbiased=False)
    return gamma * (X - mean) / (std + eps) + beta   # BUG: std + eps


def no_eps(X, gamma, beta, eps=1e-5):
    mean = X.mean(-1, keepdim=True)
    var = X.var(-1, keepdim=True, unbiased=False)
    return gamma * (X - mean) / torch.sqrt(var) + beta   # BUG: eps unused


def over_the_batch_axis(X, gamma, beta, eps=1e-5):
    mean = X.mean(0, keepdim=True)      # BUG: BatchNorm's axis
    var = X.var(0, keepdim=True, unbiased=False)
    return gamma * (X - mean) / torch.sqrt(var + eps) + beta


def over_all_axes(X, gamma, beta, eps=1e-5):
    mean = X.mean()                     # BUG: one mean for the whole tensor
    var = X.var(unbiased=False)
    return gamma * (X - mean) / torch.sqrt(var + eps) + beta


def gamma_and_beta_swapped(X, gamma, beta, eps=1e-5):
    mean = X.mean(-1, keepdim=True)
    var = X.var(-1, keepdim=True, unbiased=False)
    return beta * (X - mean) / torch.sqrt(var + eps) + gamma   # BUG


def no_gamma_and_beta(X, gamma, beta, eps=1e-5):
    mean = X.mean(-1, keepdim=True)
    var = X.var(-1, keepdim=True, unbiased=False)
    return (X - mean) / torch.sqrt(var + eps)   # BUG: gamma, beta unused


def std_without_the_mean(X, gamma, beta, eps=1e-5):
    mean = X.mean(-1, keepdim=True)
    var = X.pow(2).mean(-1, keepdim=True)   # BUG: the mean not subtracted
    return gamma * (X - mean) / torch.sqrt(var + eps) + beta


def variance_by_cancellation(X, gamma, beta, eps=1e-5):
    mean = X.mean(-1, keepdim=True)
    # BUG: mean(x^2) - mean(x)^2 cancels in float32 on large values
    var = X.pow(2).mean(-1, keepdim=True) - mean.pow(2)
    return gamma * (X - mean) / torch.sqrt(var + eps) + beta


def axis_two(X, gamma, beta, eps=1e-5):
    mean = X.mean(2, keepdim=True)      # BUG: the last axis of (B, T, d)
    var = X.var(2, keepdim=True, unbiased=False)          # only
    return gamma * (X - mean) / torch.sqrt(var + eps) + beta


def detached_statistics(X, gamma, beta, eps=1e-5):
    mean = X.mean(-1, keepdim=True)
    var = X.var(-1, keepdim=True, unbiased=False)
    std = torch.sqrt(var + eps).detach()   # BUG: cuts the gradient
    return gamma * (X - mean) / std + beta


# --- Planted bugs: sinusoidal_encoding --------------------------------------


def float64_encoding(T, d):
    t = torch.arange(T, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d, 2, dtype=torch.float64)
    angles = t / 10000 ** (two_i / d)
    P = torch.zeros(T, d, dtype=torch.float64)   # BUG: float64 returned
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P


def sin_and_cos_swapped(T, d):
    t = torch.arange(T, dtype=torch.float32)[:, None]
    two_i = torch.arange(0, d, 2, dtype=torch.float32)
    angles = t / 10000 ** (two_i / d)
    P = torch.zeros(T, d)
    P[:, 0::2], P[:, 1::2] = torch.cos(angles), torch.sin(angles)   # BUG
    return P


def exponent_i_over_d(T, d):
    t = torch.arange(T, dtype=torch.float32)[:, None]
    i = torch.arange(d // 2, dtype=torch.float32)
    angles = t / 10000 ** (i / d)       # BUG: i/d instead of 2i/d
    P = torch.zeros(T, d)
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P


def positions_from_one(T, d):
    t = torch.arange(1, T + 1, dtype=torch.float32)[:, None]   # BUG
    two_i = torch.arange(0, d, 2, dtype=torch.float32)
    angles = t / 10000 ** (two_i / d)
    P = torch.zeros(T, d)
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P


def concatenated(T, d):
    t = torch.arange(T, dtype=torch.float32)[:, None]
    two_i = torch.arange(0, d, 2, dtype=torch.float32)
    angles = t / 10000 ** (two_i / d)
    # BUG: the sines in the first half, the cosines in the second
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=-1)


def base_1000(T, d):
    t = torch.arange(T, dtype=torch.float32)[:, None]
    two_i = torch.arange(0, d, 2, dtype=torch.float32)
    angles = t / 1000 ** (two_i / d)    # BUG: base 1000
    P = torch.zeros(T, d)
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P


def i_from_one(T, d):
    t = torch.arange(T, dtype=torch.float32)[:, None]
    i = torch.arange(1, d // 2 + 1, dtype=torch.float32)   # BUG: from 1
    angles = t / 10000 ** (2 * i / d)
    P = torch.zeros(T, d)
    P[:, 0::2], P[:, 1::2] = torch.sin(angles), torch.cos(angles)
    return P


def exponent_per_column(T, d):
    t = torch.arange(T, dtype=torch.float32)[:, None]
    j = torch.arange(d, dtype=torch.float32)
    angles = t / 10000 ** (j / d)       # BUG: column 2i + 1 uses (2i + 1)/d
    P = torch.zeros(T, d)
    P[:, 0::2], P[:, 1::2] = (torch.sin(angles[:, 0::2]),
                              torch.cos(angles[:, 1::2]))
    return P


LAYER_NORM = "the shape and dtype of the output"
BATCH = ("a batch of tokens (B, T, d) against F.layer_norm with random "
         "gamma and beta")
FLAT = ("a constant row (variance 0) and a row of tiny values (variance "
        "below eps)")
LARGE = "a row of large values (about 1000): the mean is subtracted"
RANKS = "a 4-D and a 2-D input: only the last axis is normalised"
GRADIENT = ("the gradient with respect to X, gamma and beta "
            "(torch.autograd.gradcheck in float64)")
P_SHAPE = "the shape and dtype of P"
FIRST_PAIR = "columns 0 and 1 (frequency 1: sin t and cos t)"
LATER = "the frequencies of the later pairs"

BUGS = [
    PlantedBug("computes in float64 and returns float64", check_layer_norm,
               in_float64, LAYER_NORM),
    PlantedBug("the unbiased variance", check_layer_norm,
               unbiased_variance, BATCH),
    PlantedBug("eps outside the square root", check_layer_norm,
               eps_outside_the_root, FLAT),
    PlantedBug("no eps", check_layer_norm, no_eps, FLAT),
    PlantedBug("statistics over the batch axis", check_layer_norm,
               over_the_batch_axis, BATCH),
    PlantedBug("statistics over all axes", check_layer_norm,
               over_all_axes, BATCH),
    PlantedBug("gamma and beta swapped", check_layer_norm,
               gamma_and_beta_swapped, BATCH),
    PlantedBug("gamma and beta forgotten", check_layer_norm,
               no_gamma_and_beta, BATCH),
    PlantedBug("the std without subtracting the mean", check_layer_norm,
               std_without_the_mean, BATCH),
    PlantedBug("the variance as mean(x^2) - mean(x)^2", check_layer_norm,
               variance_by_cancellation, LARGE, alone=True),
    PlantedBug("dim=2 instead of dim=-1", check_layer_norm, axis_two,
               RANKS, alone=True),
    PlantedBug("the standard deviation detached", check_layer_norm,
               detached_statistics, GRADIENT, alone=True),
    PlantedBug("returns float64", check_sinusoidal_encoding,
               float64_encoding, P_SHAPE, alone=True),
    PlantedBug("sin and cos swapped", check_sinusoidal_encoding,
               sin_and_cos_swapped, FIRST_PAIR),
    PlantedBug("exponent i/d instead of 2i/d", check_sinusoidal_encoding,
               exponent_i_over_d, LATER, alone=True),
    PlantedBug("positions start at 1", check_sinusoidal_encoding,
               positions_from_one, FIRST_PAIR),
    PlantedBug("sines and cosines concatenated", check_sinusoidal_encoding,
               concatenated, FIRST_PAIR),
    PlantedBug("base 1000", check_sinusoidal_encoding, base_1000, LATER, alone=True),
    PlantedBug("i counted from 1", check_sinusoidal_encoding, i_from_one,
               FIRST_PAIR, alone=True),
    PlantedBug("exponent (2i + 1)/d in the cosine columns",
               check_sinusoidal_encoding, exponent_per_column, FIRST_PAIR),
]
