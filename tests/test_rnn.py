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


def test_the_encoder_equals_d2ls_and_packing_equals_each_sentence_alone(d2l):
    model = gru()
    reference = d2l.Seq2SeqEncoder(30, 16, 24, 2)
    reference.embedding.load_state_dict(model.encoder.embedding.state_dict())
    reference.rnn.rnn.load_state_dict(model.encoder.rnn.state_dict())  # (steps, B, H) layout
    src, lens = torch.randint(0, 30, (3, 7)), torch.tensor([7, 4, 1])
    with torch.no_grad():
        outputs, state = reference(src)
        memory = model.encoder(src)
        torch.testing.assert_close(memory.outputs, outputs.transpose(0, 1))
        torch.testing.assert_close(memory.state, state)
        # with valid_lens: each sentence's real tokens alone, through d2l's encoder
        packed = model.encoder(src, lens)
        for row, n in enumerate(lens.tolist()):
            outputs, state = reference(src[row:row + 1, :n])
            torch.testing.assert_close(packed.outputs[row, :n], outputs[:, 0])
            torch.testing.assert_close(packed.state[:, row], state[:, 0])
            assert (packed.outputs[row, n:] == 0).all()


def test_the_decoder_equals_d2ls_attention_decoder_written_out(d2l):
    # d2l's Seq2SeqAttentionDecoder (its chapter on Bahdanau attention; the package has no
    # copy): at each step the top layer's last state queries the encoder's outputs through
    # d2l.AdditiveAttention, and [context; embedding] goes into the GRU
    model = gru()
    src, tgt, lens = torch.randint(0, 30, (3, 7)), torch.randint(0, 25, (3, 5)), torch.tensor([7, 4, 1])
    decoder = model.decoder
    attention = d2l.AdditiveAttention(24, 0.0)
    with torch.no_grad():
        attention(torch.zeros(1, 1, 24), torch.zeros(1, 2, 24), torch.zeros(1, 2, 24), None)
        attention.load_state_dict(decoder.attention.state_dict())   # W_q, W_k, w_v: d2l's names
        rnn = torch.nn.GRU(16 + 24, 24, 2)                            # d2l's (steps, B, H) layout
        rnn.load_state_dict(decoder.rnn.state_dict())
        memory = model.encoder(src, lens)
        state, steps = memory.state, []
        for x in decoder.embedding(tgt).transpose(0, 1):              # (B, E), one step
            context = attention(state[-1].unsqueeze(1), memory.outputs, memory.outputs, lens)
            out, state = rnn(torch.cat([context, x.unsqueeze(1)], dim=-1).transpose(0, 1), state)
            steps.append(out)
        expected = decoder.dense(torch.cat(steps).transpose(0, 1))
        torch.testing.assert_close(model(src, tgt, lens), expected)


def test_every_kept_beam_of_the_gru_scores_its_prefix_as_the_model_does():
    # as for the Transformer (test_decoding.py): the GRU's cache is its state, which the search
    # reorders with the beams (GRUCache.reorder)
    from test_decoding import prefix_log_probs

    model = gru(2)
    src, lens = torch.randint(4, 30, (2, 5)), torch.tensor([5, 3])
    steps = []
    beam_search(model, src, lens, bos_id=1, eos_id=2, max_len=6, beam_size=3, on_step=steps.append)
    assert any(step.finished.any() and not step.finished.all() for step in steps)
    in_order = torch.arange(3).expand(2, 3)         # beams reordered before a later step reads them
    assert any(not torch.equal(step.from_beam, in_order) for step in steps[1:-1])
    for step in steps:
        scores, lengths = prefix_log_probs(model, src.repeat_interleave(3, 0), lens.repeat_interleave(3),
                                           step.tokens.reshape(6, -1), eos_id=2)
        torch.testing.assert_close(step.scores.reshape(-1), scores, atol=1e-4, rtol=1e-5)
        assert torch.equal(step.lengths.reshape(-1), lengths.float())
