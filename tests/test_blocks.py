"""FFN, AddNorm, positional encoding and the encoder/decoder blocks against torch and d2l."""

import math

import pytest
import torch
from torch import nn

import transformer_lib as tl
from conftest import mha_into_torch, randomize_

B, T, S, D, H, F = 3, 6, 7, 16, 4, 32


def _norm(block, i):
    """The i-th LayerNorm of a post-norm (``addnorm{i}.ln``) or pre-norm (``norm{i}``) block."""
    return getattr(block, f"norm{i}", None) or getattr(block, f"addnorm{i}").ln


def _encoder_block_into_torch(ours, ref):
    mha_into_torch(ours.attention, ref.self_attn)
    ref.linear1.load_state_dict(ours.ffn.dense1.state_dict())
    ref.linear2.load_state_dict(ours.ffn.dense2.state_dict())
    for i in (1, 2):
        getattr(ref, f"norm{i}").load_state_dict(_norm(ours, i).state_dict())


def _decoder_block_into_torch(ours, ref):
    mha_into_torch(ours.attention1, ref.self_attn)
    mha_into_torch(ours.attention2, ref.multihead_attn)
    ref.linear1.load_state_dict(ours.ffn.dense1.state_dict())
    ref.linear2.load_state_dict(ours.ffn.dense2.state_dict())
    for i in (1, 2, 3):
        getattr(ref, f"norm{i}").load_state_dict(_norm(ours, i).state_dict())


# layout -> (our block, torch's norm_first)
ENCODER_BLOCKS = {"post-norm": (tl.TransformerEncoderBlock, False),
                  "pre-norm": (tl.PreNormEncoderBlock, True)}
DECODER_BLOCKS = {"post-norm": (tl.TransformerDecoderBlock, False),
                  "pre-norm": (tl.PreNormDecoderBlock, True)}


@pytest.mark.parametrize("layout", list(ENCODER_BLOCKS))
def test_encoder_block_matches_torch_encoder_layer(layout):
    block_class, norm_first = ENCODER_BLOCKS[layout]
    ours = randomize_(block_class(D, F, H, dropout=0.1, use_bias=True)).eval()
    ref = nn.TransformerEncoderLayer(D, H, F, dropout=0.1, batch_first=True,    # ReLU
                                     norm_first=norm_first).eval()
    _encoder_block_into_torch(ours, ref)
    other = nn.TransformerEncoderLayer(D, H, F, batch_first=True, norm_first=not norm_first).eval()
    other.load_state_dict(ref.state_dict())            # the same weights, the other layout
    X = torch.randn(B, S, D)
    valid_lens = torch.tensor([7, 4, 1])
    pad = torch.arange(S)[None, :] >= valid_lens[:, None]
    with torch.no_grad():
        expected = ref(X, src_key_padding_mask=pad)
        got = ours(X, valid_lens)
        elsewise = other(X, src_key_padding_mask=pad)
    keep = ~pad  # torch's fast path may leave padded positions as zeros
    torch.testing.assert_close(got[keep], expected[keep], atol=1e-5, rtol=1e-4)
    assert (got[keep] - elsewise[keep]).abs().max() > 0.1


@pytest.mark.parametrize("layout", list(DECODER_BLOCKS))
def test_decoder_block_matches_torch_decoder_layer(layout):
    block_class, norm_first = DECODER_BLOCKS[layout]
    ours = randomize_(block_class(D, F, H, dropout=0.1, use_bias=True)).eval()
    ref = nn.TransformerDecoderLayer(D, H, F, dropout=0.1, batch_first=True,
                                     norm_first=norm_first).eval()
    _decoder_block_into_torch(ours, ref)
    other = nn.TransformerDecoderLayer(D, H, F, batch_first=True, norm_first=not norm_first).eval()
    other.load_state_dict(ref.state_dict())
    X, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    enc_valid_lens = torch.tensor([7, 3, 5])
    memory_pad = torch.arange(S)[None, :] >= enc_valid_lens[:, None]
    causal = nn.Transformer.generate_square_subsequent_mask(T)
    with torch.no_grad():
        expected, elsewise = (layer(X, memory, tgt_mask=causal, memory_key_padding_mask=memory_pad,
                                    tgt_is_causal=True) for layer in (ref, other))
        got = ours(X, memory, enc_valid_lens)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)
    assert (got - elsewise).abs().max() > 0.1


