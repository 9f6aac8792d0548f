"""Checkers for the layers the reader writes in chapters 4 and 5: layer
normalisation and the sinusoidal positional encoding.

    tl.exercises.check_layer_norm(layer_norm)
    tl.exercises.check_sinusoidal_encoding(sinusoidal_encoding)

Each case builds its inputs from a fixed seed (its own generator, the
global random state untouched) and compares with PyTorch's
``F.layer_norm``, or with chapter 5's formula computed in float64.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .core import (Case, Checker, Mismatch, expect_close, expect_tensor,
                   number, random_tensor)

# --- Chapter 4: layer normalisation ---------------------------------------
#
#     layer_norm(X, gamma, beta, eps=1e-5) -> (..., d), X's dtype
#
# X (..., d) is normalised over its last axis, token by token: with the
# mean mu and the biased variance sigma^2 of its d features,
# gamma * (X - mu) / sqrt(sigma^2 + eps) + beta; gamma, beta: (d,).

EPS = 1e-5


def _affine(d: int, seed: int, dtype=torch.float32):
    """A random gamma (around 1) and beta (around 0), both (d,)."""
    noise = random_tensor((2, d), seed, dtype=dtype)
    return 1.0 + 0.5 * noise[0], 0.5 * noise[1]


def _identity(d: int, dtype=torch.float32):
    """gamma = 1, beta = 0: the output is the normalised X itself."""
    return torch.ones(d, dtype=dtype), torch.zeros(d, dtype=dtype)


def _layer_norm_reference(X, gamma, beta, eps=EPS):
    return F.layer_norm(X, X.shape[-1:], gamma, beta, eps)


def _standardise(X, dims, *, unbiased=False, centred=True, eps=EPS):
    """(X - mean) / sqrt(var + eps) with the statistics over ``dims``:
    the right one and the wrong ones that the hints recognise."""
    mean = X.mean(dims, keepdim=True)
    if centred:
        var = X.var(dims, keepdim=True, correction=int(unbiased))
    else:                                 # the mean never subtracted
        var = X.pow(2).mean(dims, keepdim=True)
    return (X - mean) / torch.sqrt(var + eps)


def _layer_norm_hint(got, X, gamma, beta) -> str:
    """What a wrong output of layer_norm matches, in words (or "")."""
    last, batch = (-1,), tuple(range(X.dim() - 1))
    X_hat = _standardise(X, last)
    known = [
        (gamma * _standardise(X, last, unbiased=True) + beta,
         "it matches the unbiased variance, which divides by d - 1, "
         "torch.var's default; LayerNorm divides by d: unbiased=False"),
        (beta * X_hat + gamma,
         "gamma and beta swapped? gamma multiplies, beta is added"),
        (X_hat, "gamma and beta not applied?"),
        (gamma * _standardise(X, batch[:1]) + beta,
         "it matches statistics over the batch axis, BatchNorm's; "
         "LayerNorm takes them over each token's d features, dim=-1"),
        (gamma * _standardise(X, batch) + beta,
         "it matches statistics over every position of the batch, "
         "BatchNorm's; LayerNorm takes them over each token's d features, "
         "dim=-1"),
        (gamma * _standardise(X, tuple(range(X.dim()))) + beta,
         "it matches statistics over the whole tensor; LayerNorm takes "
         "them over each token's d features, dim=-1"),
        (gamma * _standardise(X, last, centred=False) + beta,
         "it matches a standard deviation taken without subtracting the "
         "mean first"),
    ]
    for wrong, hint in known:
        if torch.allclose(got.detach().to(wrong.dtype), wrong, atol=1e-4,
                          rtol=1e-3):
            return f" ({hint})"
    return ""


def _expect_layer_norm(got, X, gamma, beta, what, *, atol=1e-5,
                       hint=""):
    """The reader's output must match F.layer_norm's; a mismatch says
    which known mistake it matches, if any."""
    expect_tensor(got, what, X.shape, X.dtype)
    want = _layer_norm_reference(X, gamma, beta)
    try:
        expect_close(got, want, what, atol=atol, rtol=1e-4)
    except Mismatch as wrong:
        hint = _layer_norm_hint(got, X, gamma, beta) or hint
        raise Mismatch(f"{wrong}{hint}") from None


def _call(layer_norm, X, gamma, beta):
    """The reader's output, on copies of the inputs: an answer that
    changes X in place is told so, not compared with a changed X."""
    copies = [X.clone(), gamma.clone(), beta.clone()]
    got = layer_norm(*copies)
    for name, copy, original in zip(["X", "gamma", "beta"], copies,
                                    [X, gamma, beta]):
        if not torch.equal(copy, original):
            raise Mismatch(f"your function changed {name} in place; "
                           f"return a new tensor and leave {name} as it "
                           f"was")
    return got


def _layer_norm_shape_and_dtype(layer_norm):
    for dtype in (torch.float32, torch.float64):
        X = random_tensor((2, 3, 8), 0, dtype=dtype)
        gamma, beta = _affine(8, 1, dtype)
        got = _call(layer_norm, X, gamma, beta)
        expect_tensor(got, f"the output for a {dtype} X of shape "
                      f"(2, 3, 8)", X.shape)
        if got.dtype != dtype:
            raise Mismatch(f"the output for a {dtype} X should be "
                           f"{dtype} too, got {got.dtype} (compute in X's "
                           f"dtype)")


def _layer_norm_batch_of_tokens(layer_norm):
    X = random_tensor((2, 5, 8), 2)                   # (B, T, d)
    gamma, beta = _affine(8, 3)
    _expect_layer_norm(_call(layer_norm, X, gamma, beta), X, gamma, beta,
                       "the output")


def _layer_norm_flat_rows(layer_norm):
    constant = torch.full((8,), 3.0)                  # variance 0
    tiny = 1e-3 * random_tensor((8,), 4)              # variance << eps
    X = torch.stack([constant, tiny])[None]           # (1, 2, 8)
    gamma, beta = _identity(8)
    got = _call(layer_norm, X, gamma, beta)
    expect_tensor(got, "the output", X.shape, X.dtype)
    if torch.isnan(got[0, 0]).any():
        raise Mismatch("the constant row comes back as NaN: its variance "
                       "is 0, and sqrt(0 + eps) keeps the division "
                       "finite (is eps added inside the square root?)")
    _expect_layer_norm(got, X, gamma, beta, "the output", hint=(
        " (eps belongs inside the square root: sqrt(var + eps), not "
        "std + eps; the two differ when the variance is below eps)"))


def _layer_norm_large_values(layer_norm):
    X = 1000.0 + 2.0 * random_tensor((2, 4, 8), 5)    # mean ~1000, std ~2
    gamma, beta = _identity(8)
    _expect_layer_norm(_call(layer_norm, X, gamma, beta), X, gamma, beta,
                       "the output", atol=2e-4, hint=(
                           " (subtract the mean, then square: in float32, "
                           "mean(x^2) - mean(x)^2 loses digits of the "
                           "variance to rounding when the values are "
                           "large)"))


def _layer_norm_other_ranks(layer_norm):
    for shape in [(2, 3, 4, 8), (5, 8)]:
        X = random_tensor(shape, 6)
        gamma, beta = _identity(8)
        _expect_layer_norm(
            _call(layer_norm, X, gamma, beta), X, gamma, beta,
            f"the output for X of shape {shape}", hint=(
                " (normalise over the last axis, dim=-1, whatever the "
                "number of axes)"))


def _layer_norm_gradient(layer_norm):
    X = random_tensor((1, 3, 4), 7, dtype=torch.float64)
    gamma, beta = _affine(4, 8, torch.float64)
    # finite differences need float64 all the way: an answer computed in
    # float32 and cast back would look like a wrong gradient
    error = (_call(layer_norm, X, gamma, beta)
             - _layer_norm_reference(X, gamma, beta)).abs().max().item()
    if error > 1e-10:
        raise Mismatch(f"for a float64 X the output is off by up to "
                       f"{error:.2g}, as if computed in a lower precision: "
                       f"compute in X's dtype")
    inputs = [X, gamma, beta]
    for place, name in enumerate(["X", "gamma", "beta"]):
        def of_one(value, place=place):       # positionally: any names
            return layer_norm(*inputs[:place], value, *inputs[place + 1:])
        value = inputs[place].clone().requires_grad_(True)
        if not of_one(value).requires_grad:
            raise Mismatch(f"the output has no gradient with respect to "
                           f"{name} (computed under torch.no_grad(), or "
                           f"through .detach(), .item() or NumPy?)")
        try:
            right = torch.autograd.gradcheck(of_one, (value,),
                                             raise_exception=False)
        except RuntimeError:
            right = False
        if not right:
            raise Mismatch(f"the gradient with respect to {name} is "
                           f"wrong: torch.autograd.gradcheck finds that "
                           f"autograd's gradient differs from the finite "
                           f"differences of your function (a .detach() or "
                           f"a .data cuts the graph?)")


LAYER_NORM_CASES = [
    Case("the shape and dtype of the output", _layer_norm_shape_and_dtype),
    Case("a batch of tokens (B, T, d) against F.layer_norm with random "
         "gamma and beta", _layer_norm_batch_of_tokens),
    Case("a constant row (variance 0) and a row of tiny values (variance "
         "below eps)", _layer_norm_flat_rows),
    Case("a row of large values (about 1000): the mean is subtracted",
         _layer_norm_large_values),
    Case("a 4-D and a 2-D input: only the last axis is normalised",
         _layer_norm_other_ranks),
    Case("the gradient with respect to X, gamma and beta "
         "(torch.autograd.gradcheck in float64)", _layer_norm_gradient),
]

check_layer_norm = Checker(4, "layer_norm", LAYER_NORM_CASES)


# --- Chapter 5: the sinusoidal positional encoding -------------------------
#
#     sinusoidal_encoding(T, d) -> P, (T, d) float32
#
# P[t, 2i] = sin(t * omega_i) and P[t, 2i + 1] = cos(t * omega_i), with
# omega_i = 10000^(-2i/d): pair i turns by omega_i radians per position.

BASE = 10000.0


def _omega(d: int) -> torch.Tensor:
    """omega_i = 10000^(-2i/d), i < d/2, in float64."""
    two_i = torch.arange(0, d, 2, dtype=torch.float64)
    return BASE ** (-two_i / d)


def _encoding(sinusoidal_encoding, T: int, d: int) -> torch.Tensor:
    """The reader's P for (T, d), shape checked, in float64."""
    P = sinusoidal_encoding(T, d)
    expect_tensor(P, f"sinusoidal_encoding({T}, {d})", (T, d))
    return P.detach().to(torch.float64)


