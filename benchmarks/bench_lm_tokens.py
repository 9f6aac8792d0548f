"""Characters or subwords for the GPT chapter's language model: the same
GPT block trained for the same seconds on the English side of the pairs
(the chapter's sizes and rate, the linear decay reaching zero at the end
of the time budget),
once a character at a time and once in the everyday model's byte-level
BPE pieces, both scored in bits per *character* of the same validation
sentences.

Both read the sentences of ``character_text`` (the same split), each
sentence followed by ``<eos>``.  A model's bits per character is its
summed loss over the validation stream, in bits, divided by the number of
characters the stream stands for (every sentence's characters, plus one
for its ``<eos>``), so a model that predicts three characters with one
piece is charged for all three.  The pieces' windows hold as many
positions as the characters' (``--window``): they cover more text.

For each tokenizer and seed the script prints the vocabulary size, the
parameters, the training steps done in the budget, the characters of text
those steps read, the seconds, and the validation bits per character;
last, the mean over the seeds.  The host's 2048² matrix-product GFLOP/s
(bf16 where it trains in bf16) is printed first.

Run:  python benchmarks/bench_lm_tokens.py [--seconds 60] [--seeds 0 1 2]
      [--window 64] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import statistics

import torch

from transformer_lib.model import LanguageModel, LanguageModelConfig
from transformer_lib.translation import (RECIPES, TextWindows, TrainConfig,
                                         autocast_dtype, character_text,
                                         fit, load_everyday, pick_device,
                                         seed_everything, window_bits)
from transformer_lib.translation.data import Vocab, load_raw_pairs
from transformer_lib.translation.provenance import cpu_name, matmul_gflops

SIZES = dict(num_hiddens=128, ffn_num_hiddens=512, num_heads=4, num_blks=4)
BATCH, LR = 64, 3e-3


def piece_stream(sentences, vocab) -> torch.Tensor:
    ids = [i for s in sentences for i in vocab.encode(s) + [Vocab.eos]]
    return torch.tensor(ids, dtype=torch.long)


def summed_bits(model, loader) -> float:
    """The loss in bits summed over every scored id of ``loader``."""
    return window_bits(model, loader).sum().item() * loader.window


def run(name, train_ids, val_ids, vocab_size, val_chars, args, seed):
    steps_guess = 100_000            # the time budget ends the run first
    train = TextWindows(train_ids, args.window, BATCH,
                        batches_per_epoch=steps_guess, seed=seed)
    val = TextWindows(val_ids, args.window, BATCH)
    config = TrainConfig(epochs=1, max_seconds=args.seconds, lr=LR,
                         warmup_steps=60, seed=seed, label_smoothing=0.0)
    seed_everything(seed)
    model = LanguageModel(LanguageModelConfig(
        vocab_size, max_len=args.window, **SIZES).gpt())
    history = fit(model, train, None, config, progress=False)
    # the ids with a label in a whole window, and the characters they
    # stand for (for pieces, at the stream's mean characters a piece)
    scored = (len(val_ids) - 1) // args.window * args.window
    chars = val_chars * scored / (len(val_ids) - 1)
    bits = summed_bits(model, val) / chars
    read = history.steps_done * BATCH * args.window * (
        1 if name == "characters" else val_chars / (len(val_ids) - 1))
    params = model.num_parameters()
    print(f"{name:<11} {seed:>4} {vocab_size:>6,} {params:>10,}"
          f" {history.steps_done:>6,} {read:>12,.0f} "
          f"{history.train_seconds:>7.1f} {bits:>8.3f}", flush=True)
    return bits


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()

    device = pick_device()
    dtype = autocast_dtype("auto", device)
    print(f"{cpu_name()}: {matmul_gflops(dtype or torch.float32):,.0f} "
          f"GFLOP/s (2048² products, {dtype or torch.float32})")
    raw = load_raw_pairs("full", args.data_dir)
    _, pieces = load_everyday()
    print(f"{'tokenizer':<11} {'seed':>4} {'vocab':>6} {'parameters':>10} "
          f"{'steps':>6} {'chars read':>12} {'seconds':>7} {'bits/ch':>8}")
    results = {"characters": [], "BPE pieces": []}
    for seed in args.seeds:
        text = character_text([en for en, _ in raw], seed=0)
        val_chars = len(text.val) - 1      # every id is a character or <eos>
        results["characters"].append(run(
            "characters", text.train, text.val, len(text.vocab), val_chars,
            args, seed))
        results["BPE pieces"].append(run(
            "BPE pieces", piece_stream(text.train_sentences, pieces),
            piece_stream(text.val_sentences, pieces), len(pieces),
            val_chars, args, seed))
    for name, values in results.items():
        print(f"{name}: mean {statistics.mean(values):.3f} bits per "
              f"character over seeds {args.seeds}")
    print(f"(the everyday recipe's vocabulary: "
          f"{RECIPES['everyday'].vocab_size:,} pieces)")


if __name__ == "__main__":
    main()
