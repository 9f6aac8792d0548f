"""Training an encoder-decoder: masked, label-smoothed loss; AdamW with
warm-up; gradient clipping; mixed precision; an epoch count and/or a
wall-clock budget; validation loss; progress and callbacks."""

from __future__ import annotations

import contextlib
import copy
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from .._checks import (check_count, check_positive_int, check_probability,
                       check_tensor)
from .data import Vocab
from .distributed import (DistributedModel, Ranks, all_reduce_sum, barrier,
                          shard)
from ..model.transformer import fields_text, training_mode

# precision -> the dtype of autocast's matrix products (None: no autocast)
DTYPES = {"float32": None, "bfloat16": torch.bfloat16,
          "float16": torch.float16}
PRECISIONS = ("auto", *DTYPES)


def precision_name(dtype) -> str:
    """``"float32"``, ``"bfloat16"`` or ``"float16"`` for autocast's
    dtype (``None``: float32)."""
    if dtype is torch.float32:
        return "float32"
    for name, known in DTYPES.items():
        if known is dtype:
            return name
    raise ValueError(f"dtype must be None, torch.float32, torch.bfloat16 "
                     f"or torch.float16, got {dtype!r}")


def pick_device(device: str | None = None) -> torch.device:
    """``device`` if given, else CUDA, then Apple's MPS, then the CPU."""
    if device:
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def cpu_has_native_bf16() -> bool:
    """Whether torch reports that this CPU multiplies bf16 natively
    (AVX-512 BF16 or AMX); without it, bf16 is emulated and slower."""
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(getattr(torch.cpu, name, lambda: False)() for name in probes)


# Forces what "auto" means, e.g. float32 on a CPU with native bf16, to
# reproduce on one machine the numbers of a CPU without it.
PRECISION_VARIABLE = "TRANSFORMER_LIB_PRECISION"


def forced_precision() -> str | None:
    """The precision named by ``$TRANSFORMER_LIB_PRECISION``, if set."""
    forced = os.environ.get(PRECISION_VARIABLE, "").strip()
    if forced and forced not in PRECISIONS:
        raise ValueError(f"{PRECISION_VARIABLE} must be one of "
                         f"{PRECISIONS}, got {forced!r}")
    return forced or None


