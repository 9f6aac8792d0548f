"""Chapter 10's variants: the decoder-only model, tied embeddings, greedy decoding without a
cache, and the reversal task."""

import importlib
import random

import pytest
import torch
from torch import nn

import transformer_lib as tl
from conftest import mha_into_torch, randomize_
from transformer_lib.model import (CausalBlock, DecoderOnlyConfig, DecoderOnlyTransformer,
                                   PreNormCausalBlock, join_source_and_target)
from transformer_lib.translation import (BatchLoader, ReversalTask, TrainConfig, Vocab,
                                         evaluate_loss, exact_matches, fit, greedy_decode,
                                         greedy_decode_uncached, reversal_pairs, reversal_run)

D, H, F = 16, 4, 32
VOCAB = Vocab([list("0123456789")])
V = len(VOCAB)


def decoder_only(seed=0, **changes):
    torch.manual_seed(seed)
    config = dict(num_hiddens=D, ffn_num_hiddens=F, num_heads=H, num_blks=2, dropout=0.0,
                  max_len=64)
    config.update(changes)
    return DecoderOnlyTransformer(DecoderOnlyConfig(V, **config))


def encoder_decoder(seed=0, **changes):
    torch.manual_seed(seed)
    config = dict(num_hiddens=D, ffn_num_hiddens=F, num_heads=H, num_enc_blks=1, num_dec_blks=1,
                  dropout=0.0, max_len=64)
    config.update(changes)
    return tl.Transformer(tl.TransformerConfig(V, V, **config))


def a_batch(seed=0, count=6):
    pairs = reversal_pairs(count, random.Random(seed), 2, 7)
    return next(iter(BatchLoader(pairs, VOCAB, VOCAB, count, shuffle=False)))


@pytest.mark.parametrize("block_class, norm_first", [(CausalBlock, False),
                                                     (PreNormCausalBlock, True)])
def test_a_causal_block_is_torch_encoder_layer_with_the_causal_mask(block_class, norm_first):
    ours = randomize_(block_class(D, F, H, dropout=0.0, use_bias=True)).eval()
    ref = nn.TransformerEncoderLayer(D, H, F, dropout=0.0, batch_first=True,
                                     norm_first=norm_first).eval()
    mha_into_torch(ours.attention, ref.self_attn)
    ref.linear1.load_state_dict(ours.ffn.dense1.state_dict())
    ref.linear2.load_state_dict(ours.ffn.dense2.state_dict())
    for i in (1, 2):
        norm = getattr(ours, f"norm{i}", None) or getattr(ours, f"addnorm{i}").ln
        getattr(ref, f"norm{i}").load_state_dict(norm.state_dict())
    X = torch.randn(3, 9, D)
    mask = nn.Transformer.generate_square_subsequent_mask(9)
    with torch.no_grad():
        torch.testing.assert_close(ours(X), ref(X, src_mask=mask, is_causal=True),
                                   atol=1e-5, rtol=1e-4)
        unmasked = ref(X)
    assert (ours(X) - unmasked).abs().max() > 0.1  # the mask matters


def test_the_decoder_only_model_never_reads_ahead():
    model = decoder_only().eval()
    X = torch.randint(4, V, (2, 12))
    changed = X.clone()
    changed[:, 7] = (X[:, 7] - 3) % (V - 4) + 4
    with torch.no_grad():
        before, after = model(X), model(changed)
    torch.testing.assert_close(before[:, :7], after[:, :7])
    assert (before[:, 7:] - after[:, 7:]).abs().max() > 1e-3


