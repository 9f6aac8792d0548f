"""Planted bugs for the checker of the GPT chapter (top_k_probabilities):
each a copy of a right answer with one mistake a student makes, and the
case that must catch it first."""

from __future__ import annotations

import torch
from planted_bugs import PlantedBug

from transformer_lib.instruments.exercises.sampling import (
    check_top_k_probabilities)
from transformer_lib.translation import Sampler

# --- Right answers ----------------------------------------------------------


def top_k_probabilities(logits, k):
    """The notebook's solution."""
    kept = torch.topk(logits, k).indices
    masked = torch.full_like(logits, float("-inf"))
    masked[kept] = logits[kept]
    return torch.softmax(masked, dim=-1)


def library_top_k(logits, k):
    """The library's Sampler with top_k alone."""
    return Sampler(top_k=k).probabilities(logits).float()


CORRECT = [
    (check_top_k_probabilities, top_k_probabilities,
     "the notebook's top_k_probabilities"),
    (check_top_k_probabilities, library_top_k, "the library's Sampler"),
]

# --- Bugs -------------------------------------------------------------------


def not_renormalised(logits, k):
    p = torch.softmax(logits, dim=-1)
    kept = torch.topk(logits, k).indices
    out = torch.zeros_like(p)
    out[kept] = p[kept]
    return out


def zeroed_logits(logits, k):
    kept = torch.topk(logits, k).indices
    masked = torch.zeros_like(logits)
    masked[kept] = logits[kept]
    return torch.softmax(masked, dim=-1)


def threshold_at_the_kth(logits, k):
    kth = torch.topk(logits, k).values[-1]
    return torch.softmax(logits.masked_fill(logits < kth, float("-inf")), -1)


def naive_exp(logits, k):
    kept = torch.topk(logits, k).indices
    e = torch.zeros_like(logits)
    e[kept] = torch.exp(logits[kept])
    return e / e.sum()


def in_place(logits, k):
    kept = torch.topk(logits, k).indices
    drop = torch.ones_like(logits, dtype=torch.bool)
    drop[kept] = False
    logits[drop] = float("-inf")
    return torch.softmax(logits, dim=-1)


def smallest_k(logits, k):
    kept = torch.topk(logits, k, largest=False).indices
    masked = torch.full_like(logits, float("-inf"))
    masked[kept] = logits[kept]
    return torch.softmax(masked, dim=-1)


ALL = "k equal to the vocabulary: the softmax itself"
ONE = "k = 1: all the probability on the largest logit"
THREE = "k = 3 of 8: the softmax over the three largest, renormalised"
TIE = "a tie at the k-th largest logit: exactly k tokens kept"
LARGE = "large logits (around 1000)"

BUGS = [
    PlantedBug("the kept probabilities not renormalised",
               check_top_k_probabilities, not_renormalised, ONE),
    PlantedBug("the other logits set to 0, not -inf",
               check_top_k_probabilities, zeroed_logits, ONE),
    PlantedBug("every logit >= the k-th largest kept",
               check_top_k_probabilities, threshold_at_the_kth, TIE,
               alone=True),
    PlantedBug("exp without subtracting the largest logit",
               check_top_k_probabilities, naive_exp, LARGE, alone=True),
    PlantedBug("the logits changed in place", check_top_k_probabilities,
               in_place, ONE),
    PlantedBug("the k smallest logits kept", check_top_k_probabilities,
               smallest_k, ONE),
]