def autocast_dtype(precision: str, device: torch.device):
    """The dtype of autocast's matrix products for ``precision`` on
    ``device``, or ``None`` for plain float32.

    ``"auto"``: what ``$TRANSFORMER_LIB_PRECISION`` names, if set; else
    bf16 on a CUDA GPU that has it (else float16, with loss scaling),
    bf16 on a CPU with native bf16, float32 elsewhere.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, "
                         f"got {precision!r}")
    device = torch.device(device)     # "cpu" as well as torch.device("cpu")
    if precision == "auto":
        precision = forced_precision() or "auto"
    if precision == "auto":
        if device.type == "cuda":
            bf16 = torch.cuda.is_bf16_supported()
            return torch.bfloat16 if bf16 else torch.float16
        if device.type == "cpu" and cpu_has_native_bf16():
            return torch.bfloat16
        return None
    return DTYPES[precision]


def autocast(device: torch.device, dtype):
    """Mixed precision in ``dtype`` on ``device``; nothing for ``None``
    (some torch versions refuse even a disabled autocast on Apple's MPS)."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


class SmoothedCrossEntropy(torch.autograd.Function):
    """Label-smoothed cross-entropy in float32, averaged over the rows whose
    label is not ``pad_id``: the numbers of ``F.cross_entropy(z.float(),
    labels, ignore_index=pad_id, label_smoothing=eps_ls)`` (tested).

    ``eps_ls`` is the label smoothing (notation: epsilon_ls).  With the
    smoothed target q = (1 - eps_ls) onehot(y) + eps_ls / V, a row's loss
    is -sum_j q_j log softmax(z)_j = logsumexp(z) - (1 - eps_ls) z_y
    - eps_ls mean(z), and its gradient softmax(z) - q.  The backward pass
    writes that gradient in one sweep; torch's own makes several
    full-size (rows x vocabulary) temporaries, which cost a sixth of a
    bf16 training step on the book's 2-core CPU.
    """

    @staticmethod
    def forward(ctx, logits, labels, pad_id: int, eps_ls: float):
        z = logits.float()                                     # (N, V)
        keep = labels != pad_id                                # (N,)
        labels = labels.masked_fill(~keep, 0)  # padding rows do not count
        count = keep.sum().clamp(min=1)
        lse = torch.logsumexp(z, dim=-1)                       # (N,)
        z_y = z.gather(-1, labels[:, None]).squeeze(-1)        # (N,)
        rows = lse - (1 - eps_ls) * z_y - eps_ls * z.mean(dim=-1)
        ctx.save_for_backward(logits, labels, lse, keep, count)
        ctx.eps_ls = eps_ls
        return torch.where(keep, rows, 0.0).sum() / count

    @staticmethod
    def backward(ctx, grad):
        logits, labels, lse, keep, count = ctx.saved_tensors
        eps_ls, V = ctx.eps_ls, logits.shape[-1]
        g = logits.to(torch.float32, copy=True)  # in place from here on
        g.sub_(lse[:, None]).exp_()             # softmax(z)
        g.sub_(eps_ls / V)                      # - eps_ls / V
        minus_one_hot = torch.full_like(lse[:, None], eps_ls - 1)
        # - (1 - eps_ls) at the label
        g.scatter_add_(-1, labels[:, None], minus_one_hot)
        g.mul_((keep * grad / count)[:, None])
        return g.to(logits.dtype), None, None, None


def sequence_loss(logits, labels, pad_id: int = Vocab.pad,
                  label_smoothing: float = 0.0):
    """Mean cross-entropy over the *non-padding* target tokens, in float32.

    logits ``(B, T, V)``, labels ``(B, T)``.  Padding never counts, neither
    in the sum nor in the number it is divided by (the d2l 1.0.3
    package's ``Seq2Seq`` inherits a loss that averages over padding
    too; d2l's book masks it in the chapter's own code).
    """
    _check_loss_inputs(logits, labels, label_smoothing)
    V = logits.shape[-1]
    return SmoothedCrossEntropy.apply(logits.reshape(-1, V),
                                      labels.reshape(-1), pad_id,
                                      label_smoothing)


def _check_loss_inputs(logits, labels, label_smoothing) -> None:
    # shapes and dtypes only: no read of the values (a GPU sync per step)
    check_tensor("logits", logits, ndim=3, kind="float")
    check_tensor("labels", labels, ndim=2, kind="int")
    if labels.shape != logits.shape[:2]:
        raise ValueError(f"labels must be (B, T) = "
                         f"{tuple(logits.shape[:2])}, as the logits' first "
                         f"two axes, got {tuple(labels.shape)}")
    check_probability("label_smoothing", label_smoothing)


def _check_loader(name: str, loader) -> None:
    """A loader yields batches; a list of pairs is not one."""
    if isinstance(loader, (list, tuple)) and loader and not hasattr(
            loader[0], "tgt_out"):
        raise TypeError(f"{name} must give batches (a BatchLoader), got a "
                        f"{type(loader).__name__} of "
                        f"{type(loader[0]).__name__}: wrap the pairs in "
                        f"BatchLoader(pairs, src_vocab, tgt_vocab)")


SCHEDULES = ("linear", "constant", "inverse_sqrt")


@dataclass
class TrainConfig:
    """How to train.  Training stops after ``epochs`` or ``max_seconds``,
    whichever comes first (the time is read before each step; the first
    step runs however long its batch took to load)."""

    epochs: int = 10
    max_seconds: float | None = None
    lr: float = 5e-4
    warmup_steps: int = 400
    schedule: str = "linear"  # after warm-up: "linear" decay to 0,
    #                   "constant", or "inverse_sqrt" (eq. (3): see below)
    decay_steps: int | None = None  # the linear decay reaches 0 after this
    #                         many steps (None: at the end of the run)
    weight_decay: float = 0.01
    beta2: float = 0.999  # AdamW's decay of its mean squared gradient
    #                       (torch's default; the paper's is 0.98)
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    seed: int = 0
    device: str | None = None  # None: pick_device()
    precision: str = "auto"    # or "float32", "bfloat16", "float16"
    log_every: int = 10        # steps between log points (and callbacks)

    __str__ = fields_text  # print() wraps the fields to the page

    def __post_init__(self):
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, "
                             f"got {self.schedule!r}")
        if self.decay_steps is not None:
            check_positive_int("decay_steps", self.decay_steps)
        for name in ("epochs", "warmup_steps", "seed"):
            check_count(name, getattr(self, name))
        check_positive_int("log_every", self.log_every)
        for name in ("lr", "clip_norm"):   # clip_norm=math.inf: no clipping
            _check_number(name, getattr(self, name), positive=True)
        _check_number("weight_decay", self.weight_decay, positive=False)
        _check_number("beta2", self.beta2, positive=False)
        if self.beta2 >= 1:
            raise ValueError(f"beta2 must be below 1, got {self.beta2!r}")
        check_probability("label_smoothing", self.label_smoothing)
        if self.max_seconds is not None:
            _check_number("max_seconds", self.max_seconds, positive=True)
        if self.epochs <= 0 and not self.max_seconds:
            raise ValueError("give a positive epochs or max_seconds")
        if self.precision not in PRECISIONS:
            raise ValueError(f"precision must be one of {PRECISIONS}, "
                             f"got {self.precision!r}")
        if self.device is not None:
            try:
                torch.device(self.device)
            except (RuntimeError, TypeError) as error:
                raise ValueError(f"device must be None or a torch device "
                                 f"such as 'cpu' or 'cuda', got "
                                 f"{self.device!r}") from error


