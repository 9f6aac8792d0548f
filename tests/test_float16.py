"""Colab's T4 path, rehearsed on the CPU: float16 autocast with loss scaling.

A T4 has no bf16, so ``fit`` trains there in float16 and scales the loss with torch's
``GradScaler``. Both work on a CPU too (float16 matrix products are emulated there, about
1 GFLOP/s, so the models are tiny): the loss falls, an overflowing step is skipped while the scale
backs off, a resumed run carries the scaler's state, masked attention stays finite, and chapter 9's
gradient hooks, which would see scaled gradients, train in float32 as the chapter says."""

import math

import nbformat
import pytest
import torch

import transformer_lib as tl
from test_training import PAIRS, SRC_VOCAB, TGT_VOCAB, tiny_model
from transformer_lib.translation.data import BatchLoader
from transformer_lib.translation.training import TrainConfig, autocast, autocast_dtype, fit

from browser import ROOT

VAL = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 6, shuffle=False)


def float16(**changes):
    settings = dict(epochs=4, lr=3e-3, warmup_steps=3, label_smoothing=0.0, seed=0, log_every=1,
                    device="cpu", precision="float16")
    settings.update(changes)
    return TrainConfig(**settings)


def batches(batch_size=3):
    return BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, batch_size=batch_size, seed=0)


def poison_backward(model, call: int):
    """From now on, the ``call``-th backward pass puts inf into one gradient (as an overflow in
    float16 would); returns the list of calls seen."""
    calls = []

    def hook(grad):
        calls.append(1)
        return grad * math.inf if len(calls) == call else grad
    model.decoder.dense.weight.register_hook(hook)
    return calls


class AfterEachEpoch:
    """A fit callback that reads the training state fit saved at the end of each epoch."""

    def __init__(self, path):
        self.path, self.states = path, []

    def __call__(self, history):
        if len(history.validation) > len(self.states):     # an epoch's end, after the save
            self.states.append(torch.load(self.path, weights_only=True))


def test_float16_with_loss_scaling_learns_and_is_seeded():
    runs = [fit(tiny_model(), batches(), VAL, float16(epochs=30), progress=False)
            for _ in range(2)]
    history = runs[0]
    assert history.precision == "float16"
    assert all(math.isfinite(loss) for loss in history.train_loss)
    assert history.validation[-1].loss < 0.5 * history.validation[0].loss
    assert runs[0].train_loss == runs[1].train_loss                 # same seed, same numbers


def test_an_overflowing_step_is_skipped_and_the_scale_backs_off(tmp_path):
    model = tiny_model()
    poison_backward(model, call=3)                  # epoch 3's only step
    state = tmp_path / "run.state"
    seen = AfterEachEpoch(state)
    one_step_an_epoch = batches(batch_size=len(PAIRS))
    history = fit(model, one_step_an_epoch, VAL, float16(epochs=4), progress=False,
                  checkpoint=state, callback=seen)
    scales = [s["scaler"]["scale"] for s in seen.states]
    assert scales[0] == scales[1] == 2.0 ** 16                      # GradScaler's first scale
    assert scales[2] == scales[3] == scales[1] / 2                  # backed off once, by half
    before, skipped, after = (seen.states[i]["model"] for i in (1, 2, 3))
    for name in before:
        assert torch.equal(before[name], skipped[name]), name       # step 3 changed nothing
    assert any(not torch.equal(skipped[n], after[n]) for n in after)   # step 4 trained again
    assert all(torch.isfinite(w).all() for w in after.values())
    assert all(math.isfinite(loss) for loss in history.train_loss)  # the loss itself was finite


