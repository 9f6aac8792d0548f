"""Train our Transformer and a peer built from torch.nn.Transformer on the
same data, with the same CPU time budget, in one run; print held-out
sacreBLEU, throughput and memory.

Run (about 10 minutes on 2 cores; the data folder holds fra-eng/fra.txt):

    python benchmarks/bench_translate.py --data-dir ../shared/data

Both models see the same grouped split of the `basic` subset (500 test
sources, every French translation of a test source kept as a reference),
the same vocabularies and the same length-bucketed batches, and both train
through transformer_lib's `fit` in its default precision (bf16 autocast on
a CPU with native bf16).  The peer is the configuration the issue fixes:
d=256, 2+2 layers, 4 heads, FFN 1024, dropout 0.1, batch 128, AdamW 5e-4
with 400 warm-up steps then constant, label smoothing 0.1, greedy
decoding.  Ours is the `basic` recipe of
transformer_lib.translation.recipes (a linear decay of the learning rate
to zero at the end of the budget), scored with greedy decoding and with
beam search.  A third measurement trains ours *at
the peer's size and settings* for a fixed number of steps, alternating
with the peer, to compare raw throughput.
"""

from __future__ import annotations

import argparse
import math
import resource
import time
from dataclasses import replace

import torch
from torch import nn

from transformer_lib import EncoderDecoder, Transformer, TransformerConfig
from transformer_lib.translation.data import BatchLoader
from transformer_lib.model.positional import sinusoidal_encoding
from transformer_lib.translation.recipes import RECIPES
from transformer_lib.translation.training import (TrainConfig, autocast,
                                      autocast_dtype, fit, pick_device,
                                      seed_everything, sequence_loss)
from transformer_lib.translation.translate import evaluate_bleu

MAX_LEN = 64


class PeerEncoder(nn.Module):
    def __init__(self, vocab_size, d, encoder: nn.TransformerEncoder):
        super().__init__()
        self.vocab_size, self.d = vocab_size, d
        self.embedding, self.layers = nn.Embedding(vocab_size, d), encoder
        self.register_buffer("pe", sinusoidal_encoding(MAX_LEN, d),
                             persistent=False)

    def encode(self, X, valid_lens):
        positions = torch.arange(X.shape[1], device=X.device)
        pad = positions[None, :] >= valid_lens[:, None]
        H = self.embedding(X) * math.sqrt(self.d) + self.pe[:X.shape[1]]
        return self.layers(H, src_key_padding_mask=pad)


class PeerDecoder(nn.Module):
    def __init__(self, vocab_size, d, decoder: nn.TransformerDecoder):
        super().__init__()
        self.vocab_size, self.d = vocab_size, d
        self.embedding, self.layers = nn.Embedding(vocab_size, d), decoder
        self.dense = nn.Linear(d, vocab_size)
        self.register_buffer("pe", sinusoidal_encoding(MAX_LEN, d),
                             persistent=False)

    def decode(self, X, memory, valid_lens, cache=None):
        if cache is not None:
            raise ValueError("the torch peer has no key/value cache")
        T, S = X.shape[1], memory.shape[1]
        positions = torch.arange(S, device=X.device)
        pad = positions[None, :] >= valid_lens[:, None]
        causal = nn.Transformer.generate_square_subsequent_mask(
            T, device=X.device)
        H = self.embedding(X) * math.sqrt(self.d) + self.pe[:T]
        return self.dense(self.layers(H, memory, tgt_mask=causal,
                                      tgt_is_causal=True,
                                      memory_key_padding_mask=pad))


def torch_peer(src_vocab_size, tgt_vocab_size, d=256, heads=4, layers=2,
               ffn=1024, dropout=0.1):
    """An encoder-decoder whose layers are torch.nn.Transformer's own."""
    core = nn.Transformer(d, heads, layers, layers, ffn, dropout,
                          batch_first=True)
    return EncoderDecoder(PeerEncoder(src_vocab_size, d, core.encoder),
                          PeerDecoder(tgt_vocab_size, d, core.decoder))


