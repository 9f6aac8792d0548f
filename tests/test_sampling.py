"""Generating from a language model: the samplers' filters, repeatable seeds, the cache that must
not change a sample, and the character data with its n-gram baselines."""

import math

import pytest
import torch

from transformer_lib.model import LanguageModel, LanguageModelConfig
from transformer_lib.translation import (Greedy, Sampler, TextWindows, TrainConfig, Xorshift32,
                                         character_text, choose, distinct_ngrams,
                                         evaluate_loss, fit, generate, mean_interval,
                                         ngram_bits, share_seen, window_bits)

SENTENCES = ["I like tea.", "You like tea.", "I see a cat.", "We see a dog.", "Go on.",
             "It is late.", "Tom is here.", "I am here.", "Who is it?", "Run!"] * 3


def tiny_model(vocab_size, seed=0, gpt=True, max_len=64):
    torch.manual_seed(seed)
    config = LanguageModelConfig(vocab_size, num_hiddens=16, ffn_num_hiddens=32, num_heads=2,
                                 num_blks=2, max_len=max_len)
    return LanguageModel(config.gpt() if gpt else config)


def test_xorshift32_is_marsaglias_and_repeatable():
    # Marsaglia (2003): x ^= x << 13; x ^= x >> 17; x ^= x << 5, from state 1: 270369, ...
    rng = Xorshift32()
    rng.state = 1
    draws = [rng.uniform() * 2 ** 32 for _ in range(3)]
    assert draws == [270369, 67634689, 2647435461]
    a, b = Xorshift32(7), Xorshift32(7)
    assert [a.uniform() for _ in range(5)] == [b.uniform() for _ in range(5)]
    assert Xorshift32(7).uniform() != Xorshift32(8).uniform()
    values = [Xorshift32(3).uniform()] + [Xorshift32(s).uniform() for s in range(200)]
    assert all(0 <= v < 1 for v in values)
    assert 0.4 < sum(values) / len(values) < 0.6


def test_temperature_sharpens_and_flattens():
    logits = torch.tensor([2.0, 1.0, 0.0, -1.0])
    p1 = Sampler(temperature=1.0).probabilities(logits)
    torch.testing.assert_close(p1, torch.softmax(logits.double(), 0))
    cold, hot = (Sampler(temperature=t).probabilities(logits) for t in (0.25, 4.0))
    assert cold[0] > p1[0] > hot[0]
    assert cold.sum().item() == pytest.approx(1) and hot.sum().item() == pytest.approx(1)


def test_top_k_keeps_the_k_most_likely_with_ties_to_the_lower_id():
    logits = torch.tensor([0.0, 3.0, 1.0, 3.0, 2.0])
    p = Sampler(top_k=2).probabilities(logits)
    assert (p > 0).tolist() == [False, True, False, True, False]
    assert p[1].item() == pytest.approx(0.5)
    p = Sampler(top_k=3).probabilities(logits)
    assert (p > 0).tolist() == [False, True, False, True, True]
    assert (Sampler(top_k=100).probabilities(logits) > 0).all()


def test_top_p_keeps_the_fewest_tokens_that_reach_p():
    probs = torch.tensor([0.1, 0.5, 0.15, 0.25])
    logits = probs.log()
    keep = lambda p: (Sampler(top_p=p).probabilities(logits) > 0).tolist()   # noqa: E731
    assert keep(0.5) == [False, True, False, False]       # 0.5 reaches 0.5
    assert keep(0.51) == [False, True, False, True]       # 0.75
    assert keep(0.75) == [False, True, False, True]
    assert keep(0.76) == [False, True, True, True]
    assert keep(1.0) == [True, True, True, True]
    p = Sampler(top_p=0.6).probabilities(logits)
    assert p[1].item() == pytest.approx(0.5 / 0.75)