def test_source_and_target_join_into_one_sequence():
    src = torch.tensor([[5, 6, 7, 2], [8, 2, 0, 0]])           # sources and their <eos>
    src_valid_lens = torch.tensor([4, 2])
    tgt = torch.tensor([[1, 9, 9, 9, 9], [1, 10, 2, 0, 0]])    # <bos> then the answer
    seq, where = join_source_and_target(src, src_valid_lens, tgt)
    assert seq.tolist() == [[5, 6, 7, 2, 9, 9, 9, 9], [8, 2, 10, 2, 0, 0, 0, 0]]
    assert where.tolist() == [[3, 4, 5, 6, 7], [1, 2, 3, 4, 5]]
    seq, where = join_source_and_target(src, None, tgt)       # all of src is real
    assert seq[1].tolist() == [8, 2, 0, 0, 10, 2, 0, 0] and where[1, 0] == 3


def test_decoder_only_logits_read_the_joined_sequence_and_ignore_the_batch():
    model = decoder_only().eval()
    batch = a_batch()
    with torch.no_grad():
        logits = model.logits(batch.src, batch.tgt_in, batch.src_valid_lens)
        assert logits.shape == (*batch.tgt_in.shape, V)
        seq, where = join_source_and_target(batch.src, batch.src_valid_lens, batch.tgt_in)
        whole = model(seq)
        for b in range(len(seq)):
            torch.testing.assert_close(logits[b], whole[b, where[b]])
            # the row alone, without the other rows' padding
            n = int(batch.src_valid_lens[b])
            alone = model.logits(batch.src[b:b + 1, :n], batch.tgt_in[b:b + 1])
            real = batch.tgt_out[b] != VOCAB.pad
            torch.testing.assert_close(alone[0][real], logits[b][real], atol=1e-5, rtol=1e-4)


def test_decoder_only_arguments_are_checked_by_name():
    for bad, name in [(dict(num_blks=0), "num_blks"), (dict(num_heads=3), "num_heads"),
                      (dict(dropout=1.5), "dropout"), (dict(tie_embeddings=1), "tie_embeddings"),
                      (dict(use_bias=0), "use_bias"),
                      (dict(norm_first="yes"), "norm_first"), (dict(num_hiddens=15, num_heads=3),
                                                               "even")]:
        with pytest.raises((TypeError, ValueError), match=name):
            DecoderOnlyConfig(V, **{**dict(num_hiddens=D, num_heads=H), **bad})
    model = decoder_only(max_len=10)
    src, tgt = torch.randint(4, V, (2, 6)), torch.randint(4, V, (2, 6))
    with pytest.raises(ValueError, match="max_len"):
        model.check_inputs(src, tgt)                    # 11 positions
    with pytest.raises(ValueError, match="src_valid_lens"):
        model.check_inputs(src[:, :3], tgt[:, :3], torch.tensor([3, 0]))
    with pytest.raises(ValueError, match="tgt"):
        model.check_inputs(src[:, :3], torch.full((2, 3), V))
    with pytest.raises(ValueError, match="max_len"):
        model(torch.randint(4, V, (1, 11)))
    with pytest.raises(ValueError, match="tgt need at least one position"):
        join_source_and_target(src, None, tgt[:, :0])
    greedy_decode_uncached(model, src, None, bos_id=1, max_len=5)  # 6 + 5 - 1 = 10 positions
    with pytest.raises(ValueError, match="max_len=6 steps after a source of 6 positions need 11"):
        greedy_decode_uncached(model, src, None, bos_id=1, max_len=6)


def test_fit_trains_the_decoder_only_model():
    model = decoder_only()
    pairs = reversal_pairs(64, random.Random(0), 2, 5)
    loader = BatchLoader(pairs, VOCAB, VOCAB, 16, seed=0)
    before = evaluate_loss(model, loader)
    history = fit(model, loader, None, TrainConfig(epochs=15, lr=3e-3, warmup_steps=5,
                                                     device="cpu", precision="float32"),
                  progress=False)
    assert history.steps_done == 60 and evaluate_loss(model, loader) < before - 1.0