def throughput(model, loader, steps, lr=5e-4):
    """Target tokens per second over ``steps`` training steps (after 3
    warm-up steps), in the library's default precision."""
    device = pick_device("cpu")
    dtype = autocast_dtype("auto", device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    batches = iter(loader)
    tokens, seconds = 0, 0.0
    for i in range(steps + 3):
        batch = next(batches)
        start = time.perf_counter()
        with autocast(device, dtype):
            logits = model.logits(batch.src, batch.tgt_in,
                                  batch.src_valid_lens)
        loss = sequence_loss(logits, batch.tgt_out, label_smoothing=0.1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if i >= 3:
            seconds += time.perf_counter() - start
            tokens += batch.num_target_tokens
    return tokens / seconds


def parse_sizes(items):
    """``["num_enc_blks=3", ...]`` -> ``{"num_enc_blks": 3, ...}``."""
    sizes = {}
    for item in items or ():
        key, _, value = item.partition("=")
        sizes[key] = float(value) if "." in value else int(value)
    return sizes


def main():
    ap = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default=None,
                    help="folder with fra-eng/fra.txt (default: README)")
    ap.add_argument("--seconds", type=float, default=240.0,
                    help="training budget per model")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--throughput-steps", type=int, default=40)
    ap.add_argument("--skip-peer", action="store_true",
                    help="train only ours (for tuning)")
    ap.add_argument("--ours-lr", type=float,
                    help="override the basic recipe's learning rate")
    ap.add_argument("--ours-warmup", type=int,
                    help="override the basic recipe's warm-up steps")
    ap.add_argument("--ours-batch-size", type=int,
                    help="override the basic recipe's batch size")
    ap.add_argument("--ours-model", nargs="*", metavar="FIELD=VALUE",
                    help="override the basic recipe's model sizes")
    ap.add_argument("--ours-beam", type=int, default=4,
                    help="beam size of the beam-search row")
    args = ap.parse_args()

    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    recipe = RECIPES["basic"]
    split, src_vocab, tgt_vocab = recipe.load_data(args.data_dir)
    refs = sum(len(g.refs) for g in split.test)
    print(f"basic: train {len(split.train)}, val {len(split.val)}, test "
          f"{len(split.test)} sources ({refs} references); vocab "
          f"{len(src_vocab)}/{len(tgt_vocab)}")
    rows = []

    def run(name, model, batch_size, train_config, beam):
        loader = BatchLoader(split.train, src_vocab, tgt_vocab, batch_size,
                             seed=0)
        val = BatchLoader(split.val, src_vocab, tgt_vocab, 256,
                          shuffle=False)
        history = fit(model, loader, val, train_config, progress=False)
        cache = hasattr(model.decoder, "init_cache")
        greedy = evaluate_bleu(model, split.test, src_vocab, tgt_vocab,
                               use_cache=cache)
        row = dict(name=name, params=model.num_parameters(),
                   epochs=history.epochs_done,
                   seconds=history.train_seconds,
                   tok_s=history.tokens_per_second,
                   val=history.validation[-1].loss, single=greedy.single,
                   multi=greedy.multi, beam="-")
        if beam > 1:
            b = evaluate_bleu(model, split.test, src_vocab, tgt_vocab,
                              beam_size=beam)
            row["beam"] = f"k={beam}: {b.single:.1f} / {b.multi:.1f}"
        rows.append(row)
        print(row, f"({history.precision})", flush=True)
        for g, h in list(zip(split.test, greedy.hypotheses))[:3]:
            print("   ", " ".join(g.src), "=>", h)

    if not args.skip_peer:
        seed_everything(0)
        peer = torch_peer(len(src_vocab), len(tgt_vocab))
        run("torch peer", peer, args.batch_size,
            TrainConfig(epochs=0, max_seconds=args.seconds, lr=5e-4,
                        warmup_steps=400, schedule="constant",
                        label_smoothing=0.1), beam=1)
    overrides = dict(lr=args.ours_lr, warmup_steps=args.ours_warmup)
    overrides = {k: v for k, v in overrides.items() if v}
    train_config = replace(recipe.train, epochs=0, max_seconds=args.seconds,
                           **overrides)
    sizes = {**recipe.model, **parse_sizes(args.ours_model)}
    seed_everything(0)
    ours = Transformer(TransformerConfig(len(src_vocab), len(tgt_vocab),
                                         **sizes))
    print("ours:", sizes, train_config)
    run("ours", ours, args.ours_batch_size or recipe.batch_size,
        train_config, beam=args.ours_beam)

    tput = {}
    if not args.skip_peer:
        loader = BatchLoader(split.train, src_vocab, tgt_vocab,
                             args.batch_size, seed=1)
        peer_size = TransformerConfig(len(src_vocab), len(tgt_vocab), 256,
                                      1024, 4, 2, 2, 0.1, max_len=MAX_LEN)
        makers = {"ours": lambda: Transformer(peer_size),
                  "torch peer": lambda: torch_peer(len(src_vocab),
                                                   len(tgt_vocab))}
        for rep in range(2):  # alternate, so that machine noise hits both
            for name, make in makers.items():
                seed_everything(rep)
                tput.setdefault(name, []).append(
                    throughput(make(), loader, args.throughput_steps))
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    print()
    print(f"{'model':<11} {'params':>9} {'epochs':>6} {'train s':>7} "
          f"{'tok/s':>6} {'val':>6} {'1-ref':>5} {'multi':>5} "
          f"{'beam: 1-ref / multi':>20}")
    for r in rows:
        print(f"{r['name']:<11} {r['params']:>9,} {r['epochs']:>6.2f} "
              f"{r['seconds']:>7.0f} {r['tok_s']:>6.0f} {r['val']:>6.3f} "
              f"{r['single']:>5.1f} {r['multi']:>5.1f} {r['beam']:>20}")
    if tput:
        a, b = sum(tput["ours"]) / 2, sum(tput["torch peer"]) / 2
        print(f"\nthroughput at the peer's size (d=256, 2+2, FFN 1024), "
              f"target tokens/s: ours {a:.0f}, torch peer {b:.0f}, "
              f"ratio {a / b:.2f}")
    print(f"peak resident memory of this process: {peak_mb:.0f} MB")


if __name__ == "__main__":
    main()
