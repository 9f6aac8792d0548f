"""The book's published translator: the ``everyday`` recipe's model,
trained once (``make everyday``) and shipped with the package, so that a
fresh clone, a pip install and Colab use it without training.

``everyday/`` holds ``model.pt`` (an int8 checkpoint with its subword
vocabulary), ``log.json`` (the command, seed, versions, machine and time
of the training run, its losses, and the measurements that chose the
weights' precision) and ``SHA256SUMS``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

EVERYDAY_DIR = Path(__file__).resolve().parent / "everyday"
EVERYDAY_FILES = ("model.pt", "log.json")
CHECKSUMS = "SHA256SUMS"


def sha256_of(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def check_published(directory=EVERYDAY_DIR) -> dict:
    """``{file: sha256}`` of the published files, after checking them
    against ``SHA256SUMS``; a missing or altered file (e.g. a Git LFS
    pointer instead of the weights) raises ``ValueError`` naming it."""
    directory = Path(directory)
    listed = {}
    sums = directory / CHECKSUMS
    if not sums.is_file():
        raise ValueError(f"{sums} is missing: the published model's "
                         f"files cannot be checked (`make everyday` "
                         f"writes them)")
    for line in sums.read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        listed[name.lstrip("*")] = digest
    if sorted(listed) != sorted(EVERYDAY_FILES):
        raise ValueError(f"{sums} lists {sorted(listed)}, expected "
                         f"{sorted(EVERYDAY_FILES)}")
    for name, digest in listed.items():
        path = directory / name
        if not path.is_file():
            raise ValueError(f"{path} is missing")
        if sha256_of(path) != digest:
            raise ValueError(f"{path} does not match its SHA-256 in "
                             f"{sums}: altered, truncated, or a Git LFS "
                             f"pointer instead of the file")
    return listed


def everyday_log(directory=EVERYDAY_DIR) -> dict:
    """The published model's record (``log.json``): how it was trained,
    on what, how long, its losses, and its precision's measurements."""
    return json.loads((Path(directory) / "log.json").read_text())


def everyday_checkpoint(directory=EVERYDAY_DIR) -> Path:
    """The published model's checkpoint file, after checking the files'
    checksums (:func:`check_published`)."""
    check_published(directory)
    return Path(directory) / "model.pt"


def load_everyday(device=None, directory=EVERYDAY_DIR):
    """``(model, vocab)``: the published model (in evaluation mode, on
    ``device``, default CPU) and its subword vocabulary, one for both
    languages, after checking the files' checksums."""
    from .checkpoint import load_checkpoint

    model, vocab, _, _ = load_checkpoint(everyday_checkpoint(directory),
                                         device)
    return model, vocab
