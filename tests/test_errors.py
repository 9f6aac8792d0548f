"""Bad input raises a clear error that names the argument -- never a NaN or a deep torch error.

Shapes and dtypes are checked by every layer (cheap); values (token ids in the vocabulary, lengths
in range) once, at the entry points: the model's and the stacks' forward, decoding and fit, and the
attention functions and layers that the chapters call directly (tl.masked_softmax, tl.attention_mask,
tl.scaled_dot_product_attention, tl.DotProductAttention, tl.AdditiveAttention, tl.MultiHeadAttention,
tl.FusedSelfAttention, the blocks) -- on any device: a direct call is not a training loop's inner step.
Inside a model's encode/decode the layers skip them (test_entry_points.py: no host read there, so no
GPU synchronisation per layer and step)."""

import dataclasses
import math

import numpy as np
import pytest
import torch

import transformer_lib as tl
from transformer_lib.translation import (RECIPES, BatchLoader, TrainConfig, Vocab, evaluate_loss,
                                         fit, sequence_loss, translate)
from transformer_lib.instruments import (figure_explorer, language_model_box, plot_loss_curves,
                                        plot_positional_encoding, show_heatmaps)
from transformer_lib.model import DecoderOnlyConfig, DecoderOnlyTransformer
from transformer_lib.translation import autocast_dtype, bootstrap_bleu, precision_name
from transformer_lib.translation.translate import decode_ids, evaluate_bleu, held_out_bleu
from transformer_lib.translation.decoding import gnmt_length_penalty
from transformer_lib.translation.training import learning_rate

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
    "beam search with a negative length_penalty":
        (lambda: tl.beam_search(model, tokens, bos_id=1, eos_id=2, max_len=3, length_penalty=-0.6),
         ValueError, "length_penalty must be a finite number >= 0"),
    "length penalty with alpha NaN":
        (lambda: gnmt_length_penalty(torch.ones(3), float("nan")), ValueError, "alpha"),
    "length penalty with a string alpha":
        (lambda: gnmt_length_penalty(torch.ones(3), "0.6"), ValueError, "alpha"),
    "length penalty of negative lengths":
        (lambda: gnmt_length_penalty(torch.tensor([3, -1]), 0.6), ValueError, "lengths must be >= 0"),
    "length penalty of a list": (lambda: gnmt_length_penalty([3, 4], 0.6), TypeError, "lengths"),
    "length penalty of boolean lengths":
        (lambda: gnmt_length_penalty(torch.ones(3, dtype=torch.bool), 0.6), TypeError, "lengths"),
    "FFN input of the wrong width":
        (lambda: tl.PositionWiseFFN(32, D)(torch.randn(2, 3, 8)), ValueError, "X"),
    "FFN with zero inputs (not the default)":
        (lambda: tl.PositionWiseFFN(32, D, num_inputs=0), ValueError, "num_inputs"),
    "AddNorm with different shapes": (lambda: tl.AddNorm(D)(X, X[:, :3]), ValueError, "X .* and Y"),
    "AddNorm over zero features": (lambda: tl.AddNorm(0), ValueError, "norm_shape must be a positive"),
    "AddNorm's width as text": (lambda: tl.AddNorm("16"), ValueError, "norm_shape must be a positive"),
    "BatchNorm's AddNorm over two axes":
        (lambda: tl.AddNorm((4, D), norm="batch"), ValueError, "one int .* norm='batch'"),
    "attention's bias as text":
        (lambda: tl.MultiHeadAttention(D, H, bias="no"), TypeError, "bias must be True or False"),
    "a negative step into the schedule":
        (lambda: learning_rate(TrainConfig(epochs=1), -1, 0.0), ValueError, "step must be an int >= 0"),
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
    "additive attention of width 0": (lambda: tl.AdditiveAttention(0), ValueError, "num_hiddens"),
    "additive attention with a negative key_size":
        (lambda: tl.AdditiveAttention(8, key_size=-3), ValueError, "key_size"),
    "multi-head attention with query_size 0":
        (lambda: tl.MultiHeadAttention(D, H, query_size=0), ValueError, "query_size"),
    "split_heads with heads not dividing the width": (lambda: tl.split_heads(X, 3), ValueError, "num_heads"),
    "split_heads of a matrix": (lambda: tl.split_heads(X[0], H), ValueError, "X must have 3"),
    "merge_heads of a rank-3 tensor": (lambda: tl.merge_heads(X), ValueError, "X must have 4"),
    "transpose_output with heads not dividing B*h":
        (lambda: tl.transpose_output(torch.randn(6, 5, 4), 4), ValueError, "num_heads"),
    "decoding more steps than the model has positions":
        (lambda: tl.greedy_decode(model, tokens, bos_id=1, max_len=9), ValueError,
         r"max_len must be at most the model's max_len \(8"),
    "a beam search of more steps than the model has positions":
        (lambda: tl.beam_search(model, tokens, bos_id=1, eos_id=2, max_len=9), ValueError,
         r"max_len must be at most the model's max_len \(8"),
    "a numpy int for a size":
        (lambda: tl.MultiHeadAttention(D, np.int64(H)), ValueError, r"num_heads .*pass int\("),
    "a 0-d tensor into a layer of a given width":
        (lambda: tl.PositionWiseFFN(8, D)(torch.tensor(1.0)), ValueError, "X must have last dim"),
}

