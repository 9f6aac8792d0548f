"""Multi-head attention against torch.nn.MultiheadAttention and d2l, and the fused-qkv form."""

import pytest
import torch
from torch import nn

import transformer_lib as tl
from conftest import mha_into_torch, randomize_, with_weights

B, Q, K, D, H = 3, 5, 7, 16, 4


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("return_weights", [False, True])
def test_matches_torch_with_key_padding(bias, return_weights):
    ours = randomize_(tl.MultiHeadAttention(D, H, bias=bias)).eval()
    ref = nn.MultiheadAttention(D, H, bias=bias, batch_first=True).eval()
    mha_into_torch(ours, ref)
    q, kv = torch.randn(B, Q, D), torch.randn(B, K, D)
    valid_lens = torch.tensor([7, 3, 1])
    pad = torch.arange(K)[None, :] >= valid_lens[:, None]  # torch: True = ignore
    ref_out, ref_w = ref(q, kv, kv, key_padding_mask=pad, average_attn_weights=False)
    if return_weights:  # recorded: the explicit path
        out, weights = with_weights(ours, q, kv, kv, valid_lens)
        torch.testing.assert_close(weights, ref_w, atol=1e-6, rtol=1e-5)
    else:               # the fused kernel
        out = ours(q, kv, kv, valid_lens)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("return_weights", [False, True])
def test_matches_torch_with_causal_and_padding_masks(return_weights):
    ours = randomize_(tl.MultiHeadAttention(D, H, bias=True)).eval()
    ref = nn.MultiheadAttention(D, H, batch_first=True).eval()
    mha_into_torch(ours, ref)
    X = torch.randn(B, K, D)
    valid_lens = torch.tensor([7, 4, 2])
    pad = torch.arange(K)[None, :] >= valid_lens[:, None]
    future = nn.Transformer.generate_square_subsequent_mask(K, dtype=torch.float32) != 0
    ref_out, ref_w = ref(X, X, X, key_padding_mask=pad, attn_mask=future, average_attn_weights=False)
    if return_weights:
        out, weights = with_weights(ours, X, X, X, valid_lens, causal=True)
        torch.testing.assert_close(weights, ref_w, atol=1e-6, rtol=1e-5)
    else:
        out = ours(X, X, X, valid_lens, causal=True)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-4)


def test_matches_torch_with_distinct_key_and_value_sizes():
    ours = randomize_(tl.MultiHeadAttention(D, H, key_size=6, value_size=10)).eval()
    ref = nn.MultiheadAttention(D, H, bias=False, kdim=6, vdim=10, batch_first=True).eval()
    mha_into_torch(ours, ref)
    q, k, v = torch.randn(B, Q, D), torch.randn(B, K, 6), torch.randn(B, K, 10)
    torch.testing.assert_close(ours(q, k, v), ref(q, k, v)[0], atol=1e-5, rtol=1e-4)


def test_fused_and_explicit_paths_agree_with_every_mask_kind():
    mha = randomize_(tl.MultiHeadAttention(D, H)).eval()
    q, kv = torch.randn(B, K, D), torch.randn(B, K, D)
    cases = [dict(), dict(valid_lens=torch.tensor([7, 0, 2])), dict(causal=True),
             dict(valid_lens=torch.randint(0, K + 1, (B, K)), causal=True),
             dict(attn_mask=torch.rand(B, 1, K, K) < 0.5)]
    for kwargs in cases:
        fused = mha(q, kv, kv, **kwargs)
        explicit, _ = with_weights(mha, q, kv, kv, **kwargs)
        torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)


def test_fused_path_is_taken_without_weights(monkeypatch):
    calls = []
    real = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *a, **k: calls.append(1) or real(*a, **k))
    mha = tl.MultiHeadAttention(D, H)
    X = torch.randn(B, Q, D)
    mha(X, X, X, torch.tensor([1, 2, 3]))
    assert calls == [1]
    with_weights(mha, X, X, X)  # recording: the explicit path
    assert calls == [1]
    mha(X, X, X)                # after recording: the fused kernel again
    assert calls == [1, 1]


def test_matches_d2l_multihead_attention(d2l):
    ref = d2l.MultiHeadAttention(D, H, 0.0, bias=True).eval()
    q, kv = torch.randn(B, Q, D), torch.randn(B, K, D)
    ref(q, kv, kv, None)  # materialise the lazy layers
    randomize_(ref)
    ours = tl.MultiHeadAttention(D, H, bias=True).eval()
    ours.load_state_dict(ref.state_dict())  # same parameter names: W_q, W_k, W_v, W_o
    for valid_lens in (None, torch.tensor([3, 5, 7]), torch.randint(1, K + 1, (B, Q))):
        out, W = with_weights(ours, q, kv, kv, valid_lens)
        torch.testing.assert_close(out, ref(q, kv, kv, valid_lens), atol=1e-5, rtol=1e-4)
        # d2l folds the heads into the batch: (B*h, Q, K)
        torch.testing.assert_close(W.reshape(B * H, Q, K), ref.attention.attention_weights)


