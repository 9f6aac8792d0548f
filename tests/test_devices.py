"""The lines that choose a device and a precision, run on the CPU with stand-ins for a GPU.

No GPU runs in CI (docs/gpu.md, "What no CPU test runs"; the chapters ran on NVIDIA H200s and an
H100, docs/gpu.md). What a GPU changes before any
CUDA kernel runs is a handful of decisions: which device ``pick_device`` picks, what "auto"
precision means there (bf16, or float16 with loss scaling on a T4), what the doctor reports, and
the CUDA generator's state in a training checkpoint. These tests take those branches with torch's
CUDA queries replaced by stand-ins: a T4 (no bf16) and an A100 (bf16)."""

import pytest
import torch

from transformer_lib.instruments import checkup
from transformer_lib.translation import training
from transformer_lib.translation.training import (History, TrainConfig, autocast_dtype,
                                                  make_optimizer, pick_device,
                                                  save_training_state)

CUDA = torch.device("cuda")   # a device object; nothing runs on it


@pytest.fixture
def gpu(monkeypatch):
    """torch believes a CUDA GPU is there; ``gpu(bf16=...)`` says which kind."""
    monkeypatch.delenv("TRANSFORMER_LIB_PRECISION", raising=False)

    def lend(bf16: bool, name: str = "stand-in GPU"):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: bf16)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a, **k: name)
    return lend


def test_pick_device_prefers_cuda_then_mps_then_the_cpu(monkeypatch, gpu):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert pick_device() == torch.device("cpu")
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert pick_device() == torch.device("mps")
    gpu(bf16=False)
    assert pick_device() == CUDA
    assert pick_device("cpu") == torch.device("cpu")          # a named device wins


@pytest.mark.parametrize("bf16, expected", [(False, torch.float16), (True, torch.bfloat16)],
                         ids=["T4: float16, loss scaling", "A100: bf16"])
def test_auto_precision_on_a_gpu(gpu, bf16, expected):
    gpu(bf16=bf16)
    assert autocast_dtype("auto", CUDA) is expected
    assert autocast_dtype("float32", CUDA) is None            # an explicit choice stays
    # fit scales the loss exactly where the products run in float16
    scaler = torch.amp.GradScaler("cpu", enabled=autocast_dtype("auto", CUDA) is torch.float16)
    assert scaler.is_enabled() == (not bf16)


def test_auto_precision_on_a_cpu_without_native_bf16(monkeypatch):
    monkeypatch.delenv("TRANSFORMER_LIB_PRECISION", raising=False)
    monkeypatch.setattr(training, "cpu_has_native_bf16", lambda: False)
    assert autocast_dtype("auto", torch.device("cpu")) is None   # float32, as on a Zen 3
    assert autocast_dtype("auto", torch.device("mps")) is None


def test_the_doctor_names_the_gpu_and_its_precision(gpu, monkeypatch):
    gpu(bf16=False, name="Tesla T4")
    check = checkup.check_device()
    assert check.ok and check.detail == "cuda: fit trains in float16 autocast on Tesla T4"
    gpu(bf16=True, name="NVIDIA A100")
    assert checkup.check_device().detail == "cuda: fit trains in bfloat16 autocast on NVIDIA A100"
    monkeypatch.setenv("TRANSFORMER_LIB_PRECISION", "float32")
    assert checkup.check_device().detail == (
        "cuda: fit trains in float32 (forced by $TRANSFORMER_LIB_PRECISION)")


def test_a_training_state_on_a_gpu_keeps_the_cuda_generator(tmp_path, monkeypatch):
    cuda_state = torch.arange(16, dtype=torch.uint8)
    monkeypatch.setattr(torch.cuda, "get_rng_state", lambda device=None: cuda_state)
    model = torch.nn.Linear(3, 2)
    config = TrainConfig(epochs=1, device="cpu")
    optimizer = make_optimizer(model, config)
    scaler = torch.amp.GradScaler("cpu", enabled=True)
    path = tmp_path / "run.state"
    save_training_state(path, model, optimizer, scaler, config, step=0, epoch=0, running=0.0,
                        running_steps=0, history=History(), device=CUDA)
    saved = torch.load(path, weights_only=True)
    assert torch.equal(saved["cuda_rng"], cuda_state)
    assert saved["scaler"]["scale"] == scaler.get_scale()


def test_resuming_a_gpu_run_restores_its_cuda_generator(tmp_path, monkeypatch):
    # a CPU run stopped after its first epoch, its state given a CUDA generator's (as a GPU run
    # saves it): resuming hands that state back to torch.cuda
    from test_training import PAIRS, SRC_VOCAB, TGT_VOCAB, tiny_model
    from transformer_lib.translation import BatchLoader, fit

    class Stop(Exception):
        pass

    def stop_after_one_epoch(history):
        if len(history.validation) == 1:
            raise Stop

    state, config = tmp_path / "run.state", TrainConfig(epochs=2, lr=1e-3, device="cpu",
                                                        precision="float32")
    loader = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, batch_size=3, seed=0)
    val = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 6, shuffle=False)
    with pytest.raises(Stop):
        fit(tiny_model(), loader, val, config, progress=False, checkpoint=state,
            callback=stop_after_one_epoch)
    saved = torch.load(state, weights_only=True)
    cuda_state = torch.arange(16, dtype=torch.uint8)
    torch.save({**saved, "cuda_rng": cuda_state}, state)
    restored = []
    monkeypatch.setattr(torch.cuda, "set_rng_state",
                        lambda new_state, device=None: restored.append(new_state))
    history = fit(tiny_model(), loader, val, config, progress=False, checkpoint=state, resume=True)
    assert len(history.validation) == 2
    assert len(restored) == 1 and torch.equal(restored[0], cuda_state)


