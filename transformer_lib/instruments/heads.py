"""What each head of a trained encoder-decoder does, measured: its
*confidence* (Voita et al., 2019), the largest weight it gives, on
average.  (Switching heads off is
:func:`~transformer_lib.model.intervene`.)"""

from __future__ import annotations

import torch

from ..translation.data import Vocab


@torch.no_grad()
def head_confidence(model, loader) -> dict[tuple[str, int, int], float]:
    """Each head's largest attention weight, averaged over the real
    queries of every batch of ``loader`` (teacher-forced passes in
    evaluation mode).  As Voita et al. do, the weight on the source's
    ``<eos>`` is left out (a head with nothing to do may park its weight
    there).

    model:  an encoder-decoder with ``attention_maps`` (a Transformer).
    loader: batches with ``src`` ``(B, S)``, ``tgt_in`` ``(B, T)`` and
            ``src_valid_lens`` ``(B,)`` (a :class:`~.data.BatchLoader`).
    Returns ``{(kind, block, head): confidence}``, each at most 1: near
    1 for a head that puts its weight on one word, near 1/S for one that
    spreads it evenly.
    """
    if not hasattr(model, "attention_maps"):
        raise TypeError(f"model must have attention_maps (a Transformer), "
                        f"got {type(model).__name__}")
    device = next(model.parameters()).device
    total, count = {}, {}
    for batch in loader:
        src, tgt = batch.src.to(device), batch.tgt_in.to(device)
        maps = model.attention_maps(src, tgt,
                                    batch.src_valid_lens.to(device))
        real_src, real_tgt = src != Vocab.pad, tgt != Vocab.pad
        not_eos = real_src & (src != Vocab.eos)                # (B, S)
        for kind, blocks in maps.items():
            queries = real_src if kind == "encoder_self" else real_tgt
            keys = real_tgt if kind == "decoder_self" else not_eos
            for block, weights in enumerate(blocks):     # (B, h, Q, K)
                kept = weights.masked_fill(~keys[:, None, None], 0)
                largest = kept.amax(-1).transpose(0, 1)    # (h, B, Q)
                for head, values in enumerate(largest):
                    key = (kind, block, head)
                    total[key] = total.get(key, 0.0) + float(
                        values[queries].sum())
                    count[key] = count.get(key, 0) + int(queries.sum())
    if not count:
        raise ValueError("loader gave no batches")
    return {key: total[key] / count[key] for key in total}
