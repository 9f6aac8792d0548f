"""tl.intervene: heads switched off, source positions hidden, an encoder window — checked
against references built by weight surgery and by shorter valid lengths."""

import copy

import pytest
import torch

import transformer_lib as tl
from transformer_lib.translation.decoding import beam_search, greedy_decode

SRC_VOCAB, TGT_VOCAB, BOS, EOS = 23, 19, 1, 2


def small_model(norm_first=False, seed=0):
    torch.manual_seed(seed)
    config = tl.TransformerConfig(SRC_VOCAB, TGT_VOCAB, num_hiddens=32, ffn_num_hiddens=64,
                                  num_heads=4, num_enc_blks=2, num_dec_blks=2, dropout=0.1,
                                  max_len=64, norm_first=norm_first)
    return tl.Transformer(config).eval()


def batch(seed=1):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(3, SRC_VOCAB, (3, 7), generator=g)
    tgt = torch.randint(3, TGT_VOCAB, (3, 5), generator=g)
    lens = torch.tensor([7, 5, 3])
    return src, tgt, lens


@pytest.mark.parametrize("norm_first", [False, True])
def test_nothing_switched_off_is_the_model(norm_first):
    model = small_model(norm_first)
    src, tgt, lens = batch()
    expected = model(src, tgt, lens)
    with tl.intervene(model):
        assert torch.equal(model(src, tgt, lens), expected)


@pytest.mark.parametrize("kind", ["encoder_self", "decoder_self", "cross"])
@pytest.mark.parametrize("block, head", [(0, 1), (1, 3)])
def test_a_head_off_is_its_slice_of_w_o_zeroed(kind, block, head):
    model = small_model()
    src, tgt, lens = batch()
    surgery = copy.deepcopy(model)
    layer = surgery.attention_layers()[kind][block]
    d_k = layer.num_hiddens // layer.num_heads
    with torch.no_grad():
        layer.W_o.weight[:, head * d_k:(head + 1) * d_k] = 0.0  # the head's input to W^O
    with tl.intervene(model, heads_off=[(kind, block, head)]):
        gated = model(src, tgt, lens)
    torch.testing.assert_close(gated, surgery(src, tgt, lens), rtol=0, atol=1e-6)
    assert not torch.allclose(gated, model(src, tgt, lens))    # the head mattered


def test_a_head_off_shows_zero_weights_and_the_others_do_not():
    model = small_model()
    src, tgt, lens = batch()
    plain = model.attention_maps(src, tgt, lens)
    with tl.intervene(model, heads_off=[("cross", 1, 2)]):
        maps = model.attention_maps(src, tgt, lens)
    assert torch.equal(maps["cross"][1][:, 2], torch.zeros_like(maps["cross"][1][:, 2]))
    assert torch.equal(maps["cross"][1][:, :2], plain["cross"][1][:, :2])
    assert torch.equal(maps["encoder_self"][0], plain["encoder_self"][0])


def test_hidden_positions_get_weight_exactly_zero():
    model = small_model()
    src, tgt, lens = batch()
    hidden = torch.zeros(3, 7, dtype=torch.bool)
    hidden[0, [1, 4]] = True
    hidden[2, 0] = True
    with tl.intervene(model, hidden=hidden):
        maps = model.attention_maps(src, tgt, lens)
    for kind in ["encoder_self", "cross"]:
        for weights in maps[kind]:                                 # (B, h, Q, S)
            assert torch.equal(weights[0][..., [1, 4]], torch.zeros(4, weights.shape[2], 2))
            assert torch.equal(weights[2][..., 0], torch.zeros(4, weights.shape[2]))
            assert (weights[1].sum(-1) - 1).abs().max() < 1e-5    # row 1: nothing hidden


@pytest.mark.parametrize("norm_first", [False, True])
def test_hiding_the_last_words_is_shortening_the_source(norm_first):
    """Hidden keys at the end of a sentence are keys beyond its valid length: the decoder's
    output is the same (the hidden positions' own encoder outputs are never read)."""
    model = small_model(norm_first)
    src, tgt, lens = batch()
    shorter = torch.tensor([5, 5, 2])
    hidden = torch.arange(7)[None, :] >= shorter[:, None]
    with tl.intervene(model, hidden=hidden):
        hid = model(src, tgt, lens)
    torch.testing.assert_close(hid, model(src, tgt, shorter), rtol=0, atol=1e-5)


def test_beams_and_greedy_decoding_see_the_hidden_words_of_their_sentence():
    model = small_model()
    src, _, lens = batch()
    shorter = torch.tensor([4, 5, 2])
    hidden = torch.arange(7)[None, :] >= shorter[:, None]
    settings = dict(bos_id=BOS, eos_id=EOS, max_len=6)
    with tl.intervene(model, hidden=hidden):
        beams = beam_search(model, src, lens, beam_size=3, **settings)
        greedy = greedy_decode(model, src, lens, **settings)
    assert torch.equal(beams, beam_search(model, src, shorter, beam_size=3, **settings))
    assert torch.equal(greedy, greedy_decode(model, src, shorter, **settings))