def _close(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-5) -> bool:
    return torch.allclose(a, b, atol=atol, rtol=1e-4)


def _first_gap(got: torch.Tensor, want: torch.Tensor) -> str:
    """Where a column first differs from the formula, in words."""
    t = int(torch.nonzero(~torch.isclose(got, want, atol=1e-5,
                                         rtol=1e-4))[0])
    return (f"at t = {t} it holds {number(got[t].item())} instead of "
            f"{number(want[t].item())}")


def _angles_turned(P: torch.Tensor) -> torch.Tensor:
    """The angle each (sin, cos) pair turns from position 0 to 1, (d/2,):
    the pair's frequency read from P, whatever its phase."""
    angle = torch.atan2(P[:2, 0::2], P[:2, 1::2])        # (2, d/2)
    step = angle[1] - angle[0]
    return torch.remainder(step + math.pi, 2 * math.pi) - math.pi


def _rotation(omega: torch.Tensor, k: int) -> torch.Tensor:
    """R_k of chapter 5: a 2x2 rotation by k * omega_i per pair on the
    diagonal, acting on row vectors, p_(t+k) = p_t R_k."""
    blocks = [torch.tensor([[math.cos(k * w), -math.sin(k * w)],
                            [math.sin(k * w), math.cos(k * w)]],
                           dtype=torch.float64) for w in omega.tolist()]
    return torch.block_diag(*blocks)                     # (d, d)