def _check_number(name: str, value, *, positive: bool) -> None:
    """An int or a float, not NaN: > 0 if ``positive``, else >= 0."""
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or math.isnan(value) or value < 0 or (positive and value == 0)):
        need = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be a number {need}, got {value!r}")


@dataclass
class Validation:
    """The validation loss measured after an epoch (or at the end)."""

    seconds: float  # of training so far
    epoch: float    # epochs done so far
    loss: float     # mean cross-entropy per target token


@dataclass
class History:
    steps: list = field(default_factory=list)       # step of each log point
    seconds: list = field(default_factory=list)     # training seconds there
    train_loss: list = field(default_factory=list)  # mean since last point,
    #                                     label-smoothed (validation: not)
    validation: list = field(default_factory=list)  # [Validation, ...]
    target_tokens: int = 0
    train_seconds: float = 0.0
    steps_done: int = 0
    epochs_done: float = 0.0
    precision: str = "float32"  # of the matrix products

    @property
    def tokens_per_second(self) -> float:
        return self.target_tokens / max(self.train_seconds, 1e-9)


class EpochSnapshots:
    """A :func:`fit` callback that keeps a copy of ``model``'s weights at
    each of its first ``epochs`` validations (fit validates at the end of
    every epoch, and where a time budget stops it): ``weights[k]``, a
    state dict, for ``history.validation[k - 1]``.  ``last_epoch``: the
    latest ``k`` kept, 0 before the first."""

    def __init__(self, model: torch.nn.Module, epochs: int):
        check_positive_int("epochs", epochs)
        self.model, self.epochs = model, epochs
        self.weights: dict[int, dict] = {}

    def __call__(self, history: History) -> None:
        epoch = len(history.validation)
        if 0 < epoch <= self.epochs and epoch not in self.weights:
            self.weights[epoch] = copy.deepcopy(self.model.state_dict())

    @property
    def last_epoch(self) -> int:
        return max(self.weights, default=0)