# The data and translation functions the chapters call, with the mistakes a reader makes when
# editing a cell: text where token lists go and the reverse, a vocabulary in the wrong place.
letters = Vocab([list("abcdefghijklmnop")])                  # 20 tokens: the model's size
more_letters = Vocab([list("abcdefghijklmnopqrst")])         # 24
pair = (list("abc"), list("cba"))
jadore, Z = tl.PostNormMultiHeadAttention(3, 32, 10, 10), torch.randn(2, 7, 32)
CASES.update({
    "a language model box's prompt as ids":
        (lambda: language_model_box([2, 5]), TypeError, "prompt must be a string"),
    "a language model box below temperature 0":
        (lambda: language_model_box("I", temperature=-0.5), ValueError, "temperature must be"),
    "a language model box's temperature as text":
        (lambda: language_model_box("I", temperature="hot"), ValueError, "temperature must be"),
    "a language model box's temperature between the slider's steps":
        (lambda: language_model_box("I", temperature=0.85), ValueError, "steps of 0.1"),
    "a language model box's prompt on two lines":
        (lambda: language_model_box("I am\nhere"), ValueError, "one line"),
    "a language model box's seed beyond JavaScript's whole numbers":
        (lambda: language_model_box("I", seed=2 ** 53), ValueError, "below 2"),
    "a language model box with top-k 0":
        (lambda: language_model_box("I", top_k=0), ValueError, "top_k"),
    "a language model box with a negative seed":
        (lambda: language_model_box("I", seed=-1), ValueError, "seed"),
    "a vocabulary of strings, not token lists":
        (lambda: Vocab(["the cat sat", "a dog"]), TypeError, "sentences must be a list of token"),
    "pairs of strings": (lambda: BatchLoader([("a b", "b a")], letters, letters), TypeError,
                         r"pairs must be .*pairs\[0\] is \('a b'"),
    "one pair without the list around it":
        (lambda: BatchLoader(pair, letters, letters), TypeError, r"pairs\[0\] is \['a'"),
    "a float batch size": (lambda: BatchLoader([pair], letters, letters, 32.0), ValueError,
                           "batch_size must be a positive int"),
    "no target vocabulary": (lambda: BatchLoader([pair], letters, None), TypeError, "tgt_vocab"),
    "sentences as text into decode_ids":
        (lambda: decode_ids(model, ["a b", "c"], letters, letters), TypeError, "sources must be"),
    "token lists into translate":
        (lambda: translate(model, [["a", "b"]], letters, letters), TypeError,
         r"sentences\[0\] must be a string"),
    "a vocabulary larger than the model's":
        (lambda: translate(model, ["a b"], more_letters, letters), ValueError,
         "src_vocab has 24 tokens, more than the model's encoder"),
    "translating with max_len 0":
        (lambda: translate(model, ["a b"], letters, letters, max_len=0), ValueError, "max_len"),
    "detokenize a string": (lambda: Vocab.detokenize("va !"), TypeError, "tokens must be a list"),
    "to_tokens of a batch": (lambda: letters.to_tokens(tokens), ValueError, "ids must be one"),
    "to_tokens of a negative id": (lambda: letters.to_tokens([-1]), ValueError, r"ids must lie in"),
    "logits of float ids": (lambda: model.logits(tokens.float(), tokens), TypeError, "src must have"),
    "embed of one sentence's ids, not a batch":
        (lambda: encoder.embed(tokens[0]), ValueError, r"X must have 2 dimensions, got shape \(5,\)"),
    "a loss with labels one step too long":
        (lambda: sequence_loss(torch.randn(2, 5, 20), torch.zeros(2, 6, dtype=torch.long)),
         ValueError, r"labels must be \(B, T\) = \(2, 5\)"),
    "a loss with float labels":
        (lambda: sequence_loss(torch.randn(2, 5, 20), torch.zeros(2, 5)), TypeError, "labels"),
    "label smoothing of 1.5":
        (lambda: sequence_loss(torch.randn(2, 5, 20), torch.zeros(2, 5, dtype=torch.long),
                               label_smoothing=1.5), ValueError, "label_smoothing"),
    "fit on a list of pairs":
        (lambda: fit(model, [pair], config=TrainConfig(device="cpu")), TypeError,
         "train_loader must give batches .* BatchLoader"),
    "evaluate_loss on a list of pairs":
        (lambda: evaluate_loss(model, [pair]), TypeError, "loader must give batches"),
    "fit with a recipe for its config":
        (lambda: fit(model, BatchLoader([pair], letters, letters), config=RECIPES["basic"]),
         TypeError, r"config must be a TrainConfig .*recipe.train"),
    "fit with a number for its clock":
        (lambda: fit(model, BatchLoader([pair], letters, letters), config=TrainConfig(device="cpu"),
                     clock=12.5), TypeError, "clock must be a function"),
    "log_every 0": (lambda: TrainConfig(log_every=0), ValueError, "log_every"),
    "clip_norm 0 (no step would move)": (lambda: TrainConfig(clip_norm=0), ValueError, "clip_norm"),
    "label_smoothing of 1": (lambda: TrainConfig(label_smoothing=1.0), ValueError, "label_smoothing"),
    "negative warm-up": (lambda: TrainConfig(warmup_steps=-5), ValueError, "warmup_steps"),
    "AdamW's beta2 of 1 (no mean at all)": (lambda: TrainConfig(beta2=1.0), ValueError,
                                            "beta2 must be below 1"),
    "a negative beta2": (lambda: TrainConfig(beta2=-0.1), ValueError, "beta2 must be a number"),
    "epochs as text": (lambda: TrainConfig(epochs="10"), ValueError, "epochs"),
    "negative max_seconds": (lambda: TrainConfig(max_seconds=-1), ValueError, "max_seconds"),
    "a device torch does not know": (lambda: TrainConfig(device="gpu"), ValueError, "device"),
    "query and keys unbatched":
        (lambda: tl.scaled_dot_product_attention(X[0, 0], X[0], X[0]), ValueError,
         "queries must be batched"),
    "keys of another rank than the queries":
        (lambda: tl.scaled_dot_product_attention(X, X[0], X), ValueError,
         r"keys must have as many dimensions as the queries \(3\)"),
    "the scores where their shape goes":
        (lambda: tl.attention_mask(S, torch.tensor([1, 2])), TypeError, "scores_shape must be a shape"),
    "an unknown recipe": (lambda: RECIPES["Basic"], KeyError, "the recipes are d2l, basic"),
    "a bootstrap level as a fraction":
        (lambda: bootstrap_bleu(["a b c d"], ["a b c d"], level=0.95), ValueError, "level"),
    "fewer titles than heatmaps":
        (lambda: show_heatmaps(torch.rand(1, 3, 4, 4), titles=["a"]), ValueError, "titles"),
    "tick labels of another length":
        (lambda: show_heatmaps(torch.rand(4, 6), xticklabels=list("abc")), ValueError,
         "xticklabels must have 6"),
    "a render function that returns nothing":
        (lambda: figure_explorer(lambda d_k: None, {"d_k": [4, 16]}, mode="live"), TypeError,
         "return fig"),
    "jadore's layer given queries of another width":
        (lambda: jadore(torch.randn(2, 7, 16), Z, Z), ValueError, "q must have last dimension 32"),
    "jadore's layer given a mask for other keys":
        (lambda: jadore(Z, Z, Z, torch.ones(2, 1, 5)), ValueError, r"mask must be \(B, Q or 1, K\)"),
    "post_norm_from_separate with its arguments swapped":
        (lambda: tl.post_norm_from_separate(tl.AddNorm(16), tl.MultiHeadAttention(16, 4, bias=False)),
         TypeError, "mha must be a MultiHeadAttention"),
    "post_norm_from_separate with a narrower AddNorm":
        (lambda: tl.post_norm_from_separate(tl.MultiHeadAttention(16, 4, bias=False), tl.AddNorm(8)),
         ValueError, "addnorm must normalise num_hiddens = 16"),
    "beam search without an eos_id":
        (lambda: tl.beam_search(model, tokens, bos_id=1, eos_id=None, max_len=3), ValueError, "eos_id"),
    "a token's text for its id": (lambda: tl.greedy_decode(model, tokens, bos_id="<bos>", max_len=3),
                                  ValueError, "bos_id must be a target token id"),
    "BLEU of validation pairs instead of test groups":
        (lambda: evaluate_bleu(model, [pair], letters, letters), TypeError, "test_groups must hold"),
    "one beam size where a list goes":
        (lambda: held_out_bleu(model, [], letters, letters, beam_sizes=4), TypeError, "beam_sizes"),
    "a config's use_bias as text":
        (lambda: tl.TransformerConfig(10, 10, use_bias="yes"), TypeError, "use_bias"),
    "intervene on a decoder-only model":
        (lambda: tl.intervene(DecoderOnlyTransformer(DecoderOnlyConfig(10, num_hiddens=16)),
                              window=1).__enter__(), TypeError, "intervene needs an encoder-decoder"),
    "an encoding column past d":
        (lambda: plot_positional_encoding(torch.rand(10, 8), columns=(6, 40)), ValueError,
         r"columns must be encoding dimensions 0 to 7, got \[40\]"),
    "one history where a dict of them goes":
        (lambda: plot_loss_curves([1, 2]), TypeError, "histories must be a dict"),
    "a list of values where the controls' dict goes":
        (lambda: figure_explorer(lambda d_k: None, [4, 16]), TypeError, "controls must be a dict"),
    "precision_name of an integer dtype":
        (lambda: precision_name(torch.int64), ValueError, "dtype must be"),
})