def kernels_allowed():
    backends = torch.backends.cuda
    return {"cudnn": backends.cudnn_sdp_enabled(), "flash": backends.flash_sdp_enabled(),
            "efficient": backends.mem_efficient_sdp_enabled(), "math": backends.math_sdp_enabled()}


@pytest.fixture
def attention_switches():
    """torch's switches for a GPU's fused attention kernels (setting them runs nothing), put
    back as they were after the test."""
    backends = torch.backends.cuda
    before = kernels_allowed()
    yield
    backends.enable_cudnn_sdp(before["cudnn"])
    backends.enable_flash_sdp(before["flash"])
    backends.enable_mem_efficient_sdp(before["efficient"])
    backends.enable_math_sdp(before["math"])


def test_on_a_gpu_attention_leaves_out_cudnn_only_inside_the_context(attention_switches):
    torch.backends.cuda.enable_cudnn_sdp(True)
    before = kernels_allowed()
    with training.attention_kernels_for_many_shapes(torch.device("cpu")):
        assert kernels_allowed() == before
    with training.attention_kernels_for_many_shapes(CUDA):
        assert kernels_allowed() == {**before, "cudnn": False}
    assert kernels_allowed() == before


def test_the_context_leaves_the_other_kernels_as_the_reader_set_them(attention_switches):
    torch.backends.cuda.enable_cudnn_sdp(True)
    torch.backends.cuda.enable_flash_sdp(False)        # say, switched off to debug
    with training.attention_kernels_for_many_shapes(CUDA):
        assert not kernels_allowed()["flash"] and not kernels_allowed()["cudnn"]
    assert kernels_allowed()["cudnn"] and not kernels_allowed()["flash"]
    torch.backends.cuda.enable_cudnn_sdp(False)        # off already: it stays off after
    with training.attention_kernels_for_many_shapes(CUDA):
        assert not kernels_allowed()["cudnn"]
    assert not kernels_allowed()["cudnn"]


def test_fit_trains_inside_that_context(monkeypatch, attention_switches):
    # fit asks for the context of its device; given CUDA's here (on a CPU model), its steps
    # run with cuDNN's attention left out, and the switches come back after it
    from test_training import PAIRS, SRC_VOCAB, TGT_VOCAB, tiny_model
    from transformer_lib.translation import BatchLoader, fit

    real = training.attention_kernels_for_many_shapes
    asked = []

    def as_on_a_gpu(device):
        asked.append(device)
        return real(CUDA)

    monkeypatch.setattr(training, "attention_kernels_for_many_shapes", as_on_a_gpu)
    torch.backends.cuda.enable_cudnn_sdp(True)
    seen = []
    config = TrainConfig(epochs=1, device="cpu", precision="float32", log_every=1)
    loader = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, batch_size=3, seed=0)
    fit(tiny_model(), loader, None, config, progress=False,
        callback=lambda history: seen.append(kernels_allowed()["cudnn"]))
    assert asked == [torch.device("cpu")]
    assert seen and not any(seen)
    assert kernels_allowed()["cudnn"]


def test_adamw_without_a_fused_kernel_falls_back_to_the_loop(monkeypatch):
    # a device whose torch has no fused AdamW (MPS in older releases) refuses fused=True
    real = torch.optim.AdamW

    def no_fused(params, fused=None, **options):
        if fused:
            raise RuntimeError("fused=True is not supported on this device")
        return real(params, **options)
    monkeypatch.setattr(torch.optim, "AdamW", no_fused)
    optimizer = make_optimizer(torch.nn.Linear(3, 2), TrainConfig(lr=1e-3, device="cpu"))
    assert isinstance(optimizer, real) and not optimizer.defaults["fused"]
    assert optimizer.defaults["lr"] == 1e-3


def test_on_a_cpu_in_bf16_attention_runs_the_math_kernel_only_inside_the_context(
        attention_switches):
    before = kernels_allowed()
    assert before["flash"] and before["math"]
    with training.attention_kernel_for_cpu_bf16(torch.device("cpu"), torch.bfloat16):
        assert not kernels_allowed()["flash"] and kernels_allowed()["math"]
    assert kernels_allowed() == before
    for device, dtype in [("cpu", None), ("cpu", torch.float16), (CUDA, torch.bfloat16)]:
        with training.attention_kernel_for_cpu_bf16(torch.device(device), dtype):
            assert kernels_allowed() == before


def test_fit_in_bf16_on_a_cpu_trains_with_the_math_kernel(attention_switches):
    from test_training import PAIRS, SRC_VOCAB, TGT_VOCAB, tiny_model
    from transformer_lib.translation import BatchLoader, fit

    seen = []
    config = TrainConfig(epochs=1, device="cpu", precision="bfloat16", log_every=1)
    loader = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, batch_size=3, seed=0)
    fit(tiny_model(), loader, None, config, progress=False,
        callback=lambda history: seen.append(kernels_allowed()["flash"]))
    assert seen and not any(seen)
    assert kernels_allowed()["flash"]
