"""What tests/test_distributed.py runs under torchrun (and, for comparison, alone): fit on a tiny
reversal task, then rank 0 saves the weights and the history.

    python ddp_worker.py OUT SEED [--state FILE] [--stop-after-epoch K] [--resume]
"""

import argparse
import random

import torch

import transformer_lib as tl
from transformer_lib.translation import BatchLoader, TrainConfig, Vocab, fit, reversal_pairs
from transformer_lib.translation.distributed import finish_distributed, init_distributed


class Stop(Exception):
    pass


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("seed", type=int)
    parser.add_argument("--state")
    parser.add_argument("--stop-after-epoch", type=int, default=0)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    vocab = Vocab([list("0123456789")])
    pairs = reversal_pairs(96, random.Random(args.seed), 2, 9)
    # a resumed run starts from other weights: it must take the stopped run's from the state
    torch.manual_seed(args.seed + (1000 if args.resume else 0))
    V = len(vocab)
    model = tl.Transformer(tl.TransformerConfig(V, V, num_hiddens=32, ffn_num_hiddens=64,
                                                num_heads=4, num_enc_blks=1, num_dec_blks=1,
                                                dropout=0.0, max_len=32))
    ranks = init_distributed(torch.device("cpu"))
    train = BatchLoader(pairs, vocab, vocab, 16, seed=args.seed)
    val = BatchLoader(pairs[:16], vocab, vocab, 16, shuffle=False)

    def stop(history):  # an interruption right after an epoch's checkpoint
        if args.stop_after_epoch and len(history.validation) == args.stop_after_epoch:
            raise Stop

    config = TrainConfig(epochs=3, lr=3e-3, warmup_steps=3, device="cpu", precision="float32",
                         log_every=4)
    try:
        history = fit(model, train, val, config, progress=False, ranks=ranks, callback=stop,
                      checkpoint=args.state, resume=args.resume)
    except Stop:
        finish_distributed(ranks)
        return
    if ranks.is_main:
        torch.save(dict(weights=model.state_dict(), losses=history.train_loss,
                        val=[v.loss for v in history.validation],
                        tokens=history.target_tokens, world_size=ranks.world_size), args.out)
    finish_distributed(ranks)


if __name__ == "__main__":
    main()
