"""Training on several processes with torch's DistributedDataParallel.

``torchrun --nproc_per_node=N -m transformer_lib train --recipe ...``
starts N processes (ranks); :func:`init_distributed` joins them into one
group (gloo on a CPU, nccl on CUDA GPUs), and ``fit(..., ranks=...)``
then gives each rank its share of every batch: every rank builds the same
global batch (the loader's seed and epoch fix its order) and keeps rows
``rank, rank + N, ...``.  DDP averages the ranks' gradients during
``backward``; each rank weights its loss by its share of the batch's
target tokens, so the average is the gradient of the whole batch's mean
loss, as one process would compute it (tested, within rounding).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import nn

from .data import Batch, Vocab


@dataclass(frozen=True)
class Ranks:
    """This process's place among the training processes."""

    rank: int = 0
    world_size: int = 1

    def __post_init__(self):
        if not 0 <= self.rank < self.world_size:
            raise ValueError(f"rank must be in [0, world_size="
                             f"{self.world_size}), got {self.rank}")

    @property
    def is_main(self) -> bool:
        """Rank 0: the one that prints, saves and draws."""
        return self.rank == 0

    @property
    def several(self) -> bool:
        return self.world_size > 1


def init_distributed(device: torch.device) -> Ranks:
    """Join the process group that ``torchrun`` describes in the
    environment (``$RANK``, ``$WORLD_SIZE``, ``$MASTER_ADDR``, ...): gloo
    on a CPU, nccl on CUDA, where rank r uses GPU ``$LOCAL_RANK``.
    Without torchrun, or with one process: ``Ranks()``, and nothing is
    initialised."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return Ranks()
    if not dist.is_initialized():
        if device.type == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Ranks(dist.get_rank(), dist.get_world_size())


def launcher() -> str:
    """How this process started the package, for a run's record:
    ``torchrun --nproc_per_node=N -m transformer_lib`` under torchrun
    (which sets ``$TORCHELASTIC_RUN_ID``), else
    ``python -m transformer_lib``."""
    if "TORCHELASTIC_RUN_ID" in os.environ:
        processes = os.environ.get("LOCAL_WORLD_SIZE", "1")
        return f"torchrun --nproc_per_node={processes} -m transformer_lib"
    return "python -m transformer_lib"


def shard(batch: Batch, ranks: Ranks) -> Batch:
    """This rank's rows of ``batch``: ``rank, rank + world_size, ...`` (a
    length-sorted batch gives each rank similar lengths)."""
    rows = slice(ranks.rank, None, ranks.world_size)
    if batch.src.shape[0] < ranks.world_size:
        raise ValueError(f"a batch of {batch.src.shape[0]} pairs cannot be "
                         f"shared by {ranks.world_size} processes: use a "
                         f"batch_size of at least {ranks.world_size}")
    tgt_out = batch.tgt_out[rows]
    return Batch(batch.src[rows], batch.src_valid_lens[rows],
                 batch.tgt_in[rows], tgt_out,
                 int((tgt_out != Vocab.pad).sum()))


class _Logits(nn.Module):
    """DDP runs a module's ``forward``; this one's is ``model.logits``."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, src, tgt, src_valid_lens=None):
        return self.model.logits(src, tgt, src_valid_lens)


class DistributedModel(nn.Module):
    """``model`` behind DDP: :meth:`logits` runs through DDP, so that
    ``backward`` averages the gradients over the ranks.  Its parameters are
    ``model``'s own (DDP copies rank 0's to the others when it starts)."""

    def __init__(self, model: nn.Module, device: torch.device):
        super().__init__()
        ids = ([torch.cuda.current_device()] if device.type == "cuda"
               else None)
        self.ddp = nn.parallel.DistributedDataParallel(_Logits(model),
                                                       device_ids=ids)

    @property
    def module(self) -> nn.Module:
        return self.ddp.module.model

    def logits(self, src, tgt, src_valid_lens=None):
        return self.ddp(src, tgt, src_valid_lens)


def all_reduce_sum(value: torch.Tensor, ranks: Ranks) -> torch.Tensor:
    """The sum of ``value`` over the ranks (``value`` itself for one)."""
    if ranks.several:
        value = value.clone()
        dist.all_reduce(value)
    return value


def barrier(ranks: Ranks) -> None:
    """Wait until every rank is here (e.g. until rank 0 has saved)."""
    if ranks.several:
        dist.barrier()


def finish_distributed(ranks: Ranks) -> None:
    """Leave the process group (at the end of a torchrun process), all
    ranks together: gloo aborts a process whose peer has already closed
    its connections."""
    if ranks.several and dist.is_initialized():
        barrier(ranks)
        dist.destroy_process_group()
