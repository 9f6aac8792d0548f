"""Training on two processes with torchrun and DDP (gloo, on the CPU) against one process."""

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from transformer_lib.translation import BatchLoader, TrainConfig, Vocab, fit
from transformer_lib.translation.distributed import Ranks, shard

WORKER = Path(__file__).with_name("ddp_worker.py")
# The largest difference measured between two processes and one after the worker's 18 steps,
# over seeds 0-3: 1.5e-6 in a weight (weights up to about 1), 2.4e-7 in a logged loss (the sums
# run in another order). Without the loss weighting (each rank's mean loss counted equally, as
# if its share were always half the batch) it was 4.7e-3 and 5.3e-3 (seeds 0 and 1).
TOLERANCE = 1e-5


def run(out, seed, *args, processes=2):
    command = ([sys.executable, "-m", "torch.distributed.run", "--standalone",
                f"--nproc_per_node={processes}"] if processes > 1 else [sys.executable])
    result = subprocess.run([*command, str(WORKER), str(out), str(seed), *args],
                            capture_output=True, text=True, timeout=300)
    return result


def failure(result) -> str:
    """What a failed torchrun printed: its workers' error lines (torchrun's own traceback, which
    ends its output, says only that a worker failed), then the end."""
    errors = [line for line in result.stderr.splitlines()
              if "rror" in line or "what()" in line or "terminate" in line]
    return "\n".join(errors[:20]) + "\n...\n" + result.stderr[-1000:]


def largest_difference(a, b):
    return max((a[name] - b[name]).abs().max().item() for name in a)


@pytest.mark.parametrize("seed", [0, 3])
def test_two_processes_train_as_one_over_the_same_batches(tmp_path, seed):
    two, one = tmp_path / "two.pt", tmp_path / "one.pt"
    result = run(two, seed)
    assert result.returncode == 0, failure(result)
    assert run(one, seed, processes=1).returncode == 0
    two, one = torch.load(two), torch.load(one)
    assert two["world_size"] == 2 and one["world_size"] == 1
    assert two["tokens"] == one["tokens"]                   # the whole batches' tokens
    assert largest_difference(two["weights"], one["weights"]) < TOLERANCE
    assert two["losses"] == pytest.approx(one["losses"], abs=TOLERANCE)
    assert two["val"] == pytest.approx(one["val"], abs=TOLERANCE)
    assert len(two["losses"]) == 4 and two["losses"][-1] < two["losses"][0]


def test_two_processes_resume_from_rank_0s_checkpoint(tmp_path):
    state = tmp_path / "run.state"
    whole, resumed = tmp_path / "whole.pt", tmp_path / "resumed.pt"
    assert run(whole, 1).returncode == 0
    stopped = run(tmp_path / "never.pt", 1, "--state", str(state), "--stop-after-epoch", "2")
    assert stopped.returncode == 0, failure(stopped)
    assert state.is_file() and not (tmp_path / "never.pt").exists()
    result = run(resumed, 1, "--state", str(state), "--resume")
    assert result.returncode == 0, failure(result)
    whole, resumed = torch.load(whole), torch.load(resumed)
    assert largest_difference(whole["weights"], resumed["weights"]) < TOLERANCE
    assert resumed["losses"] == pytest.approx(whole["losses"], abs=TOLERANCE)


def test_a_shard_is_every_world_size_th_row_and_counts_its_tokens():
    vocab = Vocab([list("abcdefgh")])
    pairs = [(list("ab" * n), list("c" * n)) for n in range(1, 6)]
    batch = next(iter(BatchLoader(pairs, vocab, vocab, 5, shuffle=False)))
    parts = [shard(batch, Ranks(r, 2)) for r in range(2)]
    assert [p.src.shape[0] for p in parts] == [3, 2]
    assert torch.equal(parts[1].tgt_out, batch.tgt_out[1::2])
    assert sum(p.num_target_tokens for p in parts) == batch.num_target_tokens
    with pytest.raises(ValueError, match="batch_size of at least 6"):
        shard(batch, Ranks(0, 6))


def test_ranks_and_the_time_budget_are_checked():
    with pytest.raises(ValueError, match="rank must be in"):
        Ranks(2, 2)
    vocab = Vocab([list("ab")])
    loader = BatchLoader([(["a"], ["b"])] * 4, vocab, vocab, 2)
    with pytest.raises(ValueError, match="max_seconds needs one process"):
        fit(torch.nn.Linear(1, 1), loader, None, TrainConfig(epochs=0, max_seconds=5),
            ranks=Ranks(0, 2))