def learning_rate(config: TrainConfig, step: int, progress: float) -> float:
    """The rate of 0-based ``step`` (s = step + 1 counts from 1): ``lr``
    times a linear warm-up, s / s_warm up to ``warmup_steps``, then

    - ``"linear"``: times ``1 - progress`` from the first step on (so the
      decay already acts during the warm-up; 0 at progress 1).
      ``progress`` is the share of the run done; with ``decay_steps`` set
      it is ``step / decay_steps`` instead, the same schedule whatever
      stops the run;
    - ``"constant"``: nothing more;
    - ``"inverse_sqrt"``: after the warm-up, sqrt(s_warm / s) instead of
      the warm-up factor; the peak, at s = s_warm, is ``lr``.  With ``lr``
      = (d s_warm)^-1/2 this is eq. (3) of Vaswani et al. (2017),
      d^-1/2 min(s^-1/2, s s_warm^-3/2) (tested).
    """
    check_count("step", step)
    s, s_warm = step + 1, max(1, config.warmup_steps)
    warm = min(1.0, s / s_warm)
    if config.schedule == "constant":
        return config.lr * warm
    if config.schedule == "inverse_sqrt":
        return config.lr * min(s / s_warm, (s_warm / s) ** 0.5)
    if config.decay_steps is not None:
        progress = step / config.decay_steps
    return config.lr * warm * max(0.0, 1.0 - progress)


def seed_everything(seed: int) -> None:
    """Seed Python's and torch's global generators (e.g. before building a
    model, so that its initial weights are reproducible)."""
    random.seed(seed)
    torch.manual_seed(seed)


def make_optimizer(model, config: TrainConfig):
    """AdamW, with torch's fused kernel where this torch has one for the
    model's device (one kernel for all parameters instead of a loop)."""
    options = dict(lr=config.lr, weight_decay=config.weight_decay,
                   betas=(0.9, config.beta2))
    try:
        return torch.optim.AdamW(model.parameters(), fused=True, **options)
    except (RuntimeError, TypeError, ValueError):
        return torch.optim.AdamW(model.parameters(), **options)


def check_batch(model, batch) -> None:
    """The model's value checks, once per batch, on the host (a batch is
    built on the CPU): no device synchronisation in the training loop."""
    model.check_inputs(batch.src, batch.tgt_in, batch.src_valid_lens)
    if batch.tgt_out.shape != batch.tgt_in.shape:
        raise ValueError(f"tgt_out must have the shape of tgt_in, "
                         f"{tuple(batch.tgt_in.shape)}, got "
                         f"{tuple(batch.tgt_out.shape)}")


def train_step(model, batch, optimizer, lr, config, *, scaler=None,
               dtype=None, loss_weight: float = 1.0):
    """One optimiser step on one batch, with teacher forcing: the decoder
    reads the target y shifted right by one (``tgt_in``: <bos>, then y
    without its last token) and learns to predict every next token
    (``tgt_out``: y, which ends in <eos>) in one parallel pass.  Returns
    the batch's (label-smoothed) loss.

    dtype: autocast's dtype for the matrix products (``None``: float32);
    scaler: float16's loss scaler (``None``: no scaling, a no-op);
    loss_weight: multiplies the loss before ``backward``: 1, except where
    several processes share a batch (``fit`` with ``ranks``).
    """
    for group in optimizer.param_groups:  # the schedule's rate now
        group["lr"] = lr
    with autocast(batch.src.device, dtype):
        logits = model.logits(batch.src, batch.tgt_in,     # (B, T, V)
                              batch.src_valid_lens)
    loss = sequence_loss(logits, batch.tgt_out,            # mean per token
                         label_smoothing=config.label_smoothing)
    scaler = scaler or torch.amp.GradScaler(enabled=False)
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss * loss_weight).backward()       # the gradients
    scaler.unscale_(optimizer)              # clip the true gradient
    torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
    scaler.step(optimizer)                  # AdamW, at rate lr
    scaler.update()
    return loss.detach()


