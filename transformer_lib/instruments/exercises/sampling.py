"""The checker for the GPT chapter's exercise: top-k sampling's
probabilities.

What the reader writes:

    top_k_probabilities(logits, k)
        logits (V,), k an int in [1, V] -> (V,) probabilities: the
        softmax of the logits restricted to the k largest of them (the
        others get 0), renormalised to sum to 1; exactly k tokens keep a
        probability; the logits are not changed.
"""

from __future__ import annotations

import torch

from .core import (Case, Checker, Mismatch, expect_close, expect_tensor,
                   number, random_tensor)


def _call(top_k_probabilities, logits, k):
    before = logits.clone()
    got = top_k_probabilities(logits, k)
    expect_tensor(got, f"top_k_probabilities(logits, k={k})",
                  logits.shape)
    if not torch.equal(logits, before):
        raise Mismatch("your function changed the logits it was given "
                       "(in place); work on a copy, e.g. logits.clone()")
    return got.detach().double()


def _want(logits, k):
    """The softmax over the k largest logits, zeros elsewhere."""
    kept = torch.topk(logits.double(), k).indices
    p = torch.zeros_like(logits, dtype=torch.float64)
    p[kept] = torch.softmax(logits.double()[kept], 0)
    return p


def _expect(got, logits, k, what):
    kept = int((got > 0).sum())
    if kept != k:
        hint = (" (zeroing the logits of the others is not enough: "
                "exp(0) = 1; set them to -inf)"
                if kept == len(logits) and k < len(logits) else "")
        raise Mismatch(f"{what}: {kept} tokens have a probability above "
                       f"0, where only the k = {k} largest logits should"
                       f"{hint}")
    total = got.sum().item()
    if abs(total - 1) > 1e-4:
        raise Mismatch(f"{what}: the probabilities add up to "
                       f"{number(total)}, not 1 (renormalise over the k "
                       f"kept tokens)")
    expect_close(got, _want(logits, k), what)


def _all_tokens(top_k_probabilities):
    logits = random_tensor((8,), seed=1)
    got = _call(top_k_probabilities, logits, 8)
    _expect(got, logits, 8, "with k = 8 of 8 (every token)")


def _one_token(top_k_probabilities):
    logits = random_tensor((8,), seed=2)
    got = _call(top_k_probabilities, logits, 1)
    best = int(logits.argmax())
    if got[best].item() < 1 - 1e-6:
        raise Mismatch(f"with k = 1 all the probability should be on "
                       f"token {best}, the largest logit; it has "
                       f"{number(got[best].item())}")
    _expect(got, logits, 1, "with k = 1")


def _three_of_eight(top_k_probabilities):
    logits = random_tensor((8,), seed=3, scale=2.0)
    got = _call(top_k_probabilities, logits, 3)
    _expect(got, logits, 3, "with k = 3 of 8")


def _a_tie(top_k_probabilities):
    logits = torch.tensor([0.5, 2.0, 1.0, 2.0, 1.0, -1.0])
    got = _call(top_k_probabilities, logits, 3)
    kept = int((got > 0).sum())
    if kept != 3:
        raise Mismatch(f"logits {logits.tolist()} with k = 3: {kept} "
                       f"tokens kept; two logits tie at the 3rd largest "
                       f"(1.0), and only one of them may stay (keeping "
                       f"every logit >= the k-th largest lets both in; "
                       f"torch.topk keeps exactly k)")
    if got[1].item() <= 0 or got[3].item() <= 0:
        raise Mismatch("the two largest logits (2.0, tokens 1 and 3) "
                       "must keep a probability")


def _large_logits(top_k_probabilities):
    logits = random_tensor((8,), seed=5) + 1000.0
    got = _call(top_k_probabilities, logits, 4)
    if not torch.isfinite(got).all():
        raise Mismatch("with logits around 1000 the probabilities hold "
                       "inf or NaN: exp(1000) overflows (torch.softmax "
                       "subtracts the largest logit first)")
    _expect(got, logits, 4, "with logits around 1000 and k = 4")


CASES = [
    Case("k equal to the vocabulary: the softmax itself", _all_tokens),
    Case("k = 1: all the probability on the largest logit", _one_token),
    Case("k = 3 of 8: the softmax over the three largest, renormalised",
         _three_of_eight),
    Case("a tie at the k-th largest logit: exactly k tokens kept", _a_tie),
    Case("large logits (around 1000)", _large_logits),
]

check_top_k_probabilities = Checker(12, "top_k_probabilities", CASES)
