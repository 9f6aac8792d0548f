"""Generating target sequences from a trained encoder-decoder."""

from __future__ import annotations

import torch

from ._checks import check_positive_int


@torch.no_grad()
def greedy_decode(model, src, src_valid_lens=None, *, bos_id: int, max_len: int,
                  eos_id: int | None = None, use_cache: bool = True, return_weights: bool = False):
    """Pick the most likely next token, ``max_len`` times (or until every row emitted ``eos_id``).

    model: an :class:`~transformer_lib.model.EncoderDecoder` whose decoder has ``init_cache``.
    src ``(B, S)`` ids, src_valid_lens ``(B,)``.
    use_cache: feed one new token per step and reuse the cached keys/values (O(T) layer
    calls), or re-run the decoder on the whole prefix every step (O(T^2)); both give the same
    tokens.  Returns ``(B, n)`` ids, n <= max_len, without the leading ``bos_id``; after a
    row's ``eos_id`` it holds ``eos_id`` again.  With ``return_weights``, also the attention
    weights behind them (see :func:`attention_weights_of`).
    """
    check_positive_int("max_len", max_len)
    was_training = model.training
    model.eval()
    try:
        enc_outputs = model.encoder(src, src_valid_lens)
        B = src.shape[0]
        tokens = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)
        finished = torch.zeros(B, dtype=torch.bool, device=src.device)
        cache = model.decoder.init_cache() if use_cache else None
        for _ in range(max_len):
            step_input = tokens[:, -1:] if use_cache else tokens
            logits = model.decoder(step_input, enc_outputs, src_valid_lens, cache=cache)
            next_token = logits[:, -1].argmax(dim=-1)  # (B,)
            if eos_id is not None:
                next_token = next_token.masked_fill(finished, eos_id)
                finished |= next_token == eos_id
            tokens = torch.cat([tokens, next_token[:, None]], dim=1)
            if eos_id is not None and bool(finished.all()):
                break
        if return_weights:
            return tokens[:, 1:], attention_weights_of(model, src, src_valid_lens, tokens[:, 1:], bos_id=bos_id)
        return tokens[:, 1:]
    finally:
        model.train(was_training)


def _repeat_memory(memory, repeats: int):
    """Repeat every batch row of the encoder's output ``repeats`` times (one per beam)."""
    return memory.repeat_interleave(repeats, dim=0)


@torch.no_grad()
def beam_search(model, src, src_valid_lens=None, *, bos_id: int, eos_id: int, max_len: int,
                beam_size: int = 4, length_penalty: float = 0.6, return_weights: bool = False):
    """Keep the ``beam_size`` most probable prefixes at every step; return the best finished one.

    Candidates are ranked by total log-probability while searching; the final choice divides
    it by the GNMT length penalty ``((5 + length) / 6) ** length_penalty`` (Wu et al. 2016),
    so that longer translations are not lost merely for having more factors below 1.
    Batched (``B`` sources x ``beam_size`` beams in one decoder call) and key/value-cached.
    With ``beam_size=1`` this is greedy decoding.  Returns ``(B, n)`` ids without ``bos_id``;
    after ``eos_id`` a row holds ``eos_id`` again.  With ``return_weights``, also the attention
    weights behind them (see :func:`attention_weights_of`).
    """
    check_positive_int("max_len", max_len)
    check_positive_int("beam_size", beam_size)
    was_training = model.training
    model.eval()
    try:
        B, k = src.shape[0], beam_size
        memory = _repeat_memory(model.encoder(src, src_valid_lens), k)
        lens = None if src_valid_lens is None else src_valid_lens.repeat_interleave(k)
        cache = model.decoder.init_cache()
        tokens = torch.full((B * k, 1), bos_id, dtype=torch.long, device=src.device)
        scores = torch.zeros(B, k, device=src.device)
        scores[:, 1:] = float("-inf")  # all beams start equal: keep one until the first step
        finished = torch.zeros(B * k, dtype=torch.bool, device=src.device)
        lengths = torch.zeros(B * k, device=src.device)
        for _ in range(max_len):
            logits = model.decoder(tokens[:, -1:], memory, lens, cache=cache)[:, -1]
            log_probs = torch.log_softmax(logits.float(), dim=-1)  # (B*k, V)
            V = log_probs.shape[-1]
            # A finished beam may only repeat eos, at no cost, so its score stays fixed.
            log_probs[finished] = float("-inf")
            log_probs[finished, eos_id] = 0.0
            candidates = (scores.reshape(B * k, 1) + log_probs).reshape(B, k * V)
            scores, flat_choice = candidates.topk(k, dim=1)  # (B, k)
            parent = (torch.arange(B, device=src.device)[:, None] * k + flat_choice // V).reshape(-1)
            next_token = (flat_choice % V).reshape(-1)
            tokens = torch.cat([tokens[parent], next_token[:, None]], dim=1)
            cache.reorder(parent)
            lengths = lengths[parent] + (~finished[parent]).float()
            finished = finished[parent] | (next_token == eos_id)
            if bool(finished.all()):
                break
        normalised = scores.reshape(-1) / ((5.0 + lengths) / 6.0) ** length_penalty
        best = normalised.reshape(B, k).argmax(dim=1) + torch.arange(B, device=src.device) * k
        if return_weights:
            return tokens[best, 1:], attention_weights_of(model, src, src_valid_lens, tokens[best, 1:],
                                                          bos_id=bos_id)
        return tokens[best, 1:]
    finally:
        model.train(was_training)


@torch.no_grad()
def attention_weights_of(model, src, src_valid_lens, output_ids, *, bos_id: int):
    """The attention weights behind a decoded output, for plotting.

    Re-runs the decoder with teacher forcing on ``bos_id + output_ids``; because the cache
    reproduces the full-sequence computation exactly, these are the weights the model used
    while decoding.  Returns the dict of :meth:`EncoderDecoder.forward` with
    ``return_weights=True``.
    """
    was_training = model.training
    model.eval()
    try:
        bos = torch.full((output_ids.shape[0], 1), bos_id, dtype=torch.long, device=output_ids.device)
        _, weights = model(src, torch.cat([bos, output_ids], dim=1), src_valid_lens, return_weights=True)
        return weights
    finally:
        model.train(was_training)