@torch.no_grad()
def evaluate_loss(model, loader, label_smoothing: float = 0.0, *,
                  batch_statistics: bool = False) -> float:
    """Mean per-token loss over ``loader``, on the model's device, without
    dropout (the causal mask stays on).

    batch_statistics: let BatchNorm layers normalise with each batch's own
    statistics, as in training, instead of their running averages (on a
    copy of the model, so that the running averages stay as they are).
    """
    _check_loader("loader", loader)
    device = next(model.parameters()).device
    if batch_statistics:
        model = copy.deepcopy(model)
    total = torch.zeros((), device=device)
    count = 0
    with training_mode(model, False):
        if batch_statistics:
            for module in model.modules():
                if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                    module.train()
        for batch in loader:
            check_batch(model, batch)
            n = batch.num_target_tokens
            batch = batch.to(device)
            logits = model.logits(batch.src, batch.tgt_in,
                                  batch.src_valid_lens)
            total += n * sequence_loss(logits, batch.tgt_out,
                                       label_smoothing=label_smoothing)
            count += n
    return total.item() / max(count, 1)


def fit(model, train_loader, val_loader=None,
        config: TrainConfig | None = None, *, callback=None,
        progress: bool = True, checkpoint=None,
        resume: bool = False, ranks=None,
        clock=time.perf_counter) -> History:
    """Train ``model`` in place and return its :class:`History`.

    ``config.seed`` fixes dropout: fit draws from its own copy of torch's
    global generator and leaves the caller's as it was (on Apple's MPS,
    whose generator it reseeds too, only the CPU's).  The order of the
    batches is the loader's: its seed and the epoch, which fit sets with
    ``train_loader.set_epoch``.  The model ends in the mode it had.  The
    loss is read on the host only at log points.  Attention runs with
    :func:`attention_kernels_for_training`: on a GPU without cuDNN's
    kernel, on a CPU in bf16 with torch's math kernel.
    ``callback(history)`` (or each of a list of callbacks) runs every
    ``config.log_every`` steps and, when there is a ``val_loader``, after
    each epoch's validation, e.g. to redraw a live loss plot; like
    validation, its time is not training time (``max_seconds`` and
    ``History.train_seconds`` leave it out).  ``progress=False`` silences
    the tqdm bar.

    ``checkpoint``: a file where fit saves, after each epoch and
    atomically, all it needs to go on: the weights, the optimiser's and
    the loss scaler's state, the step, the epoch, the history and the
    random generator's state.  With ``resume=True`` it starts from that
    file when it exists -- after Colab disconnected, a laptop slept or
    Ctrl-C -- and the run ends with exactly the weights of an
    uninterrupted one (on a CPU; tested).

    ``ranks``: this process's :class:`~.distributed.Ranks` when several
    processes train together (``torchrun``; see :mod:`.distributed`):
    each takes its share of every batch, DDP averages the gradients, rank
    0 alone saves the checkpoint and shows progress, and the history
    (losses, tokens) is the whole batches'.  Dropout draws from seed
    ``config.seed + rank``.  A time budget needs one process.

    ``clock``: what fit reads the time from, in seconds, for
    ``max_seconds`` and the history's times (a fake clock makes a time
    budget exact, whatever the machine's speed).
    """
    config = config or TrainConfig()
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a TrainConfig (a recipe's is "
                        f"recipe.train), got {type(config).__name__}")
    _check_loader("train_loader", train_loader)
    _check_loader("val_loader", val_loader)
    if not callable(clock):
        raise TypeError(f"clock must be a function that returns seconds "
                        f"(time.perf_counter), got {type(clock).__name__}")
    ranks = ranks or Ranks()
    if ranks.several and config.max_seconds:
        raise ValueError("max_seconds needs one process: the ranks would "
                         "stop at different steps; give epochs instead")
    device = pick_device(config.device)
    dtype = autocast_dtype(config.precision, device)
    forked = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=forked), training_mode(model, True), \
            attention_kernels_for_training(device, dtype):
        torch.manual_seed(config.seed + ranks.rank)
        return _train(model.to(device), train_loader, val_loader, config,
                      device, dtype, callback, progress, checkpoint, resume,
                      ranks, clock)


