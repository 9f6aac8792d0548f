"""The language model of the GPT chapter: rotary positions, RMSNorm, the GELU FFN, its two block
layouts against torch's encoder layer, and the key/value cache of one growing stream."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from conftest import mha_into_torch, randomize_
from transformer_lib.model import (GPT_CHANGES, KVCache, LanguageModel, LanguageModelBlock,
                                   LanguageModelConfig, PositionWiseFFN,
                                   PreNormLanguageModelBlock, RMSNorm, RotaryEmbedding,
                                   RotaryMultiHeadAttention, sinusoidal_encoding)

D, H, FF, V = 16, 4, 32, 23


def config(**changes):
    sizes = dict(num_hiddens=D, ffn_num_hiddens=FF, num_heads=H, num_blks=2, max_len=40)
    return LanguageModelConfig(V, **{**sizes, **changes})


def model(cfg, seed=0):
    torch.manual_seed(seed)
    return LanguageModel(cfg).eval()


def rotate_as_complex(X, offset=0):
    """RoFormer's eq. (34) as complex numbers: pair (x, y) is x + iy, times e^(i t theta)."""
    B, h, T, d_k = X.shape
    theta = 10000.0 ** (-torch.arange(0, d_k, 2, dtype=torch.float64) / d_k)
    t = torch.arange(offset, offset + T, dtype=torch.float64)[:, None]
    z = torch.view_as_complex(X.double().reshape(B, h, T, d_k // 2, 2).contiguous())
    turned = z * torch.polar(torch.ones_like(t * theta), t * theta)
    return torch.view_as_real(turned).reshape(B, h, T, d_k).float()


def test_rotary_embedding_is_the_complex_rotation_of_roformer():
    X = torch.randn(2, 3, 7, 8)
    rope = RotaryEmbedding(8, max_len=20)
    for offset in (0, 5):
        torch.testing.assert_close(rope(X, offset), rotate_as_complex(X, offset))
    # a rotation: lengths of pairs stay; position 0 is not turned at all
    torch.testing.assert_close(rope(X, 3).norm(dim=-1), X.norm(dim=-1))
    torch.testing.assert_close(rope(X[:, :, :1]), X[:, :, :1])


def test_rotary_reads_its_angles_from_the_sinusoidal_table():
    rope = RotaryEmbedding(8, max_len=12)
    P = sinusoidal_encoding(12, 8)
    torch.testing.assert_close(rope.sin, P[:, 0::2])
    torch.testing.assert_close(rope.cos, P[:, 1::2])


def test_rotary_keeps_the_dtype_and_the_module_survives_a_cast():
    rope = RotaryEmbedding(8, max_len=12)
    X = torch.randn(1, 2, 5, 8)
    assert rope(X.bfloat16()).dtype == torch.bfloat16
    torch.testing.assert_close(rope(X.bfloat16()).float(), rope(X), atol=0.05, rtol=0.02)
    half = RotaryEmbedding(8, max_len=12).to(torch.float16)   # a model cast to half
    torch.testing.assert_close(half(X.half()).float(), rope(X), atol=0.01, rtol=0.01)


def test_rotated_scores_depend_only_on_the_distance():
    torch.manual_seed(0)
    rope = RotaryEmbedding(16, max_len=64)
    q, k = torch.randn(1, 1, 1, 16), torch.randn(1, 1, 1, 16)

    def score(i, j):
        return (rope(q, i) * rope(k, j)).sum().item()

    for i, j in [(3, 1), (10, 10), (2, 9)]:
        for shift in (1, 7, 30):
            assert score(i + shift, j + shift) == pytest.approx(score(i, j), abs=1e-4)
    # and the distance does matter
    assert abs(score(5, 1) - score(5, 4)) > 1e-2


def test_rotary_attention_is_attention_on_rotated_queries_and_keys():
    torch.manual_seed(1)
    attn = randomize_(RotaryMultiHeadAttention(D, H, max_len=20)).eval()
    X = torch.randn(2, 9, D)
    split = lambda Y: Y.view(2, 9, H, D // H).transpose(1, 2)          # noqa: E731
    q, k = rotate_as_complex(split(attn.W_q(X))), rotate_as_complex(split(attn.W_k(X)))
    out = F.scaled_dot_product_attention(q, k, split(attn.W_v(X)), is_causal=True)
    want = attn.W_o(out.transpose(1, 2).reshape(2, 9, D))
    torch.testing.assert_close(attn(X, X, X, causal=True), want, atol=1e-5, rtol=1e-4)


def test_rotary_attention_refuses_cross_attention_and_a_static_cache():
    attn = RotaryMultiHeadAttention(D, H)
    X, Y = torch.randn(1, 3, D), torch.randn(1, 4, D)
    with pytest.raises(ValueError, match="self-attention"):
        attn(X, Y, Y)
    with pytest.raises(ValueError, match="growing cache"):
        attn(X, X, X, kv=KVCache(static=True))
    with pytest.raises(ValueError, match="max_len"):
        RotaryEmbedding(4, max_len=5)(torch.randn(1, 1, 3, 4), offset=3)


def test_rms_norm_is_torchs():
    ours = RMSNorm(D)
    with torch.no_grad():
        ours.weight.uniform_(0.5, 1.5)
    ref = nn.RMSNorm(D, eps=1e-6)
    ref.load_state_dict(ours.state_dict())
    X = torch.randn(3, 5, D) * 4 + 2
    torch.testing.assert_close(ours(X), ref(X))
    # no mean subtracted: a shifted row is not normalised to the same values
    assert (ours(X + 10) - ours(X)).abs().max() > 0.1


def test_the_ffn_takes_a_gelu():
    ffn = PositionWiseFFN(FF, D, activation="gelu")
    X = torch.randn(2, 3, D)
    want = ffn.dense2(F.gelu(ffn.dense1(X)))
    torch.testing.assert_close(ffn(X), want)
    assert (PositionWiseFFN(FF, D)(X) - ffn(X)).abs().max() > 0  # the default is ReLU
    with pytest.raises(ValueError, match="activation"):
        PositionWiseFFN(FF, D, activation="swish")


@pytest.mark.parametrize("block_class, norm_first", [(LanguageModelBlock, False),
                                                     (PreNormLanguageModelBlock, True)])
def test_a_2017_block_is_torch_encoder_layer_with_the_causal_mask(block_class, norm_first):
    ours = randomize_(block_class(config(use_bias=True))).eval()
    ref = nn.TransformerEncoderLayer(D, H, FF, dropout=0.0, batch_first=True,
                                     norm_first=norm_first).eval()
    mha_into_torch(ours.attention, ref.self_attn)
    ref.linear1.load_state_dict(ours.ffn.dense1.state_dict())
    ref.linear2.load_state_dict(ours.ffn.dense2.state_dict())
    ref.norm1.load_state_dict(ours.norm1.state_dict())
    ref.norm2.load_state_dict(ours.norm2.state_dict())
    X = torch.randn(3, 9, D)
    mask = nn.Transformer.generate_square_subsequent_mask(9)
    with torch.no_grad():
        torch.testing.assert_close(ours(X), ref(X, src_mask=mask, is_causal=True),
                                   atol=1e-5, rtol=1e-4)


def test_gpt_turns_on_the_five_changes_and_keeps_the_sizes():
    base = config()
    gpt = base.gpt()
    assert (gpt.norm_first, gpt.norm, gpt.activation, gpt.positions, gpt.tie_embeddings) == (
        True, "rms", "gelu", "rotary", True)
    assert gpt.num_hiddens == base.num_hiddens and gpt.num_blks == base.num_blks
    assert len(GPT_CHANGES) == 5
    lm = model(gpt)
    assert lm.dense.weight is lm.embedding.weight
    assert lm.pos_encoding is None
    assert isinstance(lm.blks[0], PreNormLanguageModelBlock)
    assert isinstance(lm.blks[0].attention, RotaryMultiHeadAttention)
    assert isinstance(lm.final_norm, RMSNorm)
    assert isinstance(lm.blks[0].ffn.activation, nn.GELU)
    # untied: the output matrix; two LayerNorms (2d each) per block against two RMSNorms (d
    # each); gpt: one final RMSNorm
    untied = model(config())
    assert untied.num_parameters() - lm.num_parameters() == V * D + 2 * 2 * D - D


@pytest.mark.parametrize("cfg", [config(), config().gpt(), config(dropout=0.3).gpt()],
                         ids=["2017", "gpt", "gpt-dropout"])
def test_the_cache_gives_the_uncached_logits(cfg):
    lm = model(cfg)
    X = torch.randint(0, V, (2, 17))
    with torch.no_grad():
        full = lm(X)
        caches = lm.new_caches()
        pieces = [lm(X[:, :5], caches)] + [lm(X[:, t:t + 1], caches) for t in range(5, 17)]
    torch.testing.assert_close(torch.cat(pieces, 1), full, atol=1e-5, rtol=1e-4)
    assert caches[0].length == 17


@pytest.mark.parametrize("cfg", [config(), config().gpt()], ids=["2017", "gpt"])
def test_the_model_never_reads_ahead(cfg):
    lm = model(cfg)
    X = torch.randint(4, V, (2, 12))
    changed = X.clone()
    changed[:, 7] = (X[:, 7] - 3) % (V - 4) + 4
    with torch.no_grad():
        before, after = lm(X), lm(changed)
    torch.testing.assert_close(before[:, :7], after[:, :7])
    assert (before[:, 7:] - after[:, 7:]).abs().max() > 1e-3


def test_the_language_model_trains_through_fits_interface():
    lm = model(config())
    tgt = torch.randint(0, V, (3, 8))
    torch.testing.assert_close(lm.logits(tgt[:, :0], tgt), lm(tgt))
    with pytest.raises(ValueError, match="no source"):
        lm.check_inputs(tgt, tgt)
    with pytest.raises(ValueError, match="tgt"):
        lm.check_inputs(tgt[:, :0], tgt + V)


@pytest.mark.parametrize("changes, message", [
    (dict(norm="batch"), "norm"), (dict(activation="tanh"), "activation"),
    (dict(positions="learned"), "positions"),
    (dict(positions="rotary", num_hiddens=12, num_heads=4), "even"),
    (dict(vocab_size=0), "vocab_size")])
def test_bad_configs_name_the_field(changes, message):
    sizes = dict(vocab_size=V, num_hiddens=D, num_heads=H)
    with pytest.raises(ValueError, match=message):
        LanguageModelConfig(**{**sizes, **changes})


def test_a_flag_that_is_not_a_bool_is_refused():
    with pytest.raises(TypeError, match="norm_first"):
        LanguageModelConfig(V, norm_first=1)


def test_positions_beyond_max_len_are_refused():
    lm = model(config(max_len=8))
    with pytest.raises(ValueError, match="max_len"):
        lm(torch.zeros(1, 9, dtype=torch.long))
    caches = lm.new_caches()
    lm(torch.zeros(1, 6, dtype=torch.long), caches)
    with pytest.raises(ValueError, match="max_len"):
        lm(torch.zeros(1, 3, dtype=torch.long), caches)
