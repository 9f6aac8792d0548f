"""Masked softmax and the scoring functions against torch's fused attention and d2l."""

import math

import pytest
import torch
import torch.nn.functional as F

import transformer_lib as tl
from conftest import with_weights


def test_masked_softmax_matches_d2l_for_1d_and_2d_valid_lens(d2l):
    X = torch.randn(2, 3, 5)
    for valid_lens in (torch.tensor([2, 5]), torch.tensor([[1, 3, 5], [2, 4, 4]])):
        expected = d2l.masked_softmax(X.clone(), valid_lens)
        torch.testing.assert_close(tl.masked_softmax(X, valid_lens), expected)


def test_row_without_valid_keys_is_zero_not_uniform(d2l):
    X = torch.randn(2, 2, 4)
    valid_lens = torch.tensor([0, 3])
    ours = tl.masked_softmax(X, valid_lens)
    assert torch.equal(ours[0], torch.zeros(2, 4))
    # d2l fills with -1e6, so an all-masked row becomes uniform (d2l PR #2423).
    torch.testing.assert_close(d2l.masked_softmax(X.clone(), valid_lens)[0], torch.full((2, 4), 0.25))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_no_nan_in_low_precision_even_with_huge_scores(dtype):
    X = (torch.randn(3, 4, 6) * 1e4).to(dtype)
    valid_lens = torch.tensor([0, 1, 6])
    W = tl.masked_softmax(X, valid_lens, causal=True)
    assert not W.isnan().any()
    assert torch.equal(W[0], torch.zeros_like(W[0]))
    assert torch.equal(W[1][..., 0], torch.ones(4, dtype=dtype))     # one key: all its weight
    assert torch.equal(W[1][..., 1:], torch.zeros(4, 5, dtype=dtype))
    torch.testing.assert_close(W[2].float().sum(-1), torch.ones(4), atol=1e-2, rtol=0)


def test_gradients_stay_finite_for_empty_rows():
    X = torch.randn(2, 3, 4, requires_grad=True)
    q = torch.randn(2, 2, 3, 8, requires_grad=True)
    tl.masked_softmax(X, torch.tensor([0, 2])).sum().backward()
    tl.scaled_dot_product_attention(q, q, q, torch.tensor([0, 3])).sum().backward()
    assert torch.isfinite(X.grad).all() and torch.isfinite(q.grad).all()
    # a row with no valid key has weights exactly 0, whatever its scores: no gradient to them,
    # and a batch whose every query is empty outputs zeros, with no gradient to its q, k, v
    assert torch.equal(X.grad[0], torch.zeros(3, 4)) and torch.equal(X.grad[1][:, 2:], torch.zeros(3, 2))
    assert torch.equal(q.grad[0], torch.zeros(2, 3, 8)) and q.grad[1].abs().sum() > 0


def _random_mask(shape, p=0.6):
    return torch.rand(shape) < p


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_torch_sdpa(causal):
    q, k, v = torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 4)
    mask = _random_mask((2, 1, 5, 5))
    mask[..., 0] = True  # every query sees key 0, so torch's result has no NaN rows either
    ref_mask = mask & torch.ones(5, 5, dtype=torch.bool).tril() if causal else mask
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=ref_mask)
    explicit, _ = tl.scaled_dot_product_attention(q, k, v, attn_mask=mask, causal=causal, return_weights=True)
    fused = tl.scaled_dot_product_attention(q, k, v, attn_mask=mask, causal=causal)
    torch.testing.assert_close(explicit, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fused, ref, atol=1e-5, rtol=1e-5)


def test_explicit_weights_are_softmax_of_scaled_scores():
    q, k, v = torch.randn(2, 4, 8), torch.randn(2, 6, 8), torch.randn(2, 6, 3)
    out, W = with_weights(tl.DotProductAttention(), q, k, v)
    torch.testing.assert_close(W, torch.softmax(q @ k.transpose(1, 2) / math.sqrt(8), -1))
    torch.testing.assert_close(out, W @ v)


def test_dot_product_attention_matches_d2l(d2l):
    q, k, v = torch.randn(2, 4, 8), torch.randn(2, 6, 8), torch.randn(2, 6, 3)
    valid_lens = torch.tensor([2, 6])
    ref = d2l.DotProductAttention(0.0).eval()
    out, W = with_weights(tl.DotProductAttention().eval(), q, k, v, valid_lens)
    torch.testing.assert_close(out, ref(q, k, v, valid_lens))
    torch.testing.assert_close(W, ref.attention_weights)


def test_causal_mask_is_bottom_right_aligned_for_cached_queries():
    mask = tl.attention_mask((1, 2, 5), causal=True)  # 2 new queries after 3 cached keys
    assert mask.tolist() == [[True, True, True, True, False], [True, True, True, True, True]]


def test_additive_attention_matches_d2l(d2l):
    q, k, v = torch.randn(2, 1, 20), torch.randn(2, 10, 2), torch.randn(2, 10, 4)
    valid_lens = torch.tensor([2, 6])
    ref = d2l.AdditiveAttention(8, 0.0).eval()
    ref(q, k, v, valid_lens)  # materialise d2l's lazy layers
    ours = tl.AdditiveAttention(8, query_size=20, key_size=2).eval()
    ours.load_state_dict(ref.state_dict())
    out, W = with_weights(ours, q, k, v, valid_lens)
    torch.testing.assert_close(out, ref(q, k, v, valid_lens))
    torch.testing.assert_close(W, ref.attention_weights)


@pytest.mark.parametrize("valid_lens", [None, torch.tensor([6, 3])], ids=["no mask", "valid_lens"])
def test_attention_dropout_drops_weights_in_training_only(valid_lens):
    torch.manual_seed(0)
    q, k, v = torch.randn(2, 4, 8), torch.randn(2, 6, 8), torch.randn(2, 6, 8)
    layer = tl.DotProductAttention(dropout=0.5).train()
    # the explicit path (recording): dropout on the weights, with the layer's own draw
    with tl.record_attention(layer) as maps:
        torch.manual_seed(1)
        out = layer(q, k, v, valid_lens)
    [weights] = maps.of(layer)
    torch.manual_seed(1)
    torch.testing.assert_close(out, F.dropout(weights, 0.5) @ v)
    assert not torch.allclose(out, weights @ v, atol=1e-3)
    # the fused path: another output at every draw, their mean the evaluation output (dropout
    # rescales what it keeps by 1 / (1 - p))
    draws = torch.stack([layer(q, k, v, valid_lens) for _ in range(4000)])
    assert not torch.allclose(draws[0], draws[1])
    layer.eval()
    expected = layer(q, k, v, valid_lens)
    torch.testing.assert_close(expected, weights @ v)
    # (the largest gap over 5 seeds was 0.064; an unscaled dropout would halve the output)
    torch.testing.assert_close(draws.mean(0), expected, atol=0.15, rtol=0)
    assert torch.equal(layer(q, k, v, valid_lens), expected)           # no dropout in eval
