"""Bad input raises a clear error that names the argument -- never a NaN or a deep torch error.

Shapes and dtypes are checked by every layer (cheap); values (token ids in the vocabulary, lengths
in range) once, at the entry points: the model's and the stacks' forward, decoding and fit."""

import pytest
import torch

import transformer_lib as tl

D, H = 16, 4
mha = tl.MultiHeadAttention(D, H)
X = torch.randn(2, 5, D)
encoder = tl.TransformerEncoder(20, D, 32, H, 1, max_len=8)
decoder = tl.TransformerDecoder(20, D, 32, H, 1, max_len=8)
tokens = torch.randint(0, 20, (2, 5))
model = tl.EncoderDecoder(encoder, decoder)

CASES = {
    "heads not dividing hiddens": (lambda: tl.MultiHeadAttention(10, 4), ValueError, "num_heads"),
    "zero heads": (lambda: tl.MultiHeadAttention(16, 0), ValueError, "num_heads"),
    "dropout out of range": (lambda: tl.MultiHeadAttention(16, 4, dropout=1.5), ValueError, "dropout"),
    "queries of rank 2": (lambda: mha(X[0], X, X), ValueError, "queries"),
    "queries of the wrong width": (lambda: mha(torch.randn(2, 5, 8), X, X), ValueError, "queries"),
    "integer queries": (lambda: mha(X.long(), X, X), TypeError, "queries"),
    "keys and values of different lengths": (lambda: mha(X, X, X[:, :3]), ValueError, "keys and values"),
    "batch sizes differ": (lambda: mha(X, X[:1], X[:1]), ValueError, "batch"),
    "valid_lens of the wrong batch size":
        (lambda: mha(X, X, X, torch.tensor([1, 2, 3])), ValueError, "valid_lens"),
    "valid_lens of rank 3":
        (lambda: mha(X, X, X, torch.ones(2, 5, 1, dtype=torch.long)), ValueError, "valid_lens"),
    "valid_lens (B, Q) with the wrong Q":
        (lambda: mha(X, X, X, torch.ones(2, 4, dtype=torch.long)), ValueError, "valid_lens"),
    "float valid_lens": (lambda: mha(X, X, X, torch.tensor([1.0, 2.0])), TypeError, "valid_lens"),
    "negative valid_lens": (lambda: encoder(tokens, torch.tensor([-1, 2])), ValueError, "valid_lens"),
    "valid_lens beyond the keys":
        (lambda: encoder(tokens, torch.tensor([6, 2])), ValueError, r"valid_lens must lie in \[0, 5\]"),
    "float attn_mask": (lambda: mha(X, X, X, attn_mask=torch.ones(5, 5)), TypeError, "attn_mask"),
    "attn_mask of the wrong shape":
        (lambda: mha(X, X, X, attn_mask=torch.ones(4, 5, dtype=torch.bool)), ValueError, "attn_mask"),
    "masked_softmax on a vector": (lambda: tl.masked_softmax(torch.randn(5)), ValueError, "X"),
    "masked_softmax on integers":
        (lambda: tl.masked_softmax(torch.ones(2, 3, 4, dtype=torch.long)), TypeError, "X"),
    "attention with mismatched q/k widths":
        (lambda: tl.DotProductAttention()(X, torch.randn(2, 5, 8), X), ValueError, "queries and keys"),
    "attention with mixed dtypes": (lambda: tl.DotProductAttention()(X, X.double(), X), TypeError, "dtype"),
    "sequence longer than max_len":
        (lambda: encoder(torch.zeros(2, 9, dtype=torch.long)), ValueError, "max_len"),
    "odd num_hiddens for the encoding": (lambda: tl.PositionalEncoding(15), ValueError, "num_hiddens"),
    "positional encoding of the wrong width":
        (lambda: tl.PositionalEncoding(D)(torch.randn(2, 3, 8)), ValueError, "X"),
    "float token ids": (lambda: encoder(tokens.float()), TypeError, "X"),
    "token ids outside the vocabulary": (lambda: encoder(tokens + 20), ValueError, r"outside \[0, 20\)"),
    "token ids of rank 1": (lambda: encoder(tokens[0]), ValueError, "X"),
    "encoder valid_lens of rank 2":
        (lambda: encoder(tokens, torch.ones(2, 5, dtype=torch.long)), ValueError, "valid_lens"),
    "decoder with a different batch": (lambda: decoder(tokens, torch.randn(3, 4, D)), ValueError, "batch"),
    "decoder with the wrong encoder width":
        (lambda: decoder(tokens, torch.randn(2, 4, 8)), ValueError, "memory"),
    "decoder lengths beyond the memory":
        (lambda: decoder(tokens, torch.randn(2, 4, D), torch.tensor([5, 1])), ValueError,
         r"valid_lens must lie in \[0, 4\]"),
    "target ids outside the vocabulary":
        (lambda: model(tokens, tokens + 20), ValueError, r"tgt holds ids outside \[0, 20\)"),
    "source lengths beyond the source":
        (lambda: model(tokens, tokens, torch.tensor([2, 9])), ValueError, "src_valid_lens"),
    "source and target batches differ": (lambda: model(tokens, tokens[:1]), ValueError, "batch"),
    "greedy decoding from a bad bos_id":
        (lambda: tl.greedy_decode(model, tokens, bos_id=20, max_len=3), ValueError, "bos_id"),
    "beam search over ids outside the vocabulary":
        (lambda: tl.beam_search(model, tokens - 20, bos_id=1, eos_id=2, max_len=3), ValueError,
         "src holds ids"),
    "FFN input of the wrong width":
        (lambda: tl.PositionWiseFFN(32, D)(torch.randn(2, 3, 8)), ValueError, "X"),
    "AddNorm with different shapes": (lambda: tl.AddNorm(D)(X, X[:, :3]), ValueError, "X .* and Y"),
    "config with heads not dividing hiddens":
        (lambda: tl.TransformerConfig(10, 10, num_hiddens=30, num_heads=4), ValueError, "num_heads"),
    "config with zero blocks":
        (lambda: tl.TransformerConfig(10, 10, num_enc_blks=0), ValueError, "num_enc_blks"),
    "pre-norm config with BatchNorm":
        (lambda: tl.TransformerConfig(10, 10, norm="batch", norm_first=True), ValueError,
         "norm_first=True .* norm must be 'layer'"),
    "pre-norm block with BatchNorm":
        (lambda: tl.TransformerEncoder(10, D, 32, 4, 1, norm="batch", norm_first=True), ValueError,
         "norm must be 'layer'"),
    "norm_first not a bool":
        (lambda: tl.TransformerConfig(10, 10, norm_first="yes"), TypeError, "norm_first"),
    "greedy decoding of zero steps":
        (lambda: tl.greedy_decode(model, tokens, bos_id=1, max_len=0), ValueError, "max_len"),
    "not a tensor": (lambda: mha(X.tolist(), X, X), TypeError, "queries must be a torch.Tensor"),
}


def test_there_are_at_least_fifteen_cases():
    assert len(CASES) >= 15


@pytest.mark.parametrize("name", list(CASES))
def test_bad_input_raises_a_clear_error(name):
    call, error, pattern = CASES[name]
    with pytest.raises(error, match=pattern):
        call()


def test_decoding_past_max_len_names_it():
    enc = torch.randn(2, 4, D)
    cache = decoder.init_cache()
    decoder(torch.zeros(2, 8, dtype=torch.long), enc, cache=cache)
    with pytest.raises(ValueError, match="max_len=8"):
        decoder(torch.zeros(2, 1, dtype=torch.long), enc, cache=cache)
