"""Value checks run once per call of an entry point (the model's and the
stacks' forward, decoding, fit), never inside the layers; and nothing
inside the layers reads a tensor on the host (on a GPU, each read would be
a synchronisation)."""

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

import transformer_lib as tl
from transformer_lib import _checks
from transformer_lib.translation.data import BatchLoader, Vocab
from transformer_lib.translation.training import TrainConfig, fit

SRC_VOCAB, TGT_VOCAB = 30, 25


def model_with(blocks: int):
    torch.manual_seed(0)
    config = tl.TransformerConfig(SRC_VOCAB, TGT_VOCAB, num_hiddens=16,
                                  ffn_num_hiddens=32, num_heads=4,
                                  num_enc_blks=blocks, num_dec_blks=blocks)
    return tl.Transformer(config).eval()


@pytest.fixture
def value_checks(monkeypatch):
    """The shapes of the tensors whose values were checked, in order."""
    checked = []
    real = _checks.out_of_range

    def counting(x, low, high):
        checked.append(tuple(x.shape))
        return real(x, low, high)

    monkeypatch.setattr(_checks, "out_of_range", counting)
    return checked


@pytest.fixture
def host_reads(monkeypatch):
    """Every Python-level read of a tensor's value (bool, int, float,
    item, tolist)."""
    reads = []
    for name in ("__bool__", "__int__", "__float__", "__index__", "item",
                 "tolist"):
        real = getattr(torch.Tensor, name)

        def counting(self, *args, _real=real, _name=name, **kwargs):
            reads.append(_name)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(torch.Tensor, name, counting)
    return reads


SRC = torch.randint(0, SRC_VOCAB, (3, 6))
TGT = torch.randint(0, TGT_VOCAB, (3, 5))
LENS = torch.tensor([6, 2, 4])


@pytest.mark.parametrize("blocks", [1, 4])
def test_a_model_call_checks_each_input_once(blocks, value_checks,
                                             host_reads):
    model_with(blocks)(SRC, TGT, LENS)
    assert value_checks == [(3, 6), (3,), (3, 5)]  # src, lengths, tgt
    assert host_reads == ["__bool__"] * 3          # one read per check


class SyncingOps(TorchDispatchMode):
    """The aten operators that make a GPU wait for the host: a value read
    into Python, or an output whose size depends on the values (nonzero,
    and indexing with a boolean mask, which calls it)."""

    SYNCING = {torch.ops.aten._local_scalar_dense.default, torch.ops.aten.nonzero.default,
               torch.ops.aten.equal.default, torch.ops.aten.is_nonzero.default,
               torch.ops.aten.masked_select.default}

    def __init__(self):
        super().__init__()
        self.seen = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        indexed_by_mask = func.overloadpacket in (torch.ops.aten.index, torch.ops.aten.index_put,
                                                  torch.ops.aten.index_put_) and any(
            i is not None and i.dtype == torch.bool for i in (args[1] if len(args) > 1 else []))
        if func in self.SYNCING or indexed_by_mask:
            self.seen.append(str(func))
        return func(*args, **kwargs)


@pytest.mark.parametrize("blocks", [1, 4])
def test_inside_the_model_nothing_is_checked_or_read(blocks, value_checks,
                                                     host_reads):
    model = model_with(blocks)
    with torch.no_grad(), SyncingOps() as syncing:
        model.logits(SRC, TGT, LENS)
        memory = model.encoder.encode(SRC, LENS)
        cache = model.decoder.init_cache()
        for t in range(TGT.shape[1]):
            model.decoder.decode(TGT[:, t:t + 1], memory, LENS, cache=cache)
    assert value_checks == [] and host_reads == [] and syncing.seen == []


def test_a_boolean_mask_index_is_seen_as_a_sync():
    with SyncingOps() as syncing:
        x = torch.randn(3, 4)
        x[x > 0] = 0.0
        (x != 0).nonzero()
    assert len(syncing.seen) == 2


def test_the_stacks_check_their_own_inputs_once(value_checks):
    model = model_with(3)
    memory = model.encoder(SRC, LENS)
    assert value_checks == [(3, 6), (3,)]
    model.decoder(TGT, memory, LENS)
    assert value_checks[2:] == [(3, 5), (3,)]


@pytest.mark.parametrize("steps", [3, 12])
def test_decoding_checks_once_whatever_the_number_of_steps(steps,
                                                           value_checks):
    model = model_with(2)
    out = tl.greedy_decode(model, SRC, LENS, bos_id=1, max_len=steps)
    assert out.shape == (3, steps) and value_checks == [(3, 6), (3,)]
    value_checks.clear()
    tl.beam_search(model, SRC, LENS, bos_id=1, eos_id=2, max_len=steps)
    assert value_checks == [(3, 6), (3,)]


def test_fit_checks_each_batch_once_on_the_host(value_checks):
    pairs = [(["a", "b"], ["x"]), (["c"], ["y", "z"]), (["a"], ["x", "y"])]
    src_vocab = Vocab([s for s, _ in pairs])
    tgt_vocab = Vocab([t for _, t in pairs])
    torch.manual_seed(0)
    model = tl.Transformer(tl.TransformerConfig(
        len(src_vocab), len(tgt_vocab), num_hiddens=16, ffn_num_hiddens=32,
        num_enc_blks=3, num_dec_blks=3))
    loader = BatchLoader(pairs, src_vocab, tgt_vocab, batch_size=1)
    fit(model, loader, None, TrainConfig(epochs=2, device="cpu"),
        progress=False)
    assert len(value_checks) == 3 * 2 * len(pairs)  # 3 per batch and step
