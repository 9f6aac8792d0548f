"""The published translator (transformer_lib/translation/everyday/): its files match their
checksums, fit in the budget and hold the everyday recipe's model and vocabulary; its log records
the run (command, seed, versions, machine, losses) and comes from this code: the recipe learns the
same vocabulary again, and its first training steps give the log's first losses again."""

import shutil
from pathlib import Path

import pytest
import torch

import transformer_lib as tl
from transformer_lib.translation import RECIPES, everyday_log, load_everyday
from transformer_lib.translation.published import (CHECKSUMS, EVERYDAY_DIR, EVERYDAY_FILES,
                                                   check_published)

BUDGET = 16_000_000   # bytes committed, at most (docs/everyday-model.md)
# The first two log points (the mean loss over steps 1-10 and 11-20), reproduced. Measured on
# the Zen 4 that trained it: 3.7e-6 in bf16 autocast (the log's rounding to 5 decimals), 8.1e-5
# in float32 (what a CPU without native bf16 trains in), the same with AVX2 kernels; a change of
# the recipe's settings, initialisation or data moves them by far more.
FIRST_LOSSES_TOLERANCE = 2e-3
# A log trained with other dropout masks (on a GPU, whose generator is not the CPU's, or by
# several processes, each with its own seed) cannot be held to that. Measured on that Zen 4 with
# the CPU's masks for five other dropout seeds: the two points moved by 7.0e-3 at most (6.7e-4 to
# 7.0e-3); what the test is there to catch moves them by more: another initialisation seed
# 1.8e-2, a learning rate 10 % higher 4.1e-2, a warm-up 10 % longer 4.2e-2, no label smoothing 0.11.
OTHER_MASKS_TOLERANCE = 1.2e-2
# The H100 record below, trained with CUDA's dropout masks for seed 0, has its first two points
# 5.5e-4 and 1.6e-3 from the CPU's (as this test computes them; the CPU's move by 8.1e-5 at most
# between bf16, float32 and AVX2 kernels). Measured on that H100 (scripts/first_losses.py): the
# same 20 steps with dropout seeds 1 and 2 were 1.1e-3 off at most, another initialisation seed
# (1) 7.5e-3 off; an earlier run with a time budget (--max-seconds, whose clock moves the rate)
# was 2.2e-2 off. The record is one fixed log: this holds it to three times its own difference.
GPU_RECORD_TOLERANCE = 5e-3
# The everyday recipe trained on an NVIDIA H100 with torchrun (records/everyday-h100/README.md):
# a record, not the published model.
GPU_RUN = Path(__file__).resolve().parents[1] / "records" / "everyday-h100"
# Its int8 model's greedy BLEU, scored here on the CPU, against what publishing scored on the
# GPU's machine (on its CPU, in float32). Chapter 8 holds the published model to the same 0.3.
SCORED_AGAIN_TOLERANCE = 0.3


@pytest.fixture(scope="module")
def everyday_data(data_dir):
    """The everyday recipe's split and vocabulary, learned again here (about 20 s)."""
    split, vocab, _ = RECIPES["everyday"].load_data(data_dir)
    return split, vocab


def test_the_files_match_their_checksums_and_fit_the_budget():
    listed = check_published()
    assert sorted(listed) == sorted(EVERYDAY_FILES)
    total = sum((EVERYDAY_DIR / name).stat().st_size for name in (*EVERYDAY_FILES, CHECKSUMS))
    assert total <= BUDGET, total


def test_an_altered_file_is_named(tmp_path):
    copy = tmp_path / "everyday"
    shutil.copytree(EVERYDAY_DIR, copy)
    data = bytearray((copy / "model.pt").read_bytes())
    data[len(data) // 2] ^= 1
    (copy / "model.pt").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="model.pt does not match its SHA-256"):
        load_everyday(directory=copy)
    (copy / CHECKSUMS).unlink()
    with pytest.raises(ValueError, match="SHA256SUMS is missing"):
        check_published(copy)


# the published model, and the GPU's run kept as a record (checked the same way)
BOTH_RUNS = pytest.mark.parametrize("directory", [EVERYDAY_DIR, GPU_RUN],
                                    ids=["published", "h100-record"])


@BOTH_RUNS
def test_it_is_the_everyday_recipes_model_in_int8(directory):
    model, vocab = load_everyday(directory=directory)
    recipe = RECIPES["everyday"]
    assert len(vocab) == recipe.vocab_size
    assert vocab.to_tokens(range(4)) == list(tl.translation.SPECIAL_TOKENS)
    want = tl.TransformerConfig(len(vocab), len(vocab), **recipe.model)
    assert model.config.to_dict() == want.to_dict()
    assert model.decoder.dense.weight is model.encoder.embedding.weight
    payload = torch.load(directory / "model.pt", weights_only=True)
    matrices = [k for k, v in payload["state_dict"].items() if v.dim() == 2]
    assert matrices and all(payload["state_dict"][k].dtype == torch.int8 for k in matrices)
    assert payload["extra"]["recipe"] == "everyday"