@contextlib.contextmanager
def attention_kernels_for_many_shapes(device: torch.device):
    """A context in which a GPU's fused attention leaves out cuDNN's kernel;
    torch's other attention kernels stay as they were, and on a CPU
    nothing changes.  Batches cut by size come in many shapes (176 in the
    everyday recipe's first epoch), and on an H100 a step on a shape
    new to cuDNN's attention took 19.7 times a repeated one, against 1.3
    times without it (``benchmarks/bench_first_epoch.py``)."""
    switches = torch.backends.cuda
    leave_out = device.type == "cuda" and switches.cudnn_sdp_enabled()
    if leave_out:
        switches.enable_cudnn_sdp(False)
    try:
        yield
    finally:
        if leave_out:
            switches.enable_cudnn_sdp(True)


@contextlib.contextmanager
def attention_kernel_for_cpu_bf16(device: torch.device, dtype):
    """A context in which, on a CPU in bf16 autocast, fused attention runs
    torch's math kernel (the formula, one operator at a time) instead of
    its flash kernel, which, forward and backward at the book's sentence
    lengths, took 1.4 to 6 times as long on a 2-core Xeon
    (``benchmarks/bench_sdpa_kernels.py``); elsewhere, and in float32
    (where flash was the faster), nothing changes.  With dropout on the
    weights, torch's CPU attention takes the math kernel anyway."""
    if device.type != "cpu" or dtype is not torch.bfloat16:
        yield
        return
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.MATH]):
        yield


@contextlib.contextmanager
def attention_kernels_for_training(device: torch.device, dtype):
    """The attention kernels :func:`fit` trains with, on ``device`` with
    autocast's ``dtype``: :func:`attention_kernels_for_many_shapes` and
    :func:`attention_kernel_for_cpu_bf16` together."""
    with attention_kernels_for_many_shapes(device), \
            attention_kernel_for_cpu_bf16(device, dtype):
        yield


TRAINING_STATE_FORMAT = 1


def save_training_state(path, model, optimizer, scaler, config, *, step,
                        epoch, running, running_steps, history, device):
    """Everything :func:`fit` needs to go on from the end of an epoch."""
    from .checkpoint import save_atomically

    state = dict(format=TRAINING_STATE_FORMAT, config=asdict(config),
                 model=model.state_dict(), optimizer=optimizer.state_dict(),
                 scaler=scaler.state_dict(), step=step, epoch=epoch,
                 running=float(running), running_steps=running_steps,
                 history=asdict(history), rng=torch.get_rng_state())
    if device.type == "cuda":
        state["cuda_rng"] = torch.cuda.get_rng_state(device)
    return save_atomically(state, path)


def load_training_state(path, config: TrainConfig, device) -> dict:
    """The state that :func:`save_training_state` saved, checked against
    ``config`` (all but ``device`` must be equal)."""
    from .checkpoint import CheckpointError

    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except Exception as err:
        raise CheckpointError(f"training state {path} cannot be read: "
                              f"{err}") from err
    if state.get("format") != TRAINING_STATE_FORMAT:
        raise CheckpointError(f"{path} is not a training state of fit")
    ours = {k: v for k, v in asdict(config).items() if k != "device"}
    differ = [k for k, v in ours.items() if state["config"].get(k) != v]
    if differ:
        raise CheckpointError(f"training state {path} was saved with "
                              f"another TrainConfig ({', '.join(differ)} "
                              f"differ)")
    saved = state["history"]
    validation = [Validation(**v) for v in saved["validation"]]
    state["history"] = History(**{**saved, "validation": validation})
    return state