def test_greedy_decoding_without_a_cache_is_greedy_decoding():
    batch = a_batch(count=8)
    args = dict(bos_id=VOCAB.bos, eos_id=VOCAB.eos, max_len=9)
    for seed in range(3):                  # random models: no answer is trivially all <eos>
        model = encoder_decoder(seed)
        cached = greedy_decode(model, batch.src, batch.src_valid_lens, **args)
        assert torch.equal(greedy_decode_uncached(model, batch.src, batch.src_valid_lens, **args),
                           cached)
    model = decoder_only().eval()
    out = greedy_decode_uncached(model, batch.src, batch.src_valid_lens, **args)
    tgt = torch.cat([torch.full((8, 1), VOCAB.bos), out], dim=1)
    with torch.no_grad():  # each token is the argmax given the ones before it
        logits = model.logits(batch.src, tgt[:, :-1], batch.src_valid_lens)
    finished = torch.cumsum(out == VOCAB.eos, dim=1) - (out == VOCAB.eos).long() > 0
    assert torch.equal(logits.argmax(-1)[~finished], out[~finished])
    with pytest.raises(ValueError, match="eos_id"):
        greedy_decode_uncached(model, batch.src, batch.src_valid_lens, bos_id=1, eos_id=V,
                               max_len=3)


def test_tied_embeddings_are_one_matrix():
    untied, tied = encoder_decoder(), encoder_decoder(tie_embeddings=True)
    shared = tied.decoder.embedding.weight
    assert tied.encoder.embedding.weight is shared and tied.decoder.dense.weight is shared
    assert untied.num_parameters() - tied.num_parameters() == 2 * V * D
    counts = tied.parameter_counts()
    assert counts["shared embedding"] == V * D and counts["output layer"] == V
    assert sum(counts.values()) == tied.num_parameters()
    # one gradient, the sum of the three uses': the untied model with the same numbers in its
    # three matrices computes the same logits, and its three gradients add up to the tied one
    batch = a_batch()
    copy = encoder_decoder(seed=1)
    copy.load_state_dict(tied.state_dict())        # the shared matrix into each of the three
    logits = tied.logits(batch.src, batch.tgt_in, batch.src_valid_lens)
    torch.testing.assert_close(copy.logits(batch.src, batch.tgt_in, batch.src_valid_lens), logits)
    logits.sum().backward()
    copy.logits(batch.src, batch.tgt_in, batch.src_valid_lens).sum().backward()
    three = (copy.encoder.embedding.weight.grad, copy.decoder.embedding.weight.grad,
             copy.decoder.dense.weight.grad)
    assert all(g is not None and g.abs().sum() > 0 for g in three)
    torch.testing.assert_close(shared.grad, sum(three))
    # a saved tied model loads into a new one and stays tied
    again = encoder_decoder(seed=1, tie_embeddings=True)
    again.load_state_dict(tied.state_dict())
    assert again.decoder.dense.weight is again.encoder.embedding.weight
    torch.testing.assert_close(again.decoder.dense.weight, shared)
    only = decoder_only(tie_embeddings=True)
    assert only.dense.weight is only.stack.embedding.weight
    assert decoder_only().num_parameters() - only.num_parameters() == V * D


def test_tying_needs_one_vocabulary_and_a_bool():
    with pytest.raises(ValueError, match="tie_embeddings.*src_vocab_size=14.*tgt_vocab_size=15"):
        tl.TransformerConfig(14, 15, num_hiddens=D, tie_embeddings=True)
    with pytest.raises(TypeError, match="tie_embeddings"):
        tl.TransformerConfig(14, 14, num_hiddens=D, tie_embeddings="yes")
    tl.TransformerConfig(14, 15, num_hiddens=D)  # untied: two vocabularies are fine