def test_a_resumed_float16_run_keeps_the_scalers_state(tmp_path):
    config = float16(epochs=4)                                      # 2 steps an epoch
    whole = tiny_model(dropout=0.2)
    poison_backward(whole, call=3)                                  # epoch 2: the scale halves
    expected = fit(whole, batches(), VAL, config, progress=False,
                   checkpoint=tmp_path / "whole.state")

    def ctrl_c_in_epoch_3(history):
        if history.steps and history.steps[-1] == 5:
            raise KeyboardInterrupt
    state = tmp_path / "run.state"
    interrupted = tiny_model(dropout=0.2)
    poison_backward(interrupted, call=3)
    with pytest.raises(KeyboardInterrupt):
        fit(interrupted, batches(), VAL, config, progress=False, checkpoint=state,
            callback=ctrl_c_in_epoch_3)
    assert torch.load(state, weights_only=True)["scaler"]["scale"] == 2.0 ** 15
    resumed = tiny_model(seed=99, dropout=0.2)                      # other weights, no poison
    history = fit(resumed, batches(), VAL, config, progress=False, checkpoint=state, resume=True)
    for (name, a), b in zip(whole.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name                              # bit for bit
    assert history.train_loss == expected.train_loss
    ends = [torch.load(p, weights_only=True)["scaler"] for p in (tmp_path / "whole.state", state)]
    assert ends[0] == ends[1] and ends[0]["scale"] == 2.0 ** 15


def test_masked_attention_in_float16_stays_finite_in_training_and_inference():
    # PAIRS differ in length: every batch pads, and the attention masks the padding
    model = tiny_model(num_enc_blks=2, num_dec_blks=2)
    history = fit(model, batches(), VAL, float16(epochs=10), progress=False)
    assert all(math.isfinite(loss) for loss in history.train_loss)
    assert all(torch.isfinite(p).all() for p in model.parameters())
    batch = next(iter(VAL))
    model.eval()
    with torch.no_grad():
        with autocast(torch.device("cpu"), torch.float16):
            low = model(batch.src, batch.tgt_in, batch.src_valid_lens)
        full = model(batch.src, batch.tgt_in, batch.src_valid_lens)
    assert low.dtype == torch.float16 and torch.isfinite(low).all()
    assert (low.float() - full).abs().max() < 0.05 * full.abs().max()
    # one source of a single real token: a row of one unmasked key
    src = torch.full((1, 5), SRC_VOCAB.pad)
    src[0, 0] = SRC_VOCAB["go"]
    with torch.no_grad(), autocast(torch.device("cpu"), torch.float16):
        one = model(src, batch.tgt_in[:1], torch.tensor([1]))
    assert torch.isfinite(one).all()


def _chapter_9s_precision_rule():
    """The lines of chapter 9 that choose the post-norm/pre-norm runs' precision."""
    notebook = nbformat.read(ROOT / "notebooks" / "09_experiments.ipynb", as_version=4)
    [cell] = [c.source for c in notebook.cells if "PN_PRECISION =" in c.source]
    lines = [line for line in cell.splitlines()
             if line.startswith(("uses_float16 =", "PN_PRECISION ="))]
    assert len(lines) == 2, lines
    return "\n".join(lines)


def test_chapter_9s_gradient_hooks_train_in_float32_where_auto_means_float16(monkeypatch):
    # The hooks read each gradient as it accumulates: with loss scaling, scaled by 2^16.
    def first_step_norms(precision):
        model = tiny_model()
        blocks = [*model.encoder.blks, *model.decoder.blks]
        with tl.record_gradient_norms(blocks) as norms:
            history = fit(model, batches(), None, float16(epochs=1, precision=precision),
                          progress=False)
        return norms.per_step[0], history.precision

    scaled, precision = first_step_norms("float16")
    true, _ = first_step_norms("float32")
    assert precision == "float16"
    ratio = scaled / true
    assert abs(ratio / 2.0 ** 16 - 1).max() < 0.02, ratio
    # where "auto" means float16 (a T4; here forced), chapter 9 asks for float32
    monkeypatch.setenv("TRANSFORMER_LIB_PRECISION", "float16")
    scope = dict(autocast_dtype=autocast_dtype, torch=torch, device=torch.device("cpu"))
    exec(_chapter_9s_precision_rule(), scope)
    assert scope["uses_float16"] and scope["PN_PRECISION"] == "float32"
    norms, precision = first_step_norms(scope["PN_PRECISION"])
    assert precision == "float32"
    assert (norms == true).all()                                    # the true gradients
    monkeypatch.delenv("TRANSFORMER_LIB_PRECISION")
    scope = dict(autocast_dtype=autocast_dtype, torch=torch, device=torch.device("cpu"))
    exec(_chapter_9s_precision_rule(), scope)
    assert scope["PN_PRECISION"] == "auto"                          # elsewhere, unchanged


def test_auto_precision_that_means_float16_computes_in_it_and_scales_the_loss(tmp_path, monkeypatch):
    # what "auto" does on a T4 (no bf16): the products in float16, the loss scaled
    monkeypatch.setenv("TRANSFORMER_LIB_PRECISION", "float16")
    model, logits_dtypes = tiny_model(), set()
    model.decoder.dense.register_forward_hook(
        lambda layer, inputs, out: logits_dtypes.add(out.dtype) if layer.training else None)
    state = tmp_path / "state.pt"
    history = fit(model, batches(), VAL, float16(epochs=1, precision="auto"), progress=False,
                  checkpoint=state)
    assert history.precision == "float16" and logits_dtypes == {torch.float16}
    scaler = torch.load(state, weights_only=True)["scaler"]
    assert scaler["scale"] == 2.0 ** 16           # GradScaler's start; a disabled one saves {}