def _encoding_shape_and_dtype(sinusoidal_encoding):
    P = sinusoidal_encoding(5, 6)
    expect_tensor(P, "sinusoidal_encoding(5, 6)", (5, 6))
    if P.dtype != torch.float32:
        raise Mismatch(f"sinusoidal_encoding(5, 6) should be "
                       f"torch.float32, got {P.dtype} (cast it with "
                       f".float(), or compute in float32)")


def _encoding_first_pair(sinusoidal_encoding):
    T, d = 20, 8
    P = _encoding(sinusoidal_encoding, T, d)
    t = torch.arange(T, dtype=torch.float64)
    sin, cos = torch.sin(t), torch.cos(t)
    omega = _omega(d)
    column = P[:, 0]
    if not _close(column, sin):
        if _close(column, cos):
            found = "it holds cos(t) (sin and cos swapped?)"
        elif _close(column, torch.sin(t + 1)):
            found = "it holds sin(t + 1) (positions counted from 1?)"
        elif _close(column, torch.sin(t * omega[1])):
            found = ("it holds sin(t / 10000^(2/d)), the sine of pair 1 "
                     "(i counted from 1? pair 0 has i = 0, frequency 1)")
        else:
            found = _first_gap(column, sin)
        raise Mismatch(f"column 0 should be sin(t): {found}")
    column = P[:, 1]
    if not _close(column, cos):
        if _close(column, torch.sin(t * omega[1])):
            found = ("it holds sin(t / 10000^(2/d)), the sine of pair 1 "
                     "(sines and cosines concatenated, not interleaved? "
                     "the sines go in the even columns P[:, 0::2], the "
                     "cosines in the odd ones P[:, 1::2])")
        elif _close(column, torch.cos(t / BASE ** (1 / d))):
            found = ("it holds cos(t / 10000^(1/d)) (column 2i + 1 "
                     "shares pair i's exponent 2i/d, not (2i + 1)/d)")
        else:
            found = _first_gap(column, cos)
        raise Mismatch(f"column 1 should be cos(t): {found}")