def _train(model, train_loader, val_loader, config, device, dtype,
           callback, progress, checkpoint, resume, ranks, clock) -> History:
    from tqdm.auto import tqdm

    # what train_step runs: the model, or the model behind DDP
    net = DistributedModel(model, device) if ranks.several else model
    optimizer = make_optimizer(model, config)
    scaler = torch.amp.GradScaler(device.type,
                                  enabled=dtype is torch.float16)
    steps_per_epoch = len(train_loader)
    if not steps_per_epoch:
        raise ValueError("train_loader is empty: nothing to train on")
    total_steps = config.epochs * steps_per_epoch or None
    history = History(precision=precision_name(dtype))
    step, epoch = 0, 0
    running, running_steps = torch.zeros((), device=device), 0
    if resume and checkpoint is not None and Path(checkpoint).is_file():
        saved = load_training_state(checkpoint, config, device)
        try:
            model.load_state_dict(saved["model"])
        except RuntimeError as err:
            from .checkpoint import CheckpointError

            raise CheckpointError(f"training state {checkpoint} does not "
                                  f"fit the model: {err}") from err
        optimizer.load_state_dict(saved["optimizer"])
        scaler.load_state_dict(saved["scaler"])
        step, epoch = saved["step"], saved["epoch"]
        history = saved["history"]
        running.fill_(saved["running"] if ranks.is_main else 0.0)
        running_steps = saved["running_steps"]
        torch.set_rng_state(saved["rng"])
        if "cuda_rng" in saved:
            torch.cuda.set_rng_state(saved["cuda_rng"], device)
    bar = tqdm(total=total_steps, initial=step,
               disable=not (progress and ranks.is_main), unit="step")
    before = history.train_seconds  # of a run this one resumes
    # validation and callbacks are not training
    start, paused = clock(), 0.0
    callbacks = (list(callback) if isinstance(callback, (list, tuple))
                 else [callback] if callback else [])

    def elapsed():
        return before + clock() - start - paused

    def call_back():
        nonlocal paused
        t0 = clock()
        for each in callbacks:
            each(history)
        paused += clock() - t0

    def progress_fraction():
        fractions = [step / total_steps] if total_steps else []
        if config.max_seconds:
            fractions.append(elapsed() / config.max_seconds)
        return min(1.0, max(fractions))

    while progress_fraction() < 1.0:  # an epoch, or what the budget leaves
        if hasattr(train_loader, "set_epoch"):
            train_loader.set_epoch(epoch)
        first = step
        for batch in train_loader:
            if step and progress_fraction() >= 1.0:
                break
            check_batch(model, batch)
            tokens = batch.num_target_tokens   # of the whole batch
            history.target_tokens += tokens
            share = 1.0  # of the batch's target tokens, on this rank
            if ranks.several:
                batch = shard(batch, ranks)
                share = batch.num_target_tokens / tokens
            lr = learning_rate(config, step, progress_fraction())
            loss = train_step(net, batch.to(device), optimizer, lr, config,
                              scaler=scaler, dtype=dtype,
                              loss_weight=share * ranks.world_size)
            step += 1
            running += loss * share   # summed over the ranks: the batch's
            running_steps += 1
            bar.update(1)
            if step % config.log_every == 0:
                history.steps.append(step)
                history.seconds.append(elapsed())
                summed = all_reduce_sum(running, ranks)
                history.train_loss.append(summed.item() / running_steps)
                running.zero_()
                running_steps = 0
                bar.set_postfix(loss=f"{history.train_loss[-1]:.3f}",
                                s=f"{elapsed():.0f}")
                call_back()
        else:  # the epoch ran to its end
            epoch += 1
        if step == first > 0:  # the budget ran out before this pass began:
            break              # nothing new to validate or save
        history.train_seconds = elapsed()
        history.steps_done = step
        history.epochs_done = step / steps_per_epoch
        if val_loader is not None:
            t0 = clock()
            loss = evaluate_loss(model, val_loader)
            paused += clock() - t0
            history.validation.append(
                Validation(history.train_seconds, history.epochs_done, loss))
        if checkpoint is not None:
            summed = all_reduce_sum(running, ranks)   # every rank's part
            if ranks.is_main:
                save_training_state(checkpoint, model, optimizer, scaler,
                                    config, step=step, epoch=epoch,
                                    running=summed,
                                    running_steps=running_steps,
                                    history=history, device=device)
            barrier(ranks)  # the others wait until it is written
        if val_loader is not None:
            call_back()
    bar.close()
    return history