def test_choose_inverts_the_cumulative_probabilities():
    p = torch.tensor([0.0, 0.25, 0.0, 0.75], dtype=torch.float64)
    assert [choose(p, u) for u in (0.0, 0.2499, 0.25, 0.9999)] == [1, 1, 3, 3]
    # a token of probability zero is never chosen
    assert all(choose(p, u / 100) in (1, 3) for u in range(100))


@pytest.mark.parametrize("kwargs, message", [
    (dict(temperature=0), "temperature"), (dict(temperature=-1.0), "temperature"),
    (dict(temperature=float("nan")), "temperature"), (dict(temperature=True), "temperature"),
    (dict(top_k=0), "top_k"), (dict(top_k=2.5), "top_k"), (dict(top_p=0), "top_p"),
    (dict(top_p=1.5), "top_p"), (dict(top_p=-0.1), "top_p")])
def test_bad_sampler_settings_name_the_argument(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Sampler(**kwargs)


def test_greedy_is_the_argmax():
    logits = torch.tensor([0.5, 2.0, 2.0, -1.0])
    p = Greedy().probabilities(logits)
    assert p.tolist() == [0, 1, 0, 0]


@pytest.mark.parametrize("sampler", [None, Sampler(temperature=0.8),
                                     Sampler(temperature=1.5, top_k=5, top_p=0.9)],
                         ids=["greedy", "temperature", "top-k-top-p"])
@pytest.mark.parametrize("gpt", [True, False], ids=["gpt", "2017"])
def test_the_cache_does_not_change_a_sample(sampler, gpt):
    model = tiny_model(20, gpt=gpt)
    prompt = [3, 5, 7]
    cached = generate(model, prompt, 30, sampler, seed=4)
    uncached = generate(model, prompt, 30, sampler, seed=4, cache=False)
    assert cached == uncached and len(cached) == 30


def test_a_seed_makes_a_sample_repeatable():
    model = tiny_model(20)
    hot = Sampler(temperature=2.0)
    assert generate(model, [3], 25, hot, seed=1) == generate(model, [3], 25, hot, seed=1)
    assert generate(model, [3], 25, hot, seed=1) != generate(model, [3], 25, hot, seed=2)


def test_generation_stops_after_the_stop_id_and_keeps_the_mode():
    model = tiny_model(20).train()
    ids = generate(model, [3], 40, Sampler(temperature=3.0), seed=0)
    stop = ids[5]
    stopped = generate(model, [3], 40, Sampler(temperature=3.0), seed=0, stop_id=stop)
    assert stopped == ids[:ids.index(stop) + 1]
    assert model.training


def test_generate_refuses_bad_arguments():
    model = tiny_model(20, max_len=10)
    with pytest.raises(ValueError, match="prompt"):
        generate(model, [], 3)
    with pytest.raises(ValueError, match="max_len"):
        generate(model, [1, 2, 3], 8)
    with pytest.raises(ValueError, match="max_new_tokens"):
        generate(model, [1], -1)
    with pytest.raises(TypeError, match="sampler"):
        generate(model, [1], 2, sampler=0.7)


def test_character_text_splits_distinct_sentences_into_two_streams():
    text = character_text(SENTENCES, num_val=2, min_freq=1)
    assert len(text.train_sentences) + len(text.val_sentences) == 10   # distinct ones
    assert not set(text.train_sentences) & set(text.val_sentences)
    eos = text.vocab.eos
    assert (text.train == eos).sum().item() == len(text.train_sentences)
    first = text.decode(text.train.tolist())
    assert first == text.train_sentences[0]
    assert text.decode(text.encode("I like tea.")) == "I like tea."
    with pytest.raises(ValueError, match="num_val"):
        character_text(SENTENCES, num_val=10)


def test_text_windows_shift_by_one_and_cover_the_stream():
    ids = torch.arange(4, 40)
    val = TextWindows(ids, window=5, batch_size=3)
    batches = list(val)
    assert len(batches) == len(val) == 3                  # 7 windows of 5, then 1 id left
    first = batches[0]
    assert first.src.shape == (3, 0)
    assert first.tgt_in[0].tolist() == [4, 5, 6, 7, 8]
    assert first.tgt_out[0].tolist() == [5, 6, 7, 8, 9]
    assert first.tgt_in[1, 0].item() == 9
    train = TextWindows(ids, window=5, batch_size=4, batches_per_epoch=2, seed=1)
    epoch0 = [b.tgt_in for b in train]
    assert len(epoch0) == 2 and all(len(b) == 4 for b in epoch0)
    assert all(torch.equal(a, b) for a, b in zip(epoch0, [b.tgt_in for b in train]))
    train.set_epoch(1)
    assert not torch.equal(epoch0[0], next(iter(train)).tgt_in)
    with pytest.raises(ValueError, match="window"):
        TextWindows(ids[:3], window=5, batch_size=1)


def test_ngram_baselines_are_the_counted_probabilities():
    train = torch.tensor([4, 5, 4, 5, 4, 6])
    val = TextWindows(torch.tensor([4, 5, 4]), window=2, batch_size=1)
    V = 7
    # unigram, add-one: p(5) = (2 + 1) / (6 + 7), p(4) = (3 + 1) / 13
    want = -(math.log2(3 / 13) + math.log2(4 / 13)) / 2
    assert ngram_bits(train, val, 1, V) == pytest.approx(want)
    # bigram, add-one: p(5 | 4) = (2 + 1) / (3 + 7), p(4 | 5) = (2 + 1) / (2 + 7)
    want = -(math.log2(3 / 10) + math.log2(3 / 9)) / 2
    assert ngram_bits(train, val, 2, V) == pytest.approx(want)
    with pytest.raises(ValueError, match="order"):
        ngram_bits(train, val, 3, V)


def test_a_language_model_learns_the_text_through_fit():
    text = character_text(SENTENCES, num_val=2, min_freq=1)
    V = len(text.vocab)
    train = TextWindows(text.train, window=16, batch_size=8, batches_per_epoch=30)
    val = TextWindows(text.val, window=16, batch_size=8)
    model = tiny_model(V)
    before = evaluate_loss(model, train)
    config = TrainConfig(epochs=2, lr=1e-2, warmup_steps=5, label_smoothing=0.0,
                         precision="float32")
    fit(model, train, val, config, progress=False)
    after = evaluate_loss(model, train)
    assert after < before - 1.0
    assert after / math.log(2) < ngram_bits(text.train, train, 2, V)


def test_sample_measures():
    assert share_seen(["a", "b", "c", "a"], ["a", "c"]) == 0.75
    assert distinct_ngrams(["abab"], 2) == pytest.approx(2 / 3)
    assert distinct_ngrams(["abcd"], 2) == 1.0
    with pytest.raises(ValueError, match="samples"):
        share_seen([], ["a"])


def test_window_bits_are_the_loss_per_window_in_bits():
    text = character_text(SENTENCES, num_val=2, min_freq=1)
    model = tiny_model(len(text.vocab))
    loader = TextWindows(text.train, window=8, batch_size=3)
    bits = window_bits(model, loader)
    assert bits.shape == ((len(text.train) - 1) // 8,)
    mean_nats = evaluate_loss(model, loader)       # every window holds 8 scored ids
    assert bits.mean().item() == pytest.approx(mean_nats / math.log(2), rel=1e-5)


def test_mean_interval_holds_the_mean_and_narrows_with_more_values():
    few = torch.tensor([1.0, 2.0, 3.0, 4.0])
    mean, low, high = mean_interval(few)
    assert mean == 2.5 and 1.0 <= low < mean < high <= 4.0
    many = torch.arange(400.0) % 4 + 1
    _, low2, high2 = mean_interval(many)
    assert high2 - low2 < (high - low) / 4
    assert mean_interval(few, seed=1) != mean_interval(few, seed=2)
    with pytest.raises(ValueError, match="values"):
        mean_interval(torch.tensor([1.0]))
