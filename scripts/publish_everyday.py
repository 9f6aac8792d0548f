"""Publish the everyday recipe's trained model (the second half of
``make everyday``): measure its held-out BLEU and its bytes for the page
with float32, float16 and int8 weights, keep the smallest whose greedy
BLEU stays within ``TOLERANCE`` of float32's, and write the package's
``transformer_lib/translation/everyday/``: ``model.pt``, ``log.json``
(the training run's record, with these measurements) and ``SHA256SUMS``.

Run:  python scripts/publish_everyday.py BUILD DEST   (``make everyday``:
BUILD _build/everyday, DEST transformer_lib/translation/everyday)
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

TOLERANCE = 0.5   # BLEU points (multi-reference, greedy) below float32's
FORMATS = ("int8", "float16", "float32")  # smallest first


def main(build: Path, dest: Path) -> int:
    from transformer_lib.instruments.export import export_translator
    from transformer_lib.translation.checkpoint import (load_checkpoint,
                                                        save_checkpoint)
    from transformer_lib.translation.provenance import write_record
    from transformer_lib.translation.published import (CHECKSUMS,
                                                       EVERYDAY_FILES,
                                                       sha256_of)
    from transformer_lib.translation.recipes import RECIPES
    from transformer_lib.translation.translate import evaluate_bleu

    model, vocab, _, extra = load_checkpoint(build / "model.pt")
    record = json.loads((build / "log.json").read_text())
    if extra.get("recipe") != "everyday":
        raise ValueError(f"{build / 'model.pt'} is not the everyday "
                         f"recipe's model: {extra}")
    recipe = RECIPES["everyday"]
    done = record["history"]["epochs_done"]
    if done < recipe.train.epochs:   # e.g. stopped by --max-seconds
        raise ValueError(f"{build / 'log.json'}: the run stopped after "
                         f"{done:.2f} of the recipe's {recipe.train.epochs} "
                         f"epochs; publish a whole run")
    split, split_vocab, _ = recipe.load_data()
    if split_vocab.to_json() != vocab.to_json():
        raise ValueError("the recipe's vocabulary differs from the "
                         "checkpoint's")
    measured = {}
    for name in FORMATS:
        with tempfile.TemporaryDirectory() as tmp:
            exported = export_translator(model, vocab, vocab, tmp,
                                         weights=name)
            gz = exported.gzip_bytes
        # the model that the page's files compute: the weights rounded
        score = evaluate_bleu(exported.model, split.test, vocab, vocab)
        measured[name] = {"greedy_bleu_single": round(score.single, 2),
                          "greedy_bleu_multi": round(score.multi, 2),
                          "page_bytes": exported.total_bytes,
                          "page_bytes_gzip": gz}
        print(f"{name:<8} greedy BLEU {score.single:5.2f} single, "
              f"{score.multi:5.2f} multi; the page's model files "
              f"{exported.total_bytes / 1e6:5.2f} MB "
              f"({gz / 1e6:5.2f} MB gzip)")
    best = measured["float32"]["greedy_bleu_multi"]
    chosen = next(name for name in FORMATS
                  if measured[name]["greedy_bleu_multi"] >= best - TOLERANCE)
    if chosen == "float16":
        chosen = "float32"  # a checkpoint holds float32 or int8
    print(f"chosen: {chosen} (the smallest within {TOLERANCE} BLEU of "
          f"float32)")
    record["publish"] = {"test_sources": len(split.test),
                         "tolerance_bleu": TOLERANCE,
                         "weights": chosen, "measured": measured}
    dest.mkdir(parents=True, exist_ok=True)
    save_checkpoint(dest / "model.pt", model, vocab, vocab, extra,
                    weights=chosen)
    write_record(dest / "log.json", record)
    (dest / CHECKSUMS).write_text("".join(
        f"{sha256_of(dest / name)}  {name}\n" for name in EVERYDAY_FILES))
    for name in (*EVERYDAY_FILES, CHECKSUMS):
        print(f"wrote {dest / name} ({(dest / name).stat().st_size:,} "
              f"bytes)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
