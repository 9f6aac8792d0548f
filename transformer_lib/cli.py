"""The command line: ``python -m transformer_lib train | translate |
evaluate | doctor``, installed as ``transformer-lib`` too.  ``translate``
and ``evaluate`` use the book's published everyday model unless
``--checkpoint`` names another."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

from .translation.download import DATA_DIR_ENV


PUBLISHED_HELP = ("a checkpoint that `train` wrote (default: the book's "
                  "published everyday model, shipped with the package)")


def _add_data_args(p):
    p.add_argument("--data-dir", default=None,
                   help=f"folder holding fra-eng/fra.txt (default: "
                        f"${DATA_DIR_ENV}, then the user cache, then a "
                        f"download from d2l's data hub)")


def build_parser(prog: str = "python -m transformer_lib"
                 ) -> argparse.ArgumentParser:
    from .translation.recipes import RECIPES
    from .translation.training import PRECISIONS

    parser = argparse.ArgumentParser(
        prog=prog,
        description="Train, use and evaluate English-to-French "
                    "translators.")
    sub = parser.add_subparsers(
        dest="command", required=True,
        metavar="{train,translate,evaluate,doctor}")

    t = sub.add_parser("train", help="train a model and save a checkpoint",
                       description="Train on a named recipe (data subset + "
                                   "model + schedule).  Started with "
                                   "`torchrun --nproc_per_node=N -m "
                                   "transformer_lib train ...`, N processes "
                                   "share every batch (DDP: gloo on a CPU, "
                                   "nccl on GPUs); rank 0 prints and saves.")
    t.add_argument("--recipe", choices=sorted(RECIPES), default="basic",
                   help="d2l: d2l's demo; basic: the CPU recipe; "
                        "everyday: all pairs in subwords (the book's "
                        "published model); full: all pairs, for a GPU")
    t.add_argument("--model", choices=("transformer", "gru"),
                   default="transformer")
    t.add_argument("--out", required=True, help="checkpoint path to write")
    t.add_argument("--epochs", type=int,
                   help="override the recipe's number of epochs (0: none)")
    t.add_argument("--max-seconds", type=float,
                   help="override the recipe's time budget (the linear "
                        "decay then follows the epochs or the clock, "
                        "whichever is further along)")
    t.add_argument("--batch-size", type=int)
    t.add_argument("--lr", type=float)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--device",
                   help="cuda, mps or cpu (default: the best available)")
    t.add_argument("--precision", choices=PRECISIONS,
                   help="matrix products in float32, or bf16/fp16 autocast "
                        "(default auto: bf16 on a GPU or a CPU that has "
                        "it natively, else float32)")
    t.add_argument("--resume", action="store_true",
                   help="go on from the state that an interrupted run with "
                        "the same options saved after its last epoch "
                        "(OUT.state)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    # "--record", not "--log": torchrun reads an abbreviation of its own
    # options anywhere on its command line, and --log is one (--log-dir)
    t.add_argument("--record", "--log", metavar="FILE", dest="record",
                   help="also write a JSON record of the run: command, "
                        "versions, machine and its matrix-product speed, "
                        "the losses (--log: the same, except under "
                        "torchrun)")
    _add_data_args(t)

    r = sub.add_parser("translate",
                       help="translate English sentences into French")
    r.add_argument("--checkpoint", help=PUBLISHED_HELP)
    r.add_argument("--beam", type=int, default=1,
                   help="beam size (1: greedy)")
    r.add_argument("sentences", nargs="*",
                   help="sentences to translate (default: one per line on "
                        "stdin)")

    d = sub.add_parser("doctor",
                       help="check this set-up: versions, device, widgets, "
                            "data")
    _add_data_args(d)

    e = sub.add_parser("evaluate",
                       help="corpus BLEU of a model on its held-out split")
    e.add_argument("--checkpoint", help=PUBLISHED_HELP)
    e.add_argument("--beam", type=int, default=4,
                   help="beam size for the beam-search row")
    _add_data_args(e)
    return parser


def cmd_train(args) -> int:
    from .translation.checkpoint import save_checkpoint
    from .translation.data import BatchLoader
    from .model import Transformer, TransformerConfig
    from .translation.recipes import RECIPES
    from .translation.distributed import (finish_distributed,
                                          init_distributed, launcher)
    from .translation.rnn import GRUConfig, GRUSeq2Seq
    from .translation.training import fit, pick_device, seed_everything
    from .translation.translate import evaluate_bleu
    from .translation.provenance import machine_record, write_training_log

    recipe = RECIPES[args.recipe]
    changes = dict(epochs=args.epochs, max_seconds=args.max_seconds,
                   lr=args.lr, seed=args.seed, device=args.device,
                   precision=args.precision)
    recipe = recipe.with_train(**{k: v for k, v in changes.items()
                                  if v is not None})
    if args.epochs is None:  # the recipe's epochs for this precision
        recipe = recipe.for_precision()
    if args.batch_size:
        recipe = replace(recipe, batch_size=args.batch_size)
    # under torchrun: one of several processes, each with its share of
    # every batch; rank 0 alone prints, saves and evaluates
    ranks = init_distributed(pick_device(recipe.train.device))
    say = print if ranks.is_main else (lambda *args, **kwargs: None)
    if args.record and ranks.is_main:  # measured before training loads it
        machine = machine_record(pick_device(recipe.train.device))
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    split, src_vocab, tgt_vocab = recipe.load_data(args.data_dir)
    say(f"data: {recipe.subset}, {len(split.train)} training pairs, "
          f"{len(split.val)} validation pairs, {len(split.test)} test "
          f"sources; vocabularies {len(src_vocab)} / {len(tgt_vocab)}")
    seed_everything(recipe.train.seed)
    sizes = (len(src_vocab), len(tgt_vocab))
    if args.model == "gru":
        model = GRUSeq2Seq(GRUConfig(*sizes, **recipe.gru))
    else:
        model = Transformer(TransformerConfig(*sizes, **recipe.model))
    if ranks.several:
        size = (f"{recipe.max_tokens} tokens" if recipe.max_tokens
                else f"{recipe.batch_size} pairs")
        say(f"processes: {ranks.world_size}, each with 1/{ranks.world_size} "
            f"of every batch of up to {size}")
    say(f"model: {type(model).__name__}, {model.num_parameters():,} "
          f"parameters")
    train = BatchLoader(split.train, src_vocab, tgt_vocab, recipe.batch_size,
                        seed=recipe.train.seed, max_tokens=recipe.max_tokens)
    val = BatchLoader(split.val, src_vocab, tgt_vocab, 256, shuffle=False)
    state = Path(f"{args.out}.state")  # fit's state after each epoch
    if args.resume and not state.is_file():
        raise ValueError(f"--resume: there is no {state} to go on from (a "
                         f"run with --out {args.out} writes it after each "
                         f"epoch)")
    try:
        history = fit(model, train, val, recipe.train, checkpoint=state,
                      resume=args.resume, progress=not args.quiet,
                      ranks=ranks)
    except KeyboardInterrupt:
        print(f"\ninterrupted: {state} holds the state after the last "
              f"complete epoch; to go on, run the same command with "
              f"--resume", file=sys.stderr)
        return 130
    finish_distributed(ranks)
    if not ranks.is_main:
        return 0
    print(f"trained {history.epochs_done:.2f} epochs in "
          f"{history.train_seconds:.0f} s ({history.tokens_per_second:.0f} "
          f"target tokens/s, {history.precision}); validation loss "
          f"{history.validation[-1].loss:.3f}")
    extra = dict(recipe=args.recipe, subset=recipe.subset,
                 split_seed=recipe.split_seed,
                 num_test_sources=recipe.num_test_sources,
                 num_val_sources=recipe.num_val_sources,
                 min_freq=recipe.min_freq)
    path = save_checkpoint(args.out, model.cpu(), src_vocab, tgt_vocab,
                           extra)
    if args.record:
        write_training_log(args.record, argv=args.argv, recipe=args.recipe,
                           seed=recipe.train.seed, machine=machine,
                           history=history, started=started,
                           parameters=model.num_parameters(),
                           processes=ranks.world_size, launcher=launcher())
    result = evaluate_bleu(model, split.test, src_vocab, tgt_vocab)
    print(f"held-out BLEU (greedy): {result.single:.1f} single-reference, "
          f"{result.multi:.1f} multi-reference")
    print(f"saved {path}")
    return 0


def load_model(checkpoint):
    """``(model, src_vocab, tgt_vocab, extra)`` of ``checkpoint``, or of
    the published everyday model (its checksums checked) when it is None;
    which one it is goes to standard error."""
    from .translation.checkpoint import load_checkpoint
    from .translation.published import everyday_checkpoint

    if checkpoint is None:
        checkpoint = everyday_checkpoint()
        print(f"model: the published everyday model ({checkpoint}); "
              f"--checkpoint names another", file=sys.stderr)
    return load_checkpoint(checkpoint)


def cmd_translate(args) -> int:
    from .translation.translate import translate

    model, src_vocab, tgt_vocab, _ = load_model(args.checkpoint)
    sentences = args.sentences or [line.rstrip("\n") for line in sys.stdin]
    if not sentences:
        raise ValueError("no sentence given: pass sentences as arguments or "
                         "on standard input")
    results = translate(model, sentences, src_vocab, tgt_vocab,
                        beam_size=args.beam)
    for result in results:
        if result.unknown:
            print(f"notice: unknown words read as <unk>: "
                  f"{', '.join(result.unknown)}", file=sys.stderr)
        print(result.text)
    return 0


def cmd_evaluate(args) -> int:
    from .translation.recipes import RECIPES
    from .translation.translate import held_out_bleu

    model, src_vocab, tgt_vocab, extra = load_model(args.checkpoint)
    if "recipe" not in extra:
        raise ValueError(f"checkpoint {args.checkpoint} does not say which "
                         f"data it was trained on")
    recipe = replace(RECIPES[extra["recipe"]],
                     split_seed=extra["split_seed"],
                     num_test_sources=extra["num_test_sources"],
                     num_val_sources=extra["num_val_sources"],
                     min_freq=extra["min_freq"])
    split, _, _ = recipe.load_data(args.data_dir)
    print(f"{'decoding':<12} {'single-ref':>10} {'multi-ref':>10}   "
          f"({len(split.test)} held-out sources)")
    scores = held_out_bleu(model, split.test, src_vocab, tgt_vocab,
                           beam_sizes=(1, args.beam))
    for name, score in scores.items():
        print(f"{name:<12} {score.single:>10.1f} {score.multi:>10.1f}")
    return 0


def cmd_doctor(args) -> int:
    from .instruments.checkup import doctor

    return 0 if doctor(args.data_dir) else 1


def main(argv=None, prog: str = "python -m transformer_lib") -> int:
    from .translation.checkpoint import CheckpointError
    from .translation.download import DataError

    args = build_parser(prog).parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for --record
    commands = {"train": cmd_train, "translate": cmd_translate,
                "evaluate": cmd_evaluate, "doctor": cmd_doctor}
    try:
        return commands[args.command](args)
    except (DataError, CheckpointError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


def console() -> None:
    """The installed command, ``transformer-lib``: the same as
    ``python -m transformer_lib``."""
    sys.exit(main(prog="transformer-lib"))