@pytest.mark.parametrize("window", [0, 1, 3])
def test_the_window_limits_the_encoders_self_attention_only(window):
    model = small_model()
    src, tgt, lens = batch()
    plain = model.attention_maps(src, tgt, lens)
    with tl.intervene(model, window=window):
        maps = model.attention_maps(src, tgt, lens)
    distance = (torch.arange(7)[:, None] - torch.arange(7)[None, :]).abs()
    for weights in maps["encoder_self"]:
        assert torch.equal(weights[..., distance > window], torch.zeros_like(
            weights[..., distance > window]))
    if window == 0:      # each valid query sees only itself
        assert torch.allclose(maps["encoder_self"][0][0, :, torch.arange(7), torch.arange(7)],
                              torch.ones(4, 7))
    # inside the window every valid key stays visible (softmax weights are never exactly 0)
    key = torch.arange(7)
    for weights in maps["encoder_self"]:
        for row, n in enumerate(lens.tolist()):
            seen = weights[row][:, :n][..., (distance[:n] <= window) & (key < n)]
            assert (seen > 0).all()
    assert not torch.equal(maps["encoder_self"][1], plain["encoder_self"][1])
    assert torch.equal(maps["decoder_self"][0], plain["decoder_self"][0])


def test_a_window_as_wide_as_the_source_changes_nothing():
    model = small_model()
    src, tgt, lens = batch()
    plain = model(src, tgt, lens)
    with tl.intervene(model, window=6):                 # |i - j| <= 6 for every pair of 7
        torch.testing.assert_close(model(src, tgt, lens), plain, atol=1e-6, rtol=1e-6)


def test_the_layers_are_restored_even_after_an_error():
    model = small_model()
    src, tgt, lens = batch()
    expected = model(src, tgt, lens)
    with pytest.raises(ZeroDivisionError), tl.intervene(model, heads_off=[("cross", 0, 0)]):
        1 / 0
    assert all(layer.attention.intervention is None
               for layers in model.attention_layers().values() for layer in layers)
    assert torch.equal(model(src, tgt, lens), expected)


@pytest.mark.parametrize("arguments, error, argument", [
    (dict(heads_off=[("self", 0, 0)]), ValueError, "heads_off"),
    (dict(heads_off=[("cross", 2, 0)]), ValueError, "heads_off"),
    (dict(heads_off=[("cross", 0, 4)]), ValueError, "heads_off"),
    (dict(heads_off=[("cross", 0)]), ValueError, "heads_off"),
    (dict(hidden=torch.zeros(3, 7)), TypeError, "hidden"),          # not bool
    (dict(hidden=torch.zeros(7, dtype=torch.bool)), ValueError, "hidden"),
    (dict(window=-1), ValueError, "window"),
    (dict(window=1.5), ValueError, "window"),
    (dict(window=True), ValueError, "window"),
])
def test_bad_arguments_are_named(arguments, error, argument):
    with pytest.raises(error, match=argument), tl.intervene(small_model(), **arguments):
        pass


def test_hidden_must_match_the_source():
    model = small_model()
    src, tgt, lens = batch()
    with pytest.raises(ValueError, match="hidden"), \
            tl.intervene(model, hidden=torch.zeros(3, 6, dtype=torch.bool)):
        model(src, tgt, lens)


def test_a_model_without_attention_kinds_and_nesting_are_refused():
    with pytest.raises(TypeError, match="model"), tl.intervene(torch.nn.Linear(2, 2)):
        pass
    model = small_model()
    with tl.intervene(model), pytest.raises(RuntimeError, match="nested"), tl.intervene(model):
        pass


def test_gate_tensors_switch_the_same_heads_as_heads_off():
    model = small_model()
    src, tgt, lens = batch()
    gates = {"cross": torch.tensor([[1.0, 0.0, 1.0, 1.0], [1.0, 1.0, 1.0, 0.0]])}
    with tl.intervene(model, heads_off=[("cross", 0, 1), ("cross", 1, 3)]):
        expected = model(src, tgt, lens)
    with tl.intervene(model, gates=gates):
        assert torch.equal(model(src, tgt, lens), expected)


def test_a_window_tensor_is_the_window():
    model = small_model()
    src, tgt, lens = batch()
    with tl.intervene(model, window=2):
        expected = model(src, tgt, lens)
    with tl.intervene(model, window=torch.tensor(2)):
        assert torch.equal(model(src, tgt, lens), expected)


@pytest.mark.parametrize("gates, error", [
    ({"self": torch.ones(2, 4)}, ValueError), ({"cross": torch.ones(2, 3)}, ValueError),
    ({"cross": torch.ones(2, 4).long()}, TypeError), ({"cross": [[1.0] * 4] * 2}, TypeError)])
def test_bad_gates_are_named(gates, error):
    with pytest.raises(error, match="gates"), tl.intervene(small_model(), gates=gates):
        pass


def test_a_bad_window_tensor_is_named():
    for window, error in [(torch.tensor([2]), ValueError), (torch.tensor(2.0), TypeError)]:
        with pytest.raises(error, match="window"), tl.intervene(small_model(), window=window):
            pass