def test_the_training_settings_that_the_book_uses_pass_the_checks():
    TrainConfig(epochs=0, max_seconds=12.5, warmup_steps=0, clip_norm=math.inf, weight_decay=0,
                label_smoothing=0, device="cpu")
    for recipe in RECIPES.values():
        TrainConfig(**dataclasses.asdict(recipe.train))
    assert precision_name(torch.float32) == precision_name(None) == "float32"
    assert autocast_dtype("float32", "cpu") is None         # a device's name works too


def test_there_are_over_a_hundred_cases():   # as tests/README.md says
    assert len(CASES) > 100


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


# The functions and layers that the chapters call with valid_lens: (number of queries Q, call), each on
# K = 5 keys (X has 5 positions).
NUM_KEYS = 5
S = torch.randn(2, 3, NUM_KEYS)  # scores (B, Q, K)
additive = tl.AdditiveAttention(8, query_size=D, key_size=D)
ATTENTION = {
    "tl.masked_softmax": (3, lambda lens: tl.masked_softmax(S, lens)),
    "tl.attention_mask": (3, lambda lens: tl.attention_mask(S.shape, lens)),
    "tl.scaled_dot_product_attention": (5, lambda lens: tl.scaled_dot_product_attention(X, X, X, lens)),
    "tl.scaled_dot_product_attention, weights":
        (5, lambda lens: tl.scaled_dot_product_attention(X, X, X, lens, return_weights=True)[1]),
    "tl.DotProductAttention": (5, lambda lens: tl.DotProductAttention()(X, X, X, lens)),
    "tl.AdditiveAttention": (5, lambda lens: additive(X, X, X, lens)),
    "tl.MultiHeadAttention": (5, lambda lens: mha(X, X, X, lens)),
    "tl.FusedSelfAttention": (5, lambda lens: tl.FusedSelfAttention(D, H)(X, lens)),
    "encoder block": (5, lambda lens: encoder.blks[0](X, lens)),
    "decoder block, cross-attention": (2, lambda lens: decoder.blks[0](X[:, :2], X, lens)),
}


