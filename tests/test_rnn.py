"""The GRU encoder-decoder with additive attention, on the same interface as the Transformer."""

import torch

import transformer_lib as tl
from transformer_lib.translation.checkpoint import load_checkpoint, save_checkpoint
from transformer_lib.translation.data import Vocab
from transformer_lib.translation.decoding import beam_search
from transformer_lib.translation.rnn import GRUConfig, GRUSeq2Seq


def gru(seed=0):
    torch.manual_seed(seed)
    return GRUSeq2Seq(GRUConfig(30, 25, embed_size=16, num_hiddens=24, num_layers=2, dropout=0.0)).eval()


def test_shapes_and_weights():
    model = gru()
    src, tgt = torch.randint(0, 30, (3, 7)), torch.randint(0, 25, (3, 5))
    lens = torch.tensor([7, 4, 1])
    assert model(src, tgt, lens).shape == (3, 5, 25)
    weights = model.attention_maps(src, tgt, lens)
    assert weights["encoder_self"] == weights["decoder_self"] == []
    cross = weights["cross"][0]  # one head, one row per decoder step
    assert cross.shape == (3, 1, 5, 7)
    assert torch.all(cross[1, :, :, 4:] == 0) and torch.allclose(cross.sum(-1), torch.ones(3, 1, 5))


def test_padding_does_not_change_the_result():
    model = gru()
    src, tgt = torch.randint(0, 30, (2, 4)), torch.randint(0, 25, (2, 3))
    lens = torch.tensor([4, 2])
    padded = torch.cat([src, torch.randint(0, 30, (2, 3))], dim=1)
    with torch.no_grad():
        torch.testing.assert_close(model(src, tgt, lens), model(padded, tgt, lens), atol=1e-6, rtol=1e-5)


def test_cached_greedy_equals_uncached_and_beam_of_one():
    model = gru(1)
    src, lens = torch.randint(0, 30, (4, 6)), torch.tensor([6, 4, 2, 1])
    cached = tl.greedy_decode(model, src, lens, bos_id=1, eos_id=2, max_len=10)
    full = tl.greedy_decode(model, src, lens, bos_id=1, eos_id=2, max_len=10, use_cache=False)
    beam = beam_search(model, src, lens, bos_id=1, eos_id=2, max_len=10, beam_size=1)
    assert torch.equal(cached, full) and torch.equal(cached, beam[:, :cached.shape[1]])
    assert beam_search(model, src, lens, bos_id=1, eos_id=2, max_len=10, beam_size=3).shape[0] == 4


def test_gru_checkpoint_round_trip(tmp_path):
    model = gru(2)
    vocab_src = Vocab.from_tokens(["<pad>", "<bos>", "<eos>", "<unk>"] + [f"s{i}" for i in range(26)])
    vocab_tgt = Vocab.from_tokens(["<pad>", "<bos>", "<eos>", "<unk>"] + [f"t{i}" for i in range(21)])
    loaded, *_ = load_checkpoint(save_checkpoint(tmp_path / "gru.pt", model, vocab_src, vocab_tgt))
    src, tgt = torch.randint(0, 30, (2, 4)), torch.randint(0, 25, (2, 3))
    assert isinstance(loaded, GRUSeq2Seq) and torch.equal(loaded(src, tgt), model(src, tgt))