def test_head_reshapes_match_d2l(d2l):
    ref = d2l.MultiHeadAttention(D, H, 0.0)
    X = torch.randn(B, Q, D)
    folded = tl.transpose_qkv(X, H)
    assert folded.shape == (B * H, Q, D // H)
    assert torch.equal(folded, ref.transpose_qkv(X))
    assert torch.equal(tl.transpose_output(folded, H), X)
    assert torch.equal(tl.merge_heads(tl.split_heads(X, H)), X)
    heads, d_k = tl.split_heads(X, H), D // H                 # (B, h, Q, d_k)
    for i in range(H):      # head i holds features i d_k, ..., (i + 1) d_k - 1 of every position
        assert torch.equal(heads[:, i], X[..., i * d_k:(i + 1) * d_k])


@pytest.mark.parametrize("bias", [False, True])
def test_fused_qkv_form_computes_the_same_function(bias):
    mha = randomize_(tl.MultiHeadAttention(D, H, bias=bias)).eval()
    fused = tl.fused_from_separate(mha).eval()
    assert fused.qkv.weight.shape == (3 * D, D)
    X = torch.randn(B, K, D)
    valid_lens = torch.tensor([7, 2, 5])
    for kwargs in (dict(), dict(valid_lens=valid_lens), dict(causal=True)):
        torch.testing.assert_close(fused(X, **kwargs), mha(X, X, X, **kwargs), atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(with_weights(fused, X, **kwargs)[1],
                                   with_weights(mha, X, X, X, **kwargs)[1])
    back = tl.separate_from_fused(fused)
    for name, p in mha.state_dict().items():
        assert torch.equal(back.state_dict()[name], p), name


def test_post_norm_layout_equals_addnorm_around_mha():
    mha = randomize_(tl.MultiHeadAttention(D, H)).eval()
    addnorm = randomize_(tl.AddNorm(D)).eval()
    jadore = tl.post_norm_from_separate(mha, addnorm).eval()
    q, kv = torch.randn(B, Q, D), torch.randn(B, K, D)
    valid_lens = torch.tensor([7, 3, 1])
    keep = (torch.arange(K)[None, :] < valid_lens[:, None])[:, None, :]  # (B, 1, K)
    out, attn = jadore(q, kv, kv, mask=keep)
    ref_attended, ref_w = with_weights(mha, q, kv, kv, valid_lens)
    torch.testing.assert_close(out, addnorm(q, ref_attended), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(attn, ref_w, atol=1e-6, rtol=1e-5)
    with pytest.raises(ValueError, match="bias=False"):
        tl.post_norm_from_separate(tl.MultiHeadAttention(D, H, bias=True), addnorm)
    with pytest.raises(ValueError, match="one dropout rate"):
        tl.post_norm_from_separate(tl.MultiHeadAttention(D, H, dropout=0.1), addnorm)


def test_post_norm_layout_gives_a_query_without_keys_zero_weights():
    """The library's rule in every layout: no valid key, all-zero weights
    (jadore's -1e9 fill would give uniform ones)."""
    mha = randomize_(tl.MultiHeadAttention(D, H)).eval()
    jadore = tl.post_norm_from_separate(mha, tl.AddNorm(D)).eval()
    q, kv = torch.randn(B, Q, D), torch.randn(B, K, D)
    valid_lens = torch.tensor([0, 3, 7])
    keep = (torch.arange(K)[None, :] < valid_lens[:, None])[:, None, :]
    _, attn = jadore(q, kv, kv, mask=keep)
    assert torch.equal(attn[0], torch.zeros(H, Q, K))
    torch.testing.assert_close(attn, with_weights(mha, q, kv, kv, valid_lens)[1])


def test_batchnorm_addnorm_normalises_over_batch_and_positions():
    # torch's BatchNorm1d on the (B*T, d) rows of X + Y, with the same affine weights: the
    # statistics over the batch and every position, in training mode and in evaluation mode
    torch.manual_seed(0)
    bn = tl.AddNorm(D, norm="batch").train()
    X, Y = torch.randn(B, K, D) * 3 + 1, torch.randn(B, K, D)
    reference = torch.nn.BatchNorm1d(D).train()
    with torch.no_grad():
        reference.weight.uniform_(0.5, 2.0)
        reference.bias.normal_()
    bn.bn.load_state_dict(reference.state_dict())
    rows = (X + Y).reshape(-1, D)
    torch.testing.assert_close(bn(X, Y), reference(rows).reshape(B, K, D))
    torch.testing.assert_close(bn.bn.running_mean, reference.running_mean)
    torch.testing.assert_close(bn.bn.running_var, reference.running_var)
    bn.eval(), reference.eval()
    torch.testing.assert_close(bn(X, Y), reference(rows).reshape(B, K, D))
    model = tl.Transformer(tl.TransformerConfig(20, 20, num_hiddens=16, ffn_num_hiddens=32, norm="batch"))
    assert isinstance(model.encoder.blks[0].addnorm1.bn, torch.nn.BatchNorm1d)
    with pytest.raises(ValueError, match="norm"):
        tl.AddNorm(D, norm="group")