def _encoding_later_frequencies(sinusoidal_encoding):
    d = 8
    P = _encoding(sinusoidal_encoding, 4, d)
    turned = _angles_turned(P)
    i = torch.arange(d // 2, dtype=torch.float64)
    # relative to pair 0, so that only the fall from pair to pair counts
    ratio = (turned / turned[0]).tolist()
    want = (BASE ** (-2 * i / d)).tolist()
    for pair in range(1, d // 2):
        if math.isclose(ratio[pair], want[pair], rel_tol=1e-3):
            continue
        if math.isclose(ratio[pair], BASE ** (-pair / d), rel_tol=1e-3):
            hint = " (exponent i/d instead of 2i/d?)"
        elif math.isclose(ratio[pair], 1000.0 ** (-2 * pair / d),
                          rel_tol=1e-3):
            hint = " (base 1000 instead of 10000?)"
        else:
            hint = ""
        raise Mismatch(
            f"for d = {d}, pair {pair} (columns {2 * pair} and "
            f"{2 * pair + 1}) should turn 10000^(-{2 * pair}/{d}) = "
            f"{number(want[pair])} times as fast as pair 0, it turns "
            f"{number(ratio[pair])} times as fast{hint}")


def _encoding_position_zero(sinusoidal_encoding):
    d = 12
    P = _encoding(sinusoidal_encoding, 3, d)
    want = torch.tensor([0.0, 1.0] * (d // 2), dtype=torch.float64)
    if not _close(P[0], want):
        shown = ", ".join(number(x) for x in P[0, :4].tolist())
        raise Mismatch(f"row 0 (position 0, d = {d}) should be [0, 1, "
                       f"0, 1, ...]: sin 0 and cos 0 in every pair; it "
                       f"holds [{shown}, ...]")


def _encoding_rotation(sinusoidal_encoding):
    T, d = 40, 16
    P = _encoding(sinusoidal_encoding, T, d)
    # R_k from the frequencies P itself holds, so that this case checks
    # the structure (interleaved pairs, sine first, turning uniformly)
    omega = _angles_turned(P)
    for k in [1, 3, 10]:
        shifted = P[:-k] @ _rotation(omega, k)           # p_t R_k
        bad = ~torch.isclose(shifted, P[k:], atol=1e-4, rtol=1e-3)
        if bad.any():
            t, column = torch.nonzero(bad)[0].tolist()
            raise Mismatch(
                f"p_(t+{k}) should be p_t R_{k}, each pair (sin, cos) "
                f"rotated by {k} times its own angle per position "
                f"(chapter 5): at t = {t}, column {column}, p_t R_{k} "
                f"gives {number(shifted[t, column].item())} but row "
                f"{t + k} holds {number(P[t + k, column].item())}")


SINUSOIDAL_ENCODING_CASES = [
    Case("the shape and dtype of P", _encoding_shape_and_dtype),
    Case("columns 0 and 1 (frequency 1: sin t and cos t)",
         _encoding_first_pair),
    Case("the frequencies of the later pairs", _encoding_later_frequencies),
    Case("position 0 is [0, 1, 0, 1, ...]", _encoding_position_zero),
    Case("the rotation property p_(t+k) = p_t R_k for a few k",
         _encoding_rotation),
]

check_sinusoidal_encoding = Checker(5, "sinusoidal_encoding",
                                    SINUSOIDAL_ENCODING_CASES)
