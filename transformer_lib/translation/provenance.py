"""Where a trained model comes from: the command, the versions, the
machine (with its measured matrix-product speed, since hosts of one kind
differ) and the training history, in one JSON record written beside the
checkpoint by ``python -m transformer_lib train --record FILE``."""

from __future__ import annotations

import json
import os
import platform
import re
import time
from importlib import metadata
from pathlib import Path

import torch


def cpu_name() -> str:
    """The CPU's model name as Linux reports it (else ``platform``'s)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def matmul_gflops(dtype=torch.float32, size: int = 2048,
                  device="cpu") -> float:
    """GFLOP/s of a ``size``² matrix product in ``dtype``: the best of
    five after a warm-up (``2 size³`` floating-point operations each).
    Its random matrices come from a generator of its own: torch's global
    one is left as it was."""
    gen = torch.Generator().manual_seed(0)
    a, b = (torch.randn(size, size, generator=gen).to(device=device,
                                                      dtype=dtype)
            for _ in range(2))
    a @ b
    best = float("inf")
    for _ in range(5):
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        a @ b
        if torch.device(device).type == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return 2 * size ** 3 / best / 1e9


def package_version(package: str) -> str | None:
    """The installed version of ``package``, None when it is missing."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def machine_record(device) -> dict:
    """The machine, the versions and the matrix-product speed."""
    from .training import cpu_has_native_bf16

    device = torch.device(device)
    record = {
        "cpu": cpu_name(), "cores": os.cpu_count(),
        "native_bf16": cpu_has_native_bf16(),
        "device": str(device),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "tokenizers": package_version("tokenizers"),
        "platform": platform.platform(),
    }
    if device.type == "cuda":
        record["gpu"] = torch.cuda.get_device_name(device)
    record["matmul_2048_gflops"] = {
        name: round(matmul_gflops(dtype, device=device), 1)
        for name, dtype in (("float32", torch.float32),
                            ("bfloat16", torch.bfloat16))}
    return record


def history_record(history) -> dict:
    """``fit``'s :class:`~.training.History` as plain values: the loss
    every ``log_every`` steps and after each epoch, time and speed."""
    return {
        "precision": history.precision,
        "train_seconds": round(history.train_seconds, 1),
        "target_tokens": history.target_tokens,
        "tokens_per_second": round(history.tokens_per_second, 1),
        "steps_done": history.steps_done,
        "epochs_done": history.epochs_done,
        "validation": [{"epoch": v.epoch, "seconds": round(v.seconds, 1),
                        "loss": round(v.loss, 5)}
                       for v in history.validation],
        "steps": list(history.steps),
        "train_loss": [round(x, 5) for x in history.train_loss],
    }


def write_training_log(path, *, argv, recipe: str, seed: int,
                       machine: dict, history, parameters: int, started: str,
                       processes: int = 1,
                       launcher: str = "python -m transformer_lib") -> Path:
    """Write the record of one training run to ``path`` (JSON); ``argv``:
    the command line's arguments after ``launcher`` (``python -m
    transformer_lib``, or torchrun's: :func:`.distributed.launcher`)."""
    record = {
        "command": " ".join([launcher, *argv]),
        "recipe": recipe, "seed": seed, "processes": processes,
        "parameters": parameters,
        "started": started,
        "finished": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()),
        "machine": machine,
        "history": history_record(history),
    }
    return write_record(path, record)


def write_record(path, record: dict) -> Path:
    """``record`` as indented JSON, each list of numbers on one line."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(record, indent=1)
    text = re.sub(r"\[\s+([^\[\]{}]*?)\s+\]",
                  lambda m: "[" + " ".join(m.group(1).split()) + "]", text)
    path.write_text(text + "\n")
    return path
