"""Generating target sequences from a trained encoder-decoder."""

from __future__ import annotations

import torch

from ._checks import check_positive_int


@torch.no_grad()
def greedy_decode(model, src, src_valid_lens=None, *, bos_id: int, max_len: int,
                  eos_id: int | None = None, use_cache: bool = True):
    """Pick the most likely next token, ``max_len`` times (or until every row emitted ``eos_id``).

    model: an :class:`~transformer_lib.model.EncoderDecoder` whose decoder has ``init_cache``.
    src ``(B, S)`` ids, src_valid_lens ``(B,)``.
    use_cache: feed one new token per step and reuse the cached keys/values (O(T) layer
    calls), or re-run the decoder on the whole prefix every step (O(T^2)); both give the same
    tokens.  Returns ``(B, n)`` ids, n <= max_len, without the leading ``bos_id``; after a
    row's ``eos_id`` it holds ``eos_id`` again.
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
        return tokens[:, 1:]
    finally:
        model.train(was_training)
