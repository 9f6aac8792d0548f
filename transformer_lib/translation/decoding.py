"""Generating target sequences from a trained encoder-decoder.

The decoders check their inputs once, then run the model unchecked, one
call per step.  None of them writes ``bos_id`` (it only starts the
decoder's input) or ``pad_id`` (it only fills batches): their scores are
set to -inf before choosing.  For the attention weights behind a
translation, see
:func:`transformer_lib.translation.translate.translate_with_attention`.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import torch

from .._checks import check_positive_int, check_tensor
from ..model import DecoderOnlyTransformer, training_mode


def never_written(bos_id: int, pad_id: int | None) -> list[int]:
    """The ids a decoder never chooses: ``<bos>``, and ``<pad>`` if
    given."""
    return [bos_id] if pad_id is None else [bos_id, pad_id]


def _check_decoding(model, src, src_valid_lens, max_len, token_ids):
    check_positive_int("max_len", max_len)
    decoder = getattr(model, "decoder", None)
    positions = getattr(decoder, "pos_encoding", None)
    if positions is not None and max_len > positions.max_len:
        # step t feeds the decoder position t
        raise ValueError(f"max_len must be at most the model's max_len "
                         f"({positions.max_len} decoder positions), got "
                         f"{max_len}")
    model.check_inputs(src, None, src_valid_lens)
    vocab_size = (model.decoder if hasattr(model, "decoder")
                  else model).vocab_size
    for name, token_id in token_ids.items():
        if token_id is None and name != "bos_id":
            continue                      # no end, or no padding to avoid
        if (isinstance(token_id, bool) or not isinstance(token_id, int)
                or not 0 <= token_id < vocab_size):
            raise ValueError(f"{name} must be a target token id in "
                             f"[0, {vocab_size}), got {token_id!r}")


@torch.no_grad()
def greedy_decode(model, src, src_valid_lens=None, *, bos_id: int,
                  max_len: int, eos_id: int | None = None,
                  pad_id: int | None = None, use_cache: bool = True):
    """Pick the most likely next token, ``max_len`` times (or until every
    row has emitted ``eos_id``).

    model: an :class:`~transformer_lib.model.EncoderDecoder`.
    src ``(B, S)`` ids, src_valid_lens ``(B,)``.
    bos_id, pad_id: never chosen (``pad_id=None``: only ``bos_id``).
    use_cache: feed one new token per step and reuse the cached keys and
    values (each position-wise layer sees T positions in all), or re-run
    the decoder on the whole prefix every step (T(T+1)/2 positions); both
    give the same tokens.
    Returns ``(B, n)`` ids, ``n <= max_len``, without the leading
    ``bos_id``; after a row's ``eos_id`` it holds ``eos_id`` again.
    """
    _check_decoding(model, src, src_valid_lens, max_len,
                    dict(bos_id=bos_id, eos_id=eos_id, pad_id=pad_id))
    never = never_written(bos_id, pad_id)
    with training_mode(model, False):
        memory = model.encoder.encode(src, src_valid_lens)
        B = src.shape[0]
        tokens = torch.full((B, 1), bos_id, dtype=torch.long,
                            device=src.device)
        finished = torch.zeros(B, dtype=torch.bool, device=src.device)
        cache = model.decoder.init_cache() if use_cache else None
        for _ in range(max_len):
            step_input = tokens[:, -1:] if use_cache else tokens
            logits = model.decoder.decode(step_input, memory,
                                          src_valid_lens, cache=cache)
            logits = logits[:, -1]                     # (B, V)
            logits[:, never] = float("-inf")           # <bos>, <pad>
            next_token = logits.argmax(dim=-1)         # (B,)
            if eos_id is not None:
                next_token = next_token.masked_fill(finished, eos_id)
                finished |= next_token == eos_id
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)
            # Stopping early costs one host read per step.
            if eos_id is not None and bool(finished.all()):
                break
    return tokens[:, 1:]


@torch.no_grad()
def greedy_decode_uncached(model, src, src_valid_lens=None, *, bos_id: int,
                           max_len: int, eos_id: int | None = None,
                           pad_id: int | None = None):
    """:func:`greedy_decode` through ``model.logits(src, tgt,
    src_valid_lens)`` alone, run on the whole answer so far at every
    step: no cache, so any model with that method decodes, an
    encoder-decoder (the same tokens as :func:`greedy_decode`, tested) or
    a :class:`~transformer_lib.model.DecoderOnlyTransformer`, whose rows
    put their answers at different positions.  Arguments and result as
    for :func:`greedy_decode`.
    """
    _check_decoding(model, src, src_valid_lens, max_len,
                    dict(bos_id=bos_id, eos_id=eos_id, pad_id=pad_id))
    never = never_written(bos_id, pad_id)
    if isinstance(model, DecoderOnlyTransformer):
        positions = src.shape[1] + max_len - 1   # at the last step
        if positions > model.config.max_len:
            raise ValueError(f"max_len={max_len} steps after a source of "
                             f"{src.shape[1]} positions need {positions} "
                             f"positions, more than the model's "
                             f"max_len={model.config.max_len}")
    B = src.shape[0]
    tokens = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    with training_mode(model, False):
        for _ in range(max_len):
            logits = model.logits(src, tokens, src_valid_lens)  # (B, t, V)
            logits = logits[:, -1]                              # (B, V)
            logits[:, never] = float("-inf")          # <bos>, <pad>
            next_token = logits.argmax(dim=-1)                  # (B,)
            if eos_id is not None:
                next_token = next_token.masked_fill(finished, eos_id)
                finished |= next_token == eos_id
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)
            if eos_id is not None and bool(finished.all()):
                break
    return tokens[:, 1:]


def _check_alpha(name: str, alpha) -> None:
    if (isinstance(alpha, bool) or not isinstance(alpha, numbers.Real)
            or not math.isfinite(alpha) or alpha < 0):
        raise ValueError(f"{name} must be a finite number >= 0, "
                         f"got {alpha!r}")


def _check_beam(beam_size, length_penalty, eos_id) -> None:
    check_positive_int("beam_size", beam_size)
    _check_alpha("length_penalty", length_penalty)
    if eos_id is None:
        raise ValueError("beam_search needs an eos_id: finished beams are "
                         "those that emitted it")


def gnmt_length_penalty(lengths, alpha: float):
    """GNMT's length penalty (Wu et al. 2016), ``(5 + |y|)^alpha / 6^alpha``,
    computed as ``((5 + |y|) / 6) ** alpha``: what :func:`beam_search`
    divides each kept answer's total log-probability by.

    lengths: a tensor of any shape, e.g. ``(B, k)``, of answer lengths
    ``|y|`` (beam_search counts the tokens up to ``eos_id`` included);
    integers or floats, none negative.
    alpha: a finite number >= 0 (``0``: every penalty is 1, no
    normalisation; Vaswani et al. used 0.6).
    Returns a float tensor of the shape of ``lengths``, 1 at ``|y| = 1``.
    """
    _check_alpha("alpha", alpha)
    _check_lengths(lengths)
    return ((5.0 + lengths) / 6.0) ** alpha


def _check_lengths(lengths) -> None:
    check_tensor("lengths", lengths)
    if lengths.dtype == torch.bool or lengths.is_complex():
        raise TypeError(f"lengths must have an integer or a float dtype, "
                        f"got {lengths.dtype}")
    if lengths.numel() and bool((lengths < 0).any()):
        raise ValueError(f"lengths must be >= 0, got a minimum of "
                         f"{lengths.min().item()}")


@dataclass
class BeamStep:
    """One step of :func:`beam_search`, as its ``on_step`` sees it; ``B``
    sources, ``k`` beams each, ``V`` target tokens."""

    candidates: torch.Tensor  # (B, k, V) each beam's score + log p(token)
    from_beam: torch.Tensor   # (B, k) the beam each kept one extends
    tokens: torch.Tensor      # (B, k, t + 1) the kept prefixes, bos first
    scores: torch.Tensor      # (B, k) their summed log-probabilities
    lengths: torch.Tensor     # (B, k) their lengths up to eos (included)
    finished: torch.Tensor    # (B, k) whether they have emitted eos


@torch.no_grad()
def beam_search(model, src, src_valid_lens=None, *, bos_id: int,
                eos_id: int, max_len: int, pad_id: int | None = None,
                beam_size: int = 4, length_penalty: float = 0.6,
                on_step=None):
    """Keep the ``beam_size`` most probable prefixes at every step; return
    the best one when every kept prefix has emitted ``eos_id``, or after
    ``max_len`` steps (then unfinished prefixes compete too).

    Candidates are ranked by total log-probability while searching; the
    final choice divides it by :func:`gnmt_length_penalty` with ``alpha =
    length_penalty`` (GNMT's, Wu et al. 2016; a prefix's length counts its
    tokens up to ``eos_id`` included, or ``max_len``), so that longer
    translations are not lost merely for having more factors below 1.
    Batched (``B`` sources x ``beam_size`` beams in one decoder call) and
    key/value-cached.  With ``beam_size=1`` this is greedy decoding.
    ``bos_id`` and ``pad_id`` (if given) are never chosen: their
    log-probabilities are set to -inf after the softmax, so that a kept
    prefix's score stays its log-probability under the model.
    Returns ``(B, n)`` ids without ``bos_id``; after ``eos_id`` a row holds
    ``eos_id`` again.  ``on_step``, if given, is called with a
    :class:`BeamStep` after every step (to watch the search).
    """
    _check_decoding(model, src, src_valid_lens, max_len,
                    dict(bos_id=bos_id, eos_id=eos_id, pad_id=pad_id))
    _check_beam(beam_size, length_penalty, eos_id)   # eos_id may not be None
    never = never_written(bos_id, pad_id)
    B, k = src.shape[0], beam_size
    device = src.device
    with training_mode(model, False):
        # every source's encoding and lengths, once per beam
        memory = model.encoder.encode(src, src_valid_lens)
        memory = memory.repeat_interleave(k, dim=0)
        lens = (None if src_valid_lens is None
                else src_valid_lens.repeat_interleave(k))
        cache = model.decoder.init_cache()
        tokens = torch.full((B * k, 1), bos_id, dtype=torch.long,
                            device=device)
        scores = torch.zeros(B, k, device=device)
        scores[:, 1:] = float("-inf")  # equal beams: keep one at first
        finished = torch.zeros(B * k, dtype=torch.bool, device=device)
        lengths = torch.zeros(B * k, device=device)
        first_beam = torch.arange(B, device=device)[:, None] * k
        for _ in range(max_len):
            logits = model.decoder.decode(tokens[:, -1:], memory, lens,
                                          cache=cache)[:, -1]
            log_probs = torch.log_softmax(logits.float(), dim=-1)  # (Bk, V)
            log_probs[:, never] = float("-inf")           # <bos>, <pad>
            V = log_probs.shape[-1]
            # A finished beam may only repeat eos, at no cost: its score
            # stays fixed.
            log_probs[finished] = float("-inf")
            log_probs[finished, eos_id] = 0.0
            candidates = log_probs.add_(scores.reshape(B * k, 1))
            scores, choice = candidates.reshape(B, k * V).topk(k, dim=1)
            from_beam = choice // V                           # (B, k)
            parent = (first_beam + from_beam).reshape(-1)     # (B*k,)
            next_token = (choice % V).reshape(-1)
            tokens = torch.cat([tokens[parent], next_token[:, None]], dim=1)
            cache.reorder(parent)
            lengths = lengths[parent] + (~finished[parent]).float()
            finished = finished[parent] | (next_token == eos_id)
            if on_step is not None:
                on_step(BeamStep(candidates.reshape(B, k, V), from_beam,
                                 tokens.reshape(B, k, -1), scores,
                                 lengths.reshape(B, k),
                                 finished.reshape(B, k)))
            if bool(finished.all()):
                break
    penalty = gnmt_length_penalty(lengths, length_penalty)
    normalised = (scores.reshape(-1) / penalty).reshape(B, k)
    best = normalised.argmax(dim=1) + first_beam[:, 0]
    return tokens[best, 1:]
