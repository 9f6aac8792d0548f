"""Checkers for chapter 7, the first trained model: the label-smoothed
loss, greedy decoding and one epoch of the training loop.

What the reader writes:

    sequence_loss(logits, labels, pad_id, label_smoothing)
        logits (B, T, V), labels (B, T) -> a scalar: the mean over the
        labels that are not pad_id of the cross-entropy against the
        smoothed target q = (1 - eps) onehot(y) + eps / V.
    greedy_decode(model, src, src_valid_lens, bos_id, eos_id, pad_id,
                  max_len)
        through model.logits(src, tgt, src_valid_lens) -> (B, t, V)
        alone: (B, n) ids, n <= max_len, without the leading bos_id;
        a row that has written eos_id holds eos_id after it; stops
        once every row has written eos_id; never writes bos_id or
        pad_id.
    train_epoch(model, loader, optimizer, config, epoch, total_steps)
        one pass over the loader's batches, as fit makes its epochs:
        the same steps as fit's (mode, batch, rate, gradients) and the
        same weights after them (bit for bit on a CPU with the library's
        sequence_loss; the checker allows 1e-6).

The checkers call the reader's function with keyword arguments for
everything after its first arguments (``pad_id=``, ``max_len=``, ...),
so the order of those in the reader's signature does not matter.
"""

from __future__ import annotations

import contextlib
import math
import random

import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.optimizer import register_optimizer_step_pre_hook

from ...model import Transformer, TransformerConfig
from ...translation.data import BatchLoader, Vocab
from ...translation.decoding import greedy_decode as library_greedy
from ...translation.reversal import DIGITS, reversal_pairs
from ...translation.training import TrainConfig, fit, make_optimizer
from .core import (Case, Checker, Mismatch, expect_close, expect_tensor,
                   generator, number, random_tensor, seeded)