def per_query(Q, last):
    """(B, Q) lengths, all valid but the last one."""
    lens = torch.full((2, Q), NUM_KEYS)
    lens[1, -1] = last
    return lens


OUT_OF_RANGE = {
    "negative": lambda Q: torch.tensor([-1, 2]),
    "beyond the keys": lambda Q: torch.tensor([2, NUM_KEYS + 1]),
    "(B, Q), one of them negative": lambda Q: per_query(Q, -1),
    "(B, Q), one of them beyond the keys": lambda Q: per_query(Q, NUM_KEYS + 1),
}


@pytest.mark.parametrize("lens", list(OUT_OF_RANGE))
@pytest.mark.parametrize("name", list(ATTENTION))
def test_attention_rejects_lengths_outside_the_keys(name, lens):
    Q, call = ATTENTION[name]
    with pytest.raises(ValueError, match=r"valid_lens must lie in \[0, 5\] \(the number of keys\)"):
        call(OUT_OF_RANGE[lens](Q))


@pytest.mark.parametrize("name", list(ATTENTION))
def test_attention_accepts_every_length_from_zero_to_the_number_of_keys(name):
    Q, call = ATTENTION[name]
    for lens in (torch.tensor([NUM_KEYS, NUM_KEYS]), torch.tensor([0, NUM_KEYS]),
                 torch.arange(2 * Q).reshape(2, Q) % (NUM_KEYS + 1)):
        out = call(lens)
        assert out.dtype == torch.bool or torch.isfinite(out).all()


def test_the_checks_come_back_after_a_model_pass_that_skips_them():
    """encode/decode skip the layers' value checks (their callers checked); after they return, or
    raise, a direct call is checked again."""
    encoder.encode(tokens, torch.tensor([6, 2]))  # trusts its caller: no check, no host read
    with pytest.raises(ValueError, match="max_len"):
        encoder.encode(torch.zeros(2, 9, dtype=torch.long), torch.tensor([9, 9]))
    with pytest.raises(ValueError, match="valid_lens must lie"):
        tl.masked_softmax(S, torch.tensor([-1, 2]))