def test_pre_norm_stacks_match_torch_with_a_final_norm():
    """Our pre-norm encoder and decoder after the embedding = nn.TransformerEncoder/Decoder of
    norm_first layers with a final LayerNorm (as nn.Transformer builds them)."""
    vocab, blocks = 40, 3
    enc = randomize_(tl.TransformerEncoder(vocab, D, F, H, blocks, 0.1, True, norm_first=True)).eval()
    dec = randomize_(tl.TransformerDecoder(vocab, D, F, H, blocks, 0.1, True, norm_first=True)).eval()
    enc_layer = nn.TransformerEncoderLayer(D, H, F, batch_first=True, norm_first=True)
    dec_layer = nn.TransformerDecoderLayer(D, H, F, batch_first=True, norm_first=True)
    ref_enc = nn.TransformerEncoder(enc_layer, blocks, norm=nn.LayerNorm(D),
                                    enable_nested_tensor=False).eval()
    ref_dec = nn.TransformerDecoder(dec_layer, blocks, norm=nn.LayerNorm(D)).eval()
    for ours, ref in zip(enc.blks, ref_enc.layers, strict=True):
        _encoder_block_into_torch(ours, ref)
    for ours, ref in zip(dec.blks, ref_dec.layers, strict=True):
        _decoder_block_into_torch(ours, ref)
    ref_enc.norm.load_state_dict(enc.final_norm.state_dict())
    ref_dec.norm.load_state_dict(dec.final_norm.state_dict())
    src, tgt = torch.randint(0, vocab, (B, S)), torch.randint(0, vocab, (B, T))
    src_lens = torch.tensor([7, 4, 2])
    pad = torch.arange(S)[None, :] >= src_lens[:, None]
    causal = nn.Transformer.generate_square_subsequent_mask(T)
    with torch.no_grad():
        memory = enc(src, src_lens)
        expected_memory = ref_enc(enc.embed(src), src_key_padding_mask=pad)
        torch.testing.assert_close(memory[~pad], expected_memory[~pad], atol=1e-5, rtol=1e-4)
        expected = dec.dense(ref_dec(dec.embed(tgt), memory, tgt_mask=causal, tgt_is_causal=True,
                                     memory_key_padding_mask=pad))
        torch.testing.assert_close(dec(tgt, memory, src_lens), expected, atol=1e-5, rtol=1e-4)
        # the final norm is applied: the same layers without it give other numbers
        ref_enc.norm = None
        unnormed = ref_enc(enc.embed(src), src_key_padding_mask=pad)
        assert not torch.allclose(memory[~pad], unnormed[~pad], atol=1e-2)


def test_post_norm_stacks_have_no_final_norm_parameters():
    """Post-norm keeps d2l's parameter names (its state dicts load unchanged); pre-norm adds one
    LayerNorm per stack."""
    post = tl.Transformer(tl.TransformerConfig(20, 20, num_hiddens=16, ffn_num_hiddens=32))
    pre = tl.Transformer(tl.TransformerConfig(20, 20, num_hiddens=16, ffn_num_hiddens=32,
                                              norm_first=True))
    assert not [k for k in post.state_dict() if "final_norm" in k]
    assert sorted(k for k in pre.state_dict() if "final_norm" in k) == [
        "decoder.final_norm.bias", "decoder.final_norm.weight",
        "encoder.final_norm.bias", "encoder.final_norm.weight"]
    # the same number of LayerNorms per block: 2 + 3, norm1.. in place of addnorm1.ln..
    assert pre.num_parameters() == post.num_parameters() + 2 * 2 * 16


def test_ffn_matches_d2l(d2l):
    ref = d2l.PositionWiseFFN(F, 8)
    X = torch.randn(B, T, D)
    ref(X)
    randomize_(ref)
    ours = tl.PositionWiseFFN(F, 8, num_inputs=D)
    ours.load_state_dict(ref.state_dict())
    torch.testing.assert_close(ours(X), ref(X))


def test_addnorm_matches_d2l(d2l):
    ref = randomize_(d2l.AddNorm(D, 0.0)).eval()
    ours = tl.AddNorm(D, 0.0).eval()
    ours.load_state_dict(ref.state_dict())
    X, Y = torch.randn(B, T, D), torch.randn(B, T, D)
    torch.testing.assert_close(ours(X, Y), ref(X, Y))


def test_positional_encoding_matches_d2l_and_the_formula(d2l):
    ref = d2l.PositionalEncoding(D, 0.0).eval()
    ours = tl.PositionalEncoding(D, 0.0).eval()
    X = torch.zeros(1, 1000, D)
    # d2l computes its angles in float32; ours in float64 (hence the tolerance).
    torch.testing.assert_close(ours(X), ref(X), atol=2e-4, rtol=0)
    pos, i = 999, 3
    assert math.isclose(ours.P[0, pos, 2 * i].item(), math.sin(pos / 10000 ** (2 * i / D)), abs_tol=1e-6)
    assert math.isclose(ours.P[0, pos, 2 * i + 1].item(), math.cos(pos / 10000 ** (2 * i / D)), abs_tol=1e-6)


def test_transformer_encoder_matches_d2l(d2l):
    vocab, blocks = 40, 2
    ref = d2l.TransformerEncoder(vocab, D, F, H, blocks, 0.0, use_bias=True).eval()
    X = torch.randint(0, vocab, (B, S))
    valid_lens = torch.tensor([7, 4, 2])
    ref(X, valid_lens)  # materialise the lazy layers
    randomize_(ref)
    ours = tl.TransformerEncoder(vocab, D, F, H, blocks, 0.0, use_bias=True).eval()
    ours.load_state_dict(ref.state_dict())  # identical parameter names
    with tl.record_attention(ours) as maps:
        out = ours(X, valid_lens)
    torch.testing.assert_close(out, ref(X, valid_lens), atol=1e-4, rtol=1e-4)
    weights = [maps[f"blks.block{i}.attention"][0] for i in range(blocks)]
    for ours_w, ref_w in zip(weights, ref.attention_weights, strict=True):
        torch.testing.assert_close(ours_w.reshape(B * H, S, S), ref_w, atol=1e-5, rtol=1e-4)
