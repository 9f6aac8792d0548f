"""head_confidence: each head's mean largest weight (Voita et al.), checked against a plain loop
over sentences and queries."""

from types import SimpleNamespace

import pytest
import torch

import transformer_lib as tl
from transformer_lib.translation.data import Vocab
from transformer_lib.instruments.heads import head_confidence


def small_model():
    torch.manual_seed(0)
    config = tl.TransformerConfig(23, 19, num_hiddens=32, ffn_num_hiddens=64, num_heads=4,
                                  num_enc_blks=2, num_dec_blks=1, dropout=0.1, max_len=64)
    return tl.Transformer(config).eval()


def batches():
    """Two batches of padded sentences, each source ending in <eos>."""
    g = torch.Generator().manual_seed(1)
    out = []
    for lens, tgt_lens in [([6, 4, 3], [5, 2, 4]), ([5, 5], [3, 6])]:
        src = torch.full((len(lens), max(lens)), Vocab.pad)
        tgt = torch.full((len(lens), max(tgt_lens)), Vocab.pad)
        for i, (n, m) in enumerate(zip(lens, tgt_lens)):
            src[i, :n - 1] = torch.randint(4, 23, (n - 1,), generator=g)
            src[i, n - 1] = Vocab.eos
            tgt[i, 0] = Vocab.bos
            tgt[i, 1:m] = torch.randint(4, 19, (m - 1,), generator=g)
        out.append(SimpleNamespace(src=src, tgt_in=tgt, src_valid_lens=torch.tensor(lens)))
    return out


def reference(model, loader):
    """The same mean, one sentence and one query at a time."""
    sums, counts = {}, {}
    for batch in loader:
        for i in range(len(batch.src)):
            n = int(batch.src_valid_lens[i])
            m = int((batch.tgt_in[i] != Vocab.pad).sum())
            src, tgt = batch.src[i:i + 1, :n], batch.tgt_in[i:i + 1, :m]
            maps = model.attention_maps(src, tgt, torch.tensor([n]))
            for kind, blocks in maps.items():
                for block, weights in enumerate(blocks):       # (1, h, Q, K)
                    if kind != "decoder_self":
                        weights = weights[..., :n - 1]         # the <eos> key left out
                    for head in range(weights.shape[1]):
                        key = (kind, block, head)
                        largest = weights[0, head].max(-1).values
                        sums[key] = sums.get(key, 0.0) + float(largest.sum())
                        counts[key] = counts.get(key, 0) + len(largest)
    return {key: sums[key] / counts[key] for key in sums}


def test_confidence_is_the_mean_largest_weight_without_eos():
    model, loader = small_model(), batches()
    got, expected = head_confidence(model, loader), reference(model, loader)
    assert got.keys() == expected.keys()
    assert len(got) == 4 * (2 + 1 + 1)           # heads x (encoder, decoder self, cross blocks)
    for key in got:
        assert got[key] == pytest.approx(expected[key], abs=1e-5)
        assert 0 < got[key] <= 1


def test_a_head_that_looks_at_one_word_has_confidence_one():
    model = small_model()
    layer = model.attention_layers()["cross"][0]
    with torch.no_grad():                 # queries of head 1 scaled up: nearly one-hot weights
        layer.W_q.weight[8:16] *= 1e4
    got = head_confidence(model, batches())
    assert got[("cross", 0, 1)] > 0.99
    assert got[("cross", 0, 0)] < 0.99


def test_confidence_errors_name_the_argument():
    with pytest.raises(TypeError, match="model"):
        head_confidence(torch.nn.Linear(2, 2), batches())
    with pytest.raises(ValueError, match="loader"):
        head_confidence(small_model(), [])
