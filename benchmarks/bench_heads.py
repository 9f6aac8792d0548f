"""What each head of the trained translator is worth (measured before it
went into chapter 9): held-out BLEU and validation loss with each
head switched off in turn (tl.intervene), heads removed in order of
importance (the pruning curve), and each head's confidence (Voita et al.,
2019: its mean largest weight, the <eos> key left out).

    .venv/bin/python benchmarks/bench_heads.py --data-dir ../shared/data

The model is chapter 8's, as the book build saves it
(_build/translator/exported.ckpt, float16-rounded weights).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

import transformer_lib as tl
from transformer_lib.translation.checkpoint import load_checkpoint
from transformer_lib.translation.data import BatchLoader
from transformer_lib.translation.recipes import RECIPES
from transformer_lib.translation.training import evaluate_loss
from transformer_lib.translation.translate import evaluate_bleu

ROOT = Path(__file__).resolve().parents[1]


def scores(model, test, val_loader, src_vocab, tgt_vocab, heads_off=()):
    """(greedy multi-reference BLEU on ``test``, validation loss) with
    heads off."""
    with tl.intervene(model, heads_off=heads_off):
        bleu = evaluate_bleu(model, test, src_vocab, tgt_vocab).multi
        loss = evaluate_loss(model, val_loader)
    return bleu, loss


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", type=Path,
                        default=ROOT / "_build" / "translator" /
                        "exported.ckpt")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    torch.set_grad_enabled(False)
    model, src_vocab, tgt_vocab, _ = load_checkpoint(args.checkpoint)
    split, data_src, data_tgt = RECIPES["basic"].load_data(args.data_dir)
    assert data_src.idx_to_token == src_vocab.idx_to_token
    assert data_tgt.idx_to_token == tgt_vocab.idx_to_token
    started = time.perf_counter()
    val_loader = BatchLoader(split.val, src_vocab, tgt_vocab, 256,
                             shuffle=False)

    def score(heads_off=()):
        return scores(model, split.test, val_loader, src_vocab, tgt_vocab,
                      heads_off)

    base_bleu, base_loss = score()
    print(f"all heads on: BLEU {base_bleu:.1f}, validation loss "
          f"{base_loss:.3f}")
    heads = [(kind, block, head)
             for kind, layers in model.attention_layers().items()
             for block, layer in enumerate(layers)
             for head in range(layer.num_heads)]
    one_off = {h: score([h]) for h in heads}
    trust = tl.head_confidence(model, val_loader)
    print(f"\n{'head off':<22} {'BLEU':>6} {'dBLEU':>6} {'loss':>6} "
          f"{'dloss':>6} {'conf.':>6}")
    for h in heads:
        bleu, loss = one_off[h]
        print(f"{str(h):<22} {bleu:6.1f} {bleu - base_bleu:+6.1f} "
              f"{loss:6.3f} {loss - base_loss:+6.3f} {trust[h]:6.2f}")
    drop = {h: base_loss - one_off[h][1] for h in heads}   # < 0: it mattered
    order = sorted(heads, key=lambda h: -drop[h])          # least first
    print("\npruning, least important first (by validation loss):")
    removed = []
    for h in order:
        removed.append(h)
        bleu, loss = score(removed)
        print(f"{len(removed):3d} off (last {str(h):<22}) BLEU {bleu:5.1f}"
              f"  loss {loss:.3f}")
    for kind in ("encoder_self", "decoder_self", "cross"):
        own = [h for h in heads if h[0] == kind]
        bleu, loss = score(own)
        print(f"all {len(own)} {kind} heads off: BLEU {bleu:.1f}, loss "
              f"{loss:.3f}")
    importance = np.array([-drop[h] for h in heads])
    conf = np.array([trust[h] for h in heads])
    ranks = [np.argsort(np.argsort(x)) for x in (importance, conf)]
    rho = np.corrcoef(*ranks)[0, 1]
    print(f"\nSpearman correlation, importance (loss increase) vs "
          f"confidence: {rho:.2f} over {len(heads)} heads")
    print(f"{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
