"""Property tests (hypothesis, 200 examples each; see the profile in conftest.py)."""

import math

import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

import transformer_lib as tl

DTYPES = st.sampled_from([torch.float32, torch.bfloat16, torch.float16])


@st.composite
def scores_and_lens(draw):
    B, h, Q, K = (draw(st.integers(1, n)) for n in (4, 3, 6, 9))
    seed = draw(st.integers(0, 2**31 - 1))
    g = torch.Generator().manual_seed(seed)
    scale = draw(st.sampled_from([1.0, 30.0, 1e4]))
    X = torch.randn(B, h, Q, K, generator=g) * scale
    if draw(st.booleans()):
        valid_lens = torch.randint(0, K + 1, (B,), generator=g)
    else:
        valid_lens = torch.randint(0, K + 1, (B, Q), generator=g)
    causal = draw(st.booleans())
    return X, valid_lens, causal


def _keep_mask(X, valid_lens, causal):
    B, h, Q, K = X.shape
    lens = valid_lens[:, None, None, None] if valid_lens.dim() == 1 else valid_lens[:, None, :, None]
    keep = torch.arange(K) < lens  # (B, 1|h, Q|1, K) broadcast below
    if causal:
        keep = keep & (torch.arange(K)[None, :] <= torch.arange(Q)[:, None] + (K - Q))
    return keep.expand(B, h, Q, K)


@given(scores_and_lens(), DTYPES)
def test_weights_over_valid_keys_sum_to_one(case, dtype):
    X, valid_lens, causal = case
    W = tl.masked_softmax(X.to(dtype), valid_lens, causal=causal).float()
    keep = _keep_mask(X, valid_lens, causal)
    row_has_key = keep.any(-1)
    assert not W.isnan().any()
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    sums = W.sum(-1)
    assert torch.allclose(sums[row_has_key], torch.ones_like(sums[row_has_key]), atol=tol)
    assert torch.equal(sums[~row_has_key], torch.zeros_like(sums[~row_has_key]))


@given(scores_and_lens(), DTYPES)
def test_masked_weights_are_exactly_zero(case, dtype):
    X, valid_lens, causal = case
    W = tl.masked_softmax(X.to(dtype), valid_lens, causal=causal)
    keep = _keep_mask(X, valid_lens, causal)
    assert torch.equal(W[~keep], torch.zeros_like(W[~keep]))


# Small encoder-decoders, post-norm (the paper) and pre-norm, shared by the examples (built once:
# hypothesis varies the data).
torch.manual_seed(0)
SRC_VOCAB, TGT_VOCAB = 30, 25
MODELS = {layout: tl.Transformer(tl.TransformerConfig(
    SRC_VOCAB, TGT_VOCAB, num_hiddens=16, ffn_num_hiddens=32, num_heads=4, num_enc_blks=2,
    num_dec_blks=2, dropout=0.2, norm_first=layout == "pre-norm")) for layout in ("post-norm", "pre-norm")}
LAYOUTS = pytest.mark.parametrize("layout", list(MODELS))


@LAYOUTS
@given(st.integers(0, 2**31 - 1), st.integers(1, 3), st.integers(2, 8), st.data(), st.booleans())
def test_no_future_leakage(layout, seed, B, T, data, training):
    """Changing target tokens after position t leaves the logits at positions <= t unchanged,
    in training mode (dropout on, same random stream) and in evaluation mode."""
    t = data.draw(st.integers(0, T - 2))
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, SRC_VOCAB, (B, 5), generator=g)
    src_lens = torch.randint(1, 6, (B,), generator=g)
    tgt = torch.randint(0, TGT_VOCAB, (B, T), generator=g)
    changed = tgt.clone()
    changed[:, t + 1:] = torch.randint(0, TGT_VOCAB, (B, T - t - 1), generator=g)
    model = MODELS[layout]
    model.train(training)
    outputs = []
    for y in (tgt, changed):
        torch.manual_seed(seed)
        with torch.no_grad():
            outputs.append(model(src, y, src_lens))
    model.eval()
    torch.testing.assert_close(outputs[0][:, :t + 1], outputs[1][:, :t + 1], atol=1e-5, rtol=1e-5)


@LAYOUTS
@given(st.integers(0, 2**31 - 1), st.integers(1, 3), st.integers(1, 6), st.integers(1, 5))
def test_appending_padding_leaves_valid_outputs_unchanged(layout, seed, B, S, extra):
    model = MODELS[layout]
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, SRC_VOCAB, (B, S), generator=g)
    src_lens = torch.randint(1, S + 1, (B,), generator=g)
    padded = torch.cat([src, torch.randint(0, SRC_VOCAB, (B, extra), generator=g)], dim=1)
    tgt = torch.randint(0, TGT_VOCAB, (B, 4), generator=g)
    model.eval()
    with torch.no_grad():
        enc, enc_padded = model.encoder(src, src_lens), model.encoder(padded, src_lens)
        logits, logits_padded = model(src, tgt, src_lens), model(padded, tgt, src_lens)
    keep = torch.arange(S)[None, :] < src_lens[:, None]
    torch.testing.assert_close(enc[keep], enc_padded[:, :S][keep], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(logits, logits_padded, atol=1e-5, rtol=1e-5)


MHA = tl.MultiHeadAttention(12, 3, bias=True).eval()
BLOCK = tl.TransformerEncoderBlock(12, 24, 3).eval()


@given(st.integers(0, 2**31 - 1), st.integers(1, 3), st.integers(1, 9))
def test_self_attention_without_pe_is_permutation_equivariant(seed, B, T):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(B, T, 12, generator=g)
    perm = torch.randperm(T, generator=g)
    with torch.no_grad():
        for f in (lambda Z: MHA(Z, Z, Z), lambda Z: BLOCK(Z)):
            torch.testing.assert_close(f(X[:, perm]), f(X)[:, perm], atol=1e-5, rtol=1e-5)


@given(st.integers(1, 32).map(lambda n: 2 * n), st.integers(0, 2047), st.data())
def test_positional_encoding_equals_the_formula(num_hiddens, pos, data):
    i = data.draw(st.integers(0, num_hiddens // 2 - 1))
    P = tl.sinusoidal_encoding(2048, num_hiddens)
    angle = pos / 10000 ** (2 * i / num_hiddens)
    assert math.isclose(P[pos, 2 * i].item(), math.sin(angle), abs_tol=1e-6)
    assert math.isclose(P[pos, 2 * i + 1].item(), math.cos(angle), abs_tol=1e-6)


@given(scores_and_lens(), st.booleans(), st.integers(0, 2**31 - 1))
@example((torch.zeros(2, 3, 5, 5), torch.tensor([5, 5]), True), True, 0)   # torch's is_causal
def test_fused_and_explicit_attention_agree(case, without_lens, seed):
    # the shapes and masks of scores_and_lens; without valid_lens the fused path runs with
    # torch's own causal mask (is_causal, when Q = K) or with no mask at all
    X, valid_lens, causal = case
    valid_lens = None if without_lens else valid_lens
    B, h, Q, K = X.shape
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, h, Q, 8, generator=g)
    k, v = torch.randn(B, h, K, 8, generator=g), torch.randn(B, h, K, 5, generator=g)
    fused = tl.scaled_dot_product_attention(q, k, v, valid_lens, causal=causal)
    explicit, _ = tl.scaled_dot_product_attention(q, k, v, valid_lens, causal=causal, return_weights=True)
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)