@contextlib.contextmanager
def _one_thread():
    """torch on one thread inside: a tiny model's steps run ten times
    faster than on two threads that other work keeps busy."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


# --- sequence_loss ---------------------------------------------------------

def _expected_loss(logits, labels, pad_id, eps) -> torch.Tensor:
    """The mean of -sum_j q_j log softmax(z)_j over the real tokens."""
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1),
                           ignore_index=pad_id, label_smoothing=eps)


def _loss_inputs(B, T, V, real, pad_id=0, seed=0, scale=1.0):
    """Logits (B, T, V) and labels (B, T): ``real[b]`` real tokens at the
    start of row b (never the id pad_id), padding after them."""
    logits = random_tensor((B, T, V), seed, scale=scale)
    others = [i for i in range(V) if i != pad_id]
    picks = torch.randint(len(others), (B, T),
                          generator=generator(seed + 1))
    labels = torch.tensor(others)[picks]
    for b, n in enumerate(real):
        labels[b, n:] = pad_id
    return logits, labels


def _describe_labels(labels, pad_id) -> str:
    counts = (labels != pad_id).sum(dim=1).tolist()
    return f"real tokens per row {counts} of {labels.shape[1]}"


def _loss_case(B, T, V, real, eps, pad_id=0, seed=0, scale=1.0):
    def run(sequence_loss):
        logits, labels = _loss_inputs(B, T, V, real, pad_id, seed, scale)
        got = sequence_loss(logits.clone(), labels.clone(), pad_id=pad_id,
                            label_smoothing=eps)
        expect_tensor(got, "the loss", ())
        want = _expected_loss(logits, labels, pad_id, eps)
        if torch.isclose(got.detach().float(), want, atol=1e-5, rtol=1e-4):
            return
        wrong = (f"the loss should be {number(want.item())}, got "
                 f"{number(got.item())}")
        if not torch.isfinite(got) and scale > 10:
            raise Mismatch(f"{wrong}: log(softmax(z)) underflows to -inf "
                           f"where log_softmax(z) does not")
        raise Mismatch(f"{wrong} ({_describe_labels(labels, pad_id)}, "
                       f"label_smoothing={eps}, V = {V})")
    return run


def _loss_gradient(sequence_loss):
    eps, pad_id = 0.1, 0
    logits, labels = _loss_inputs(3, 4, 6, [2, 2, 2], pad_id, seed=7)
    mine = logits.clone().requires_grad_()
    loss = sequence_loss(mine, labels.clone(), pad_id=pad_id,
                         label_smoothing=eps)
    expect_tensor(loss, "the loss", ())
    if not loss.requires_grad:
        raise Mismatch("the loss does not depend on the logits for "
                       "autograd (was it computed under torch.no_grad(), "
                       "from .detach(), or through .item()?)")
    loss.backward()
    if mine.grad is None:
        raise Mismatch("no gradient reached the logits")
    reference = logits.clone().requires_grad_()
    _expected_loss(reference, labels, pad_id, eps).backward()
    padding = labels == pad_id
    if (mine.grad[padding] != 0).any():
        raise Mismatch("a padding position gets a nonzero gradient; "
                       "padding must not count")
    expect_close(mine.grad, reference.grad,
                 "the gradient with respect to the logits")


# logits (B, T, V).  Every case but the first smooths with the paper's
# 0.1, and only the second has rows without padding, so that a loss
# that ignores label_smoothing, or that finds a row's length at its first
# <pad>, fails one case alone (tests/bugs_training.py).
SEQUENCE_LOSS_CASES = [
    Case("no smoothing, every row ending in padding",
         _loss_case(2, 5, 7, [3, 3], eps=0.0)),
    Case("label smoothing 0.1, no padding",
         _loss_case(2, 4, 7, [4, 4], eps=0.1, seed=1)),
    Case("rows with different numbers of real tokens",
         _loss_case(3, 5, 7, [1, 4, 2], eps=0.1, seed=2)),
    Case("a batch that is all padding except one token",
         _loss_case(3, 4, 7, [1, 0, 0], eps=0.1, seed=3)),
    Case("padding with another id (pad_id=5)",
         _loss_case(2, 5, 7, [3, 3], eps=0.1, pad_id=5, seed=4)),
    Case("large logits, around 100 (a confident model)",
         _loss_case(2, 4, 7, [3, 3], eps=0.1, seed=5, scale=100.0)),
    Case("the gradient with respect to the logits", _loss_gradient),
]

# check_sequence_loss(sequence_loss), the reader's
#     sequence_loss(logits, labels, pad_id, label_smoothing)
# logits (B, T, V) float, labels (B, T) ids -> a scalar tensor.
check_sequence_loss = Checker(7, "sequence_loss", SEQUENCE_LOSS_CASES)


# --- greedy_decode ---------------------------------------------------------

PAD, BOS, EOS = Vocab.pad, Vocab.bos, Vocab.eos     # 0, 1, 2
AFTER_EOS = 9   # what a scripted row favours once its script is over


def _step_logits(choice, V) -> torch.Tensor:
    """One position's logits (V,): ``choice`` is the token to favour, or
    a dict {token: logit} over a gentle slope (no ties)."""
    logits = -0.01 * torch.arange(V, dtype=torch.float32)
    for token, value in ({choice: 3.0} if isinstance(choice, int)
                         else choice).items():
        logits[token] = value
    return logits


class ScriptedModel(nn.Module):
    """A stand-in for a trained model whose choices are known: at
    position t of row b, ``model.logits`` favours ``scripts[b][t]`` (the
    token of step t + 1), or AFTER_EOS once the script is over, whatever
    the decoder's input holds.  It checks the input it is given, as a
    decoder needs it."""

    def __init__(self, scripts, max_len: int, vocab_size: int = 12):
        super().__init__()
        self.scripts, self.max_len = scripts, max_len
        self.vocab_size = vocab_size

    def check_inputs(self, src, tgt=None, src_valid_lens=None) -> None:
        """(what tl.translation.greedy_decode_uncached asks of a model)"""

    def logits(self, src, tgt, src_valid_lens=None):
        if not isinstance(tgt, torch.Tensor) or tgt.dim() != 2:
            raise Mismatch(f"model.logits should get the decoder's input "
                           f"as a (B, t) tensor of ids, got "
                           f"{getattr(tgt, 'shape', type(tgt).__name__)}")
        B, t = tgt.shape
        if B != len(self.scripts):
            raise Mismatch(f"model.logits got {B} rows in tgt, expected "
                           f"{len(self.scripts)}, one per source")
        if t > self.max_len:
            raise Mismatch(f"model.logits got {t} tokens of the decoder's "
                           f"input: more than max_len = {self.max_len} "
                           f"steps were run")
        if (tgt[:, 0] != BOS).any():
            raise Mismatch(f"the decoder's input should start with <bos> "
                           f"({BOS}) in every row, got {tgt[:, 0].tolist()}")
        V = self.vocab_size
        return torch.stack([
            torch.stack([_step_logits(script[p] if p < len(script)
                                      else AFTER_EOS, V)
                         for p in range(t)])
            for script in self.scripts])                 # (B, t, V)

    forward = logits


def _token(i: int, eos_id: int = EOS) -> str:
    names = {PAD: "<pad>", BOS: "<bos>", eos_id: "<eos>"}
    return f"{names[i]} ({i})" if i in names else f"token {i}"


def _expect_answer(got, want, max_len, eos_id=EOS) -> None:
    """``got`` must be ``want`` (B, n): the first wrong token is named."""
    B, n = want.shape
    if not isinstance(got, torch.Tensor):
        raise Mismatch(f"the answer should be a tensor of ids of shape "
                       f"{(B, n)}, got {type(got).__name__}")
    if got.dim() != 2 or got.shape[0] != B:
        raise Mismatch(f"the answer should have shape (B, n) = {(B, n)}, "
                       f"got {tuple(got.shape)}")
    if got.is_floating_point() or got.dtype == torch.bool:
        raise Mismatch(f"the answer should hold token ids (integers), got "
                       f"{got.dtype}")
    if got.shape[1] == n + 1 and (got[:, 0] == BOS).all():
        raise Mismatch(f"the answer starts with <bos> ({BOS}): return the "
                       f"tokens after it, shape {(B, n)}")
    for step in range(min(n, got.shape[1])):
        for b in range(B):
            mine, right = int(got[b, step]), int(want[b, step])
            if mine != right:
                _wrong_token(b, step, mine, right, want[b], eos_id)
    ended = (want == eos_id).any(dim=1)
    if got.shape[1] > n:
        raise Mismatch(f"the answer has {got.shape[1]} steps; it should "
                       f"stop after step {n}, where every row has "
                       f"written <eos>")
    if got.shape[1] < n:
        open_rows = (~(got == eos_id).any(dim=1)).nonzero()
        row = int(open_rows[0]) if len(open_rows) else 0
        until = ("max_len" if n == max_len and not ended.all()
                 else "every row has written <eos>")
        raise Mismatch(f"the answer stops after step {got.shape[1]}, but "
                       f"row {row} has not written <eos> by then: go on "
                       f"until {until} (here {n} steps)")


def _wrong_token(b, step, mine, right, want_row, eos_id) -> None:
    where = f"row {b}, step {step + 1}"
    got, expected = _token(mine, eos_id), _token(right, eos_id)
    if mine in (BOS, PAD) and mine != eos_id:
        raise Mismatch(f"{where}: expected {expected}, got {got}, which "
                       f"is never written")
    if (want_row[:step] == eos_id).any():
        ended = int((want_row == eos_id).nonzero()[0]) + 1
        raise Mismatch(f"{where}: expected <eos>, got {got}; the row "
                       f"wrote <eos> at step {ended}, and a row that has "
                       f"ended holds <eos>")
    raise Mismatch(f"{where}: expected {expected} (the largest logit at "
                   f"the last position), got {got}")


def _scripted_case(scripts, max_len, want):
    def run(greedy_decode):
        model = ScriptedModel(scripts, max_len)
        B = len(scripts)
        src = torch.full((B, 3), 5)
        lens = torch.full((B,), 3)
        got = greedy_decode(model, src, lens, bos_id=BOS, eos_id=EOS,
                            pad_id=PAD, max_len=max_len)
        _expect_answer(got, torch.tensor(want), max_len)
    return run


def _random_transformer():
    """A small random Transformer with dropout, its sources and the id
    its answers never reach (as eos_id: no row ends)."""
    config = TransformerConfig(12, 12, num_hiddens=16, ffn_num_hiddens=32,
                               num_heads=2, num_enc_blks=1, num_dec_blks=1,
                               dropout=0.3, max_len=16)
    with seeded(10):
        model = Transformer(config)
    src = torch.randint(3, 12, (3, 6), generator=generator(4))
    lens = torch.tensor([6, 4, 2])
    written = library_greedy(model, src, lens, bos_id=BOS, pad_id=PAD,
                             max_len=8)
    eos_id = next(i for i in range(3, 12) if not (written == i).any())
    return model, src, lens, eos_id


def _transformer_case(greedy_decode):
    model, src, lens, eos_id = _random_transformer()
    want = library_greedy(model, src, lens, bos_id=BOS, eos_id=eos_id,
                          pad_id=PAD, max_len=8)
    calls = []                   # (training mode, src_valid_lens given)
    library_logits = model.logits

    def logits(src, tgt, src_valid_lens=None):
        calls.append((model.training, src_valid_lens is not None))
        return library_logits(src, tgt, src_valid_lens)

    model.logits = logits
    model.train()                                  # dropout on
    with seeded(5):                     # dropout, if it is left on
        got = greedy_decode(model, src.clone(), lens.clone(), bos_id=BOS,
                            eos_id=eos_id, pad_id=PAD, max_len=8)
    if any(training for training, _ in calls):
        raise Mismatch("model.logits ran in training mode, with dropout "
                       "on: decode after model.eval()")
    if not all(given for _, given in calls):
        raise Mismatch("model.logits got no src_valid_lens: the "
                       "sources' padding was attended to")
    try:
        _expect_answer(got, want, 8, eos_id)
    except Mismatch as wrong:
        raise Mismatch(f"{wrong} (tl.greedy_decode's answer: "
                       f"{want.tolist()}, with eos_id={eos_id})") from None


E = EOS  # short, for the scripts below
GREEDY_CASES = [
    # rows [5 6 <eos>] and [7 4 <eos>]; max_len leaves room for more
    Case("every row ends at the same step",
         _scripted_case([[5, 6, E], [7, 4, E]], max_len=6,
                        want=[[5, 6, E], [7, 4, E]])),
    # ends at steps 2, 3 and 5; after <eos> the model favours token 9
    Case("rows that end at different steps, the last at max_len",
         _scripted_case([[3, E], [4, 8, E], [6, 5, 7, 3, E]], max_len=5,
                        want=[[3, E, E, E, E], [4, 8, E, E, E],
                              [6, 5, 7, 3, E]])),
    Case("a step where <bos> has the largest logit",
         _scripted_case([[4, {BOS: 5.0, 6: 3.0}, 8, 5]], max_len=4,
                        want=[[4, 6, 8, 5]])),
    Case("a step where <pad> has the largest logit",
         _scripted_case([[6, {PAD: 5.0, 3: 3.0}, E], [5, 7, E]],
                        max_len=3, want=[[6, 3, E], [5, 7, E]])),
    Case("a small random Transformer handed over in training mode, "
         "no row ending", _transformer_case),
]

# check_greedy_decode(greedy_decode), the reader's
#     greedy_decode(model, src, src_valid_lens, bos_id, eos_id, pad_id,
#                   max_len)
# called with keywords after src_valid_lens; src (B, S), src_valid_lens
# (B,) -> (B, n) ids.
check_greedy_decode = Checker(7, "greedy_decode", GREEDY_CASES)


# --- train_epoch -----------------------------------------------------------

def _toy_loader(shuffle: bool) -> BatchLoader:
    """Chapter 7's task, small: 24 pairs of 2 to 5 digits and their
    reversal, in 3 batches of 8 (a new loader for every run)."""
    pairs = reversal_pairs(24, random.Random(0), 2, 5)
    vocab = Vocab([DIGITS])
    return BatchLoader(pairs, vocab, vocab, 8, shuffle=shuffle, seed=0)


def _toy_model(training: bool) -> Transformer:
    """A tiny Transformer with dropout, always from the same weights."""
    V = len(Vocab([DIGITS]))
    config = TransformerConfig(V, V, num_hiddens=16, ffn_num_hiddens=32,
                               num_heads=2, num_enc_blks=1, num_dec_blks=1,
                               dropout=0.2, max_len=16)
    with seeded(0):
        model = Transformer(config)
    return model.train(training)


@contextlib.contextmanager
def _recorded(model):
    """What each training step did: ``steps`` (the optimizer's rate and
    the gradients, flattened, as it steps) and ``calls`` (the model's
    mode and the source batch at each ``model.logits``)."""
    steps, calls = [], []
    library_logits = model.logits

    def logits(src, tgt, src_valid_lens=None):
        calls.append((model.training, src.clone()))
        return library_logits(src, tgt, src_valid_lens)

    def before_step(optimizer, args, kwargs):
        grads = [torch.zeros_like(p) if p.grad is None else p.grad
                 for group in optimizer.param_groups
                 for p in group["params"]]
        flat = torch.cat([g.detach().flatten() for g in grads])
        steps.append((optimizer.param_groups[0]["lr"], flat))

    model.logits = logits
    hook = register_optimizer_step_pre_hook(before_step)
    try:
        yield steps, calls
    finally:
        hook.remove()


_FIT_RUNS = {}   # fit's runs, the same for every answer: made once


def _fit_run(config, shuffle, training):
    key = (repr(config), shuffle, training)
    if key not in _FIT_RUNS:
        model = _toy_model(training)
        with _recorded(model) as (steps, calls):
            fit(model, _toy_loader(shuffle), None, config, progress=False)
        _FIT_RUNS[key] = model.state_dict(), steps, calls
    return _FIT_RUNS[key]


def _reader_run(train_epoch, config, shuffle, training):
    model = _toy_model(training)
    loader = _toy_loader(shuffle)
    optimizer = make_optimizer(model, config)
    total_steps = config.epochs * len(loader)
    # fit seeds the dropout's draws with config.seed, on a copy of torch's
    # generator: the same draws here
    with seeded(config.seed), _recorded(model) as (steps, calls):
        for epoch in range(config.epochs):
            train_epoch(model, loader, optimizer, config, epoch,
                        total_steps)
    return model.state_dict(), steps, calls


def _compare_step(k, mine, theirs, config, per_epoch) -> None:
    """Step k (from 0) of the reader's loop against fit's."""
    (lr, grad), (training, src) = mine
    (fit_lr, fit_grad), (_, fit_src) = theirs
    where = f"step {k + 1} (epoch {k // per_epoch}, batch {k % per_epoch})"
    if not training:
        raise Mismatch(f"{where}: the model ran in eval mode, dropout off; "
                       f"fit trains in training mode: call model.train()")
    if not torch.equal(src, fit_src):
        raise Mismatch(f"{where}: another batch than fit's (fit calls "
                       f"loader.set_epoch(epoch) before each epoch, for "
                       f"that epoch's order of the batches)")
    if not math.isclose(lr, fit_lr, rel_tol=1e-9):
        raise Mismatch(f"{where}: learning rate {number(lr)}, fit's "
                       f"{number(fit_lr)} (learning_rate(config, step, "
                       f"step / total_steps), step counted from 0 over "
                       f"all epochs)")
    norm = torch.linalg.vector_norm(grad).item()
    if norm > config.clip_norm * (1 + 1e-5):
        raise Mismatch(f"{where}: the gradients' norm is {number(norm)} "
                       f"when the optimizer steps, above clip_norm = "
                       f"{config.clip_norm}: clip it after backward")
    # 1e-3: the same loss computed another way differs in the last bits
    if not torch.allclose(grad, fit_grad, rtol=1e-3, atol=1e-6):
        raise Mismatch(f"{where}: the gradients differ from fit's when the "
                       f"optimizer steps (by up to "
                       f"{number((grad - fit_grad).abs().max().item())}): "
                       f"are the previous step's gradients cleared?")


def _epoch_case(epochs, shuffle=True, training=True, **settings):
    # no clipping (clip_norm=inf) unless asked; a warm-up of 3 steps
    config = TrainConfig(**{**dict(
        epochs=epochs, lr=1e-2, warmup_steps=3, seed=0, device="cpu",
        precision="float32", clip_norm=math.inf), **settings})

    def run(train_epoch):
        with _one_thread():
            mine, my_steps, my_calls = _reader_run(train_epoch, config,
                                                   shuffle, training)
            fits, fit_steps, fit_calls = _fit_run(config, shuffle,
                                                  training)
        per_epoch = len(fit_steps) // epochs
        if len(my_steps) != len(fit_steps):
            raise Mismatch(f"{len(my_steps)} optimizer steps in "
                           f"{epochs} epoch{'s' * (epochs > 1)}, fit's "
                           f"{len(fit_steps)}: one per batch")
        if len(my_calls) != len(fit_calls):
            raise Mismatch(f"model.logits ran {len(my_calls)} times, in "
                           f"fit {len(fit_calls)}: once per batch")
        for k, (mine_k, theirs_k) in enumerate(
                zip(zip(my_steps, my_calls), zip(fit_steps, fit_calls))):
            _compare_step(k, mine_k, theirs_k, config, per_epoch)
        # The same steps give the same weights, bit for bit on a CPU with
        # sequence_loss; the tolerance lets through the same loss computed
        # another way (F.cross_entropy: 1e-7 apart after an epoch).
        for name, weight in mine.items():
            if not torch.allclose(weight, fits[name], atol=1e-6,
                                  rtol=1e-5):
                gap = (weight - fits[name]).abs().max().item()
                raise Mismatch(f"after the last epoch, {name} differs "
                               f"from fit's by up to {number(gap)}")
    return run


TRAIN_EPOCH_CASES = [
    Case("one epoch, the gradients clipped to norm 0.5",
         _epoch_case(1, clip_norm=0.5)),
    Case("one epoch of a model handed over in eval mode (with dropout)",
         _epoch_case(1, training=False)),
    Case("two epochs at a constant rate (a new order of the batches)",
         _epoch_case(2, schedule="constant", warmup_steps=0)),
    Case("two epochs of a warm-up and decay, the batches in one order",
         _epoch_case(2, shuffle=False)),
]

# check_train_epoch(train_epoch), the reader's
#     train_epoch(model, loader, optimizer, config, epoch, total_steps)
# run for each epoch from the same weights as fit, compared with fit's
# steps (mode, batch, rate, gradients' norm) and final weights.
check_train_epoch = Checker(7, "train_epoch", TRAIN_EPOCH_CASES)