def test_reversal_pairs_and_exact_matches():
    pairs = reversal_pairs(50, random.Random(3), 2, 4, avoid={("1", "2")})
    assert all(y == x[::-1] and 2 <= len(x) <= 4 and x != ["1", "2"] for x, y in pairs)
    assert reversal_pairs(5, random.Random(3), 2, 4) == reversal_pairs(5, random.Random(3), 2, 4)
    with pytest.raises(ValueError, match="max_digits"):
        reversal_pairs(1, random.Random(0), 5, 4)
    with pytest.raises((TypeError, ValueError), match="min_digits"):
        reversal_pairs(1, random.Random(0), 0, 4)
    tgt_out = torch.tensor([[5, 6, 2, 0], [7, 8, 9, 2]])
    answers = torch.tensor([[5, 6, 2, 2, 2], [7, 8, 5, 2, 2]])
    assert exact_matches(answers, tgt_out).tolist() == [True, False]
    assert exact_matches(answers[:, :2], tgt_out).tolist() == [False, False]  # too short


def test_drawing_from_sequences_that_are_all_avoided_stops_with_an_error():
    singles = {(digit,) for digit in "0123456789"}
    with pytest.raises(ValueError, match="avoid holds all 10 sequences"):
        reversal_pairs(1, random.Random(0), 1, 1, avoid=singles)     # used to loop forever
    assert len(reversal_pairs(3, random.Random(0), 1, 2, avoid=singles)) == 3
    assert reversal_pairs(0, random.Random(0), 1, 1, avoid=singles) == []
    with pytest.raises(ValueError, match="max_digits"):  # 4000 pairs cover all 110 of 1-2 digits
        ReversalTask(min_digits=1, max_digits=2)
    with pytest.raises(TypeError, match="rng must be a random.Random"):
        reversal_pairs(3, 0, 1, 2)


def test_a_run_scores_the_share_of_test_pairs_reversed_exactly(monkeypatch):
    # a stand-in decoder, right where a source starts with an even digit and one digit too long
    # elsewhere: the accuracy must be the share of such test pairs, counted from the pairs
    task = ReversalTask(num_train=100, num_val=20, num_test=60, seed=2)
    vocab = task.vocab

    def half_right(model, src, src_valid_lens, *, bos_id, eos_id, pad_id, max_len):
        answers = []
        for ids, n in zip(src.tolist(), src_valid_lens.tolist()):
            digits = ids[:n - 1]                                     # without <eos>
            right = int(vocab.to_tokens([digits[0]])[0]) % 2 == 0
            answers.append(digits[::-1] + ([] if right else digits[:1]) + [eos_id])
        width = max(len(a) for a in answers)
        return torch.tensor([a + [eos_id] * (width - len(a)) for a in answers])

    reversal = importlib.import_module("transformer_lib.translation.reversal")
    monkeypatch.setattr(reversal, "greedy_decode", half_right)
    monkeypatch.setattr(reversal, "greedy_decode_uncached", half_right)
    expected = sum(int(x[0]) % 2 == 0 for x, _ in task.test) / len(task.test)
    assert 0.2 < expected < 0.8
    config = TrainConfig(epochs=1, lr=1e-3, warmup_steps=5, device="cpu", precision="float32")
    for model in (encoder_decoder(), decoder_only()):
        assert reversal_run(model, task, config, batch_size=50).accuracy == pytest.approx(expected)


def test_a_reversal_task_holds_out_what_it_trains_on_and_a_run_scores_it():
    task = ReversalTask(num_train=300, num_val=40, num_test=60, seed=2)
    seen = {tuple(x) for x, _ in task.train}
    assert not seen & {tuple(x) for x, _ in task.val + task.test}
    assert ReversalTask(num_train=300, num_val=40, num_test=60, seed=2).test == task.test
    with pytest.raises((TypeError, ValueError), match="num_test"):
        ReversalTask(num_test=0)
    config = TrainConfig(epochs=1, lr=1e-3, warmup_steps=5, device="cpu", precision="float32")
    for model in (encoder_decoder(), decoder_only()):
        result = reversal_run(model, task, config, batch_size=50)
        assert 0.0 <= result.accuracy <= 1.0 and result.history.steps_done == 6
        assert result.val_loss == result.history.validation[-1].loss
    with pytest.raises((TypeError, ValueError), match="batch_size"):
        reversal_run(decoder_only(), task, config, batch_size=0)
