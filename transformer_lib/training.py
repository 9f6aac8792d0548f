"""Training an encoder-decoder: masked, label-smoothed loss; AdamW with warm-up; gradient
clipping; an epoch count and/or a wall-clock budget; validation loss; progress and callbacks."""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from .data import Vocab


def pick_device(device: str | None = None) -> torch.device:
    """``device`` if given, else CUDA, then Apple's MPS, then the CPU."""
    if device:
        return torch.device(device)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def sequence_loss(logits, labels, pad_id: int = Vocab.pad, label_smoothing: float = 0.0):
    """Mean cross-entropy over the *non-padding* target tokens.

    logits ``(B, T, V)``, labels ``(B, T)``.  Padding never counts, neither in the sum nor in
    the number it is divided by (d2l's ``Seq2Seq`` averages over padding too).
    """
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                           ignore_index=pad_id, label_smoothing=label_smoothing)


@dataclass
class TrainConfig:
    """How to train.  Training stops after ``epochs`` or ``max_seconds``, whichever comes first."""

    epochs: int = 10
    max_seconds: float | None = None
    lr: float = 5e-4
    warmup_steps: int = 400
    schedule: str = "linear"  # after warm-up: "linear" decay to 0 at the end, or "constant"
    weight_decay: float = 0.01
    label_smoothing: float = 0.1
    clip_norm: float = 1.0
    seed: int = 0
    device: str | None = None  # None: pick_device()
    amp: bool = True           # mixed precision, on CUDA only
    log_every: int = 10        # steps between callback calls

    def __post_init__(self):
        if self.schedule not in ("linear", "constant"):
            raise ValueError(f"schedule must be 'linear' or 'constant', got {self.schedule!r}")
        if self.epochs <= 0 and not self.max_seconds:
            raise ValueError("give a positive epochs or max_seconds")


@dataclass
class History:
    steps: list = field(default_factory=list)        # step number at each log point
    seconds: list = field(default_factory=list)      # training seconds at each log point
    train_loss: list = field(default_factory=list)   # mean loss since the last log point
    val_loss: list = field(default_factory=list)     # (seconds, epoch, loss) after each epoch
    target_tokens: int = 0
    train_seconds: float = 0.0
    epochs_done: float = 0.0

    @property
    def tokens_per_second(self) -> float:
        return self.target_tokens / max(self.train_seconds, 1e-9)


def learning_rate(config: TrainConfig, step: int, progress: float) -> float:
    """Linear warm-up over ``warmup_steps``, then constant or linear decay to 0 at progress 1."""
    warm = min(1.0, (step + 1) / max(1, config.warmup_steps))
    if config.schedule == "constant":
        return config.lr * warm
    return config.lr * warm * max(0.0, 1.0 - progress)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def _autocast(device: torch.device, enabled: bool):
    if enabled and device.type == "cuda":
        dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.autocast("cuda", dtype=dtype)
    return torch.autocast(device.type, enabled=False)


@torch.no_grad()
def evaluate_loss(model, loader, device=None, label_smoothing: float = 0.0) -> float:
    """Mean per-token loss over ``loader`` in evaluation mode (the causal mask stays on)."""
    device = device or next(model.parameters()).device
    was_training = model.training
    model.eval()
    total, count = 0.0, 0
    for batch in loader:
        batch = batch.to(device)
        logits = model(batch.src, batch.tgt_in, batch.src_valid_lens)
        n = batch.num_target_tokens
        total += sequence_loss(logits, batch.tgt_out, label_smoothing=label_smoothing).item() * n
        count += n
    model.train(was_training)
    return total / max(count, 1)


def fit(model, train_loader, val_loader=None, config: TrainConfig | None = None, *,
        callback=None, progress: bool = True) -> History:
    """Train ``model`` in place and return its :class:`History`.

    callback(history) is called every ``config.log_every`` steps and after each epoch, e.g.
    to redraw a live loss plot.  Set ``progress=False`` to silence the tqdm bar.
    """
    from tqdm.auto import tqdm

    config = config or TrainConfig()
    seed_everything(config.seed)
    device = pick_device(config.device)
    model.to(device).train()
    use_amp = config.amp and device.type == "cuda"
    scaler = torch.amp.GradScaler("cuda", enabled=use_amp and not torch.cuda.is_bf16_supported())
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    steps_per_epoch = len(train_loader)
    total_steps = config.epochs * steps_per_epoch if config.epochs > 0 else None
    history = History()
    bar = tqdm(total=total_steps, disable=not progress, unit="step")
    step, running, running_n = 0, 0.0, 0
    start, paused = time.perf_counter(), 0.0  # validation time is not training time

    def elapsed():
        return time.perf_counter() - start - paused

    def progress_fraction():
        fractions = []
        if total_steps:
            fractions.append(step / total_steps)
        if config.max_seconds:
            fractions.append(elapsed() / config.max_seconds)
        return min(1.0, max(fractions))

    done = False
    while not done:
        for batch in train_loader:
            if progress_fraction() >= 1.0:
                done = True
                break
            batch = batch.to(device)
            for group in optimizer.param_groups:
                group["lr"] = learning_rate(config, step, progress_fraction())
            with _autocast(device, use_amp):
                logits = model(batch.src, batch.tgt_in, batch.src_valid_lens)
            loss = sequence_loss(logits, batch.tgt_out, label_smoothing=config.label_smoothing)
            optimizer.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
            scaler.step(optimizer)
            scaler.update()
            step += 1
            history.target_tokens += batch.num_target_tokens
            running, running_n = running + loss.item(), running_n + 1
            bar.update(1)
            if step % config.log_every == 0:
                history.steps.append(step)
                history.seconds.append(elapsed())
                history.train_loss.append(running / running_n)
                running, running_n = 0.0, 0
                bar.set_postfix(loss=f"{history.train_loss[-1]:.3f}", s=f"{elapsed():.0f}")
                if callback:
                    callback(history)
        else:  # the epoch ran to its end
            if total_steps and step >= total_steps:
                done = True
        history.train_seconds = elapsed()
        history.epochs_done = step / steps_per_epoch
        if val_loader is not None:
            t0 = time.perf_counter()
            val = evaluate_loss(model, val_loader, device)
            paused += time.perf_counter() - t0
            history.val_loss.append((history.train_seconds, history.epochs_done, val))
            if callback:
                callback(history)
    bar.close()
    model.eval()
    return history
