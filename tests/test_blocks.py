"""FFN, AddNorm, positional encoding and the encoder/decoder blocks against torch and d2l."""

import math

import torch
from torch import nn

import transformer_lib as tl
from conftest import mha_into_torch, randomize_

B, T, S, D, H, F = 3, 6, 7, 16, 4, 32


def _encoder_block_into_torch(ours, ref):
    mha_into_torch(ours.attention, ref.self_attn)
    ref.linear1.load_state_dict(ours.ffn.dense1.state_dict())
    ref.linear2.load_state_dict(ours.ffn.dense2.state_dict())
    ref.norm1.load_state_dict(ours.addnorm1.ln.state_dict())
    ref.norm2.load_state_dict(ours.addnorm2.ln.state_dict())


def test_encoder_block_matches_torch_encoder_layer():
    ours = randomize_(tl.TransformerEncoderBlock(D, F, H, dropout=0.1, use_bias=True)).eval()
    ref = nn.TransformerEncoderLayer(D, H, F, dropout=0.1, batch_first=True).eval()  # post-norm, ReLU
    _encoder_block_into_torch(ours, ref)
    X = torch.randn(B, S, D)
    valid_lens = torch.tensor([7, 4, 1])
    pad = torch.arange(S)[None, :] >= valid_lens[:, None]
    with torch.no_grad():
        expected = ref(X, src_key_padding_mask=pad)
        got = ours(X, valid_lens)
    keep = ~pad  # torch's fast path may leave padded positions as zeros
    torch.testing.assert_close(got[keep], expected[keep], atol=1e-5, rtol=1e-4)


def test_decoder_block_matches_torch_decoder_layer():
    ours = randomize_(tl.TransformerDecoderBlock(D, F, H, dropout=0.1, use_bias=True)).eval()
    ref = nn.TransformerDecoderLayer(D, H, F, dropout=0.1, batch_first=True).eval()
    mha_into_torch(ours.attention1, ref.self_attn)
    mha_into_torch(ours.attention2, ref.multihead_attn)
    ref.linear1.load_state_dict(ours.ffn.dense1.state_dict())
    ref.linear2.load_state_dict(ours.ffn.dense2.state_dict())
    for i in (1, 2, 3):
        getattr(ref, f"norm{i}").load_state_dict(getattr(ours, f"addnorm{i}").ln.state_dict())
    X, memory = torch.randn(B, T, D), torch.randn(B, S, D)
    enc_valid_lens = torch.tensor([7, 3, 5])
    memory_pad = torch.arange(S)[None, :] >= enc_valid_lens[:, None]
    causal = nn.Transformer.generate_square_subsequent_mask(T)
    with torch.no_grad():
        expected = ref(X, memory, tgt_mask=causal, memory_key_padding_mask=memory_pad, tgt_is_causal=True)
        got = ours(X, memory, enc_valid_lens)
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)


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