@BOTH_RUNS
def test_the_log_records_the_run(directory):
    log = everyday_log(directory)
    recipe = RECIPES["everyday"]
    assert "train --recipe everyday" in log["command"]
    assert log["recipe"] == "everyday" and log["seed"] == recipe.train.seed
    model, _ = load_everyday(directory=directory)
    assert log["parameters"] == model.num_parameters()
    machine = log["machine"]
    assert {"cpu", "cores", "torch", "tokenizers", "python", "matmul_2048_gflops"} <= set(machine)
    run = log["history"]
    assert [v["epoch"] for v in run["validation"]] == [float(e) for e in
                                                       range(1, recipe.train.epochs + 1)]
    assert run["train_seconds"] > 0 and run["tokens_per_second"] > 0
    assert len(run["train_loss"]) == len(run["steps"]) > 100
    losses = [v["loss"] for v in run["validation"]]
    assert losses[-1] < losses[0]
    assert log["publish"]["weights"] == "int8"


def _first_losses_script():
    """scripts/first_losses.py, which trains the recipe's first steps (on a GPU too)."""
    from load_script import load_script

    return load_script("first_losses")


@pytest.fixture(scope="module")
def first_points_here(everyday_data):
    """The recipe's first two loss points (mean label-smoothed loss over steps 1-10 and 11-20),
    trained again here; the vocabulary learned again is the published one."""
    _, published_vocab = load_everyday()
    split, vocab = everyday_data
    assert vocab.to_json() == published_vocab.to_json()
    seed = RECIPES["everyday"].train.seed
    points = _first_losses_script().first_points(split, vocab, None, dropout_seed=seed,
                                                 init_seed=seed)
    assert len(points) == 2
    return points


def first_points_difference(points, directory=EVERYDAY_DIR):
    """The largest difference between ``points`` and a log's first two loss points."""
    record = everyday_log(directory)
    log = record["history"]
    step = RECIPES["everyday"].train.log_every
    assert log["steps"][:2] == [step, 2 * step]
    difference = max(abs(a - b) for a, b in zip(points, log["train_loss"][:2]))
    print(f"\nfirst two loss points {points} vs the log's {log['train_loss'][:2]}: "
          f"largest difference {difference:.5f}")
    return difference, record


def test_the_log_comes_from_this_code(first_points_here):
    """The recipe, run again here: its first 20 steps give the published log's first two loss
    points."""
    difference, record = first_points_difference(first_points_here)
    same_masks = record["machine"]["device"] == "cpu" and record["processes"] == 1
    assert difference < (FIRST_LOSSES_TOLERANCE if same_masks else OTHER_MASKS_TOLERANCE)


def test_the_gpu_runs_log_comes_from_this_code(first_points_here):
    """The same for the H100 record, trained with CUDA's dropout masks."""
    difference, _ = first_points_difference(first_points_here, GPU_RUN)
    assert difference < GPU_RECORD_TOLERANCE


def test_the_gpu_run_was_trained_on_cuda_by_torchrun():
    """The record's files match their checksums; its log says torchrun, CUDA and the GPU (the
    checks both runs share are above), and its tokenizer, learned on the GPU's machine
    (tokenizers 0.23.2), is the published one byte for byte."""
    assert sorted(check_published(GPU_RUN)) == sorted(EVERYDAY_FILES)
    log = everyday_log(GPU_RUN)
    assert log["command"].startswith("torchrun --nproc_per_node=1 -m transformer_lib train "
                                     "--recipe everyday")
    assert log["processes"] == 1
    assert log["machine"]["device"] == "cuda" and "H100" in log["machine"]["gpu"]
    assert log["history"]["precision"] == "bfloat16"
    _, vocab = load_everyday(directory=GPU_RUN)
    _, published_vocab = load_everyday()
    assert vocab.to_json() == published_vocab.to_json()


def test_the_gpu_runs_model_scores_here_what_it_scored_there(everyday_data):
    """A checkpoint trained on a GPU, loaded on this CPU: its greedy BLEU on the recipe's 2,000
    test sources is what publishing measured on the GPU's machine."""
    from transformer_lib.translation.translate import evaluate_bleu

    split, _ = everyday_data
    model, vocab = load_everyday(directory=GPU_RUN)
    there = everyday_log(GPU_RUN)["publish"]["measured"]["int8"]
    here = evaluate_bleu(model, split.test, vocab, vocab)
    print(f"\ngreedy BLEU here {here.single:.2f} / {here.multi:.2f}, there "
          f"{there['greedy_bleu_single']} / {there['greedy_bleu_multi']}")
    assert abs(here.multi - there["greedy_bleu_multi"]) < SCORED_AGAIN_TOLERANCE
    assert abs(here.single - there["greedy_bleu_single"]) < SCORED_AGAIN_TOLERANCE
