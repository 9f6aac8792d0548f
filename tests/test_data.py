"""Preprocessing, vocabularies, subsets, the grouped split and the batches."""

import gc

import pytest
import torch

from transformer_lib.translation.data import (BatchLoader, SPECIAL_TOKENS, Vocab, d2l_split,
                                              encode_source, grouped_split, load_pairs, parse_pairs,
                                              preprocess)


def _bare_mtfraeng(d2l):
    """d2l's MTFraEng without its constructor (which would download the data)."""
    data = d2l.MTFraEng.__new__(d2l.MTFraEng)
    data.num_steps, data.num_train, data.num_val = 9, 512, 128
    return data


def test_preprocess_equals_d2l(d2l, raw_text):
    head = raw_text[:200_000] + "Hello,world!Really?\u202fYes\xa0no."
    assert preprocess(head) == _bare_mtfraeng(d2l)._preprocess(head)
    for odd in [".start", "a!!?", " , ", "x\n.y", "\t!", "é.Ü,", "", "?", "..."]:
        assert preprocess(odd) == _bare_mtfraeng(d2l)._preprocess(odd), odd


def test_parse_pairs_equals_d2l_tokenize(d2l, raw_text):
    data = _bare_mtfraeng(d2l)
    src, tgt = data._tokenize(data._preprocess(raw_text), 640)
    ours = parse_pairs(raw_text, max_lines=640)
    assert [s + ["<eos>"] for s, _ in ours] == src
    assert [t + ["<eos>"] for _, t in ours] == tgt


def test_subset_sizes(data_dir):
    assert len(load_pairs("d2l", data_dir)) == 641  # d2l reads lines 0..640
    basic = load_pairs("basic", data_dir)
    assert len(basic) == 14_669
    assert all(len(s) <= 11 and len(t) <= 11 for s, t in basic)
    assert len(load_pairs("full", data_dir)) == 167_130
    with pytest.raises(ValueError, match="subset"):
        load_pairs("tiny", data_dir)


def test_parsing_and_splitting_leave_the_cycle_collector_as_they_found_it(data_dir):
    # they pause it while they build their lists (a speed-up, no result changes)
    pairs = [(["a", str(i)], ["b"]) for i in range(50)]
    enabled = gc.isenabled()
    try:
        for state in (True, False):
            (gc.enable if state else gc.disable)()
            load_pairs("basic", data_dir)
            grouped_split(pairs, num_test_sources=5, num_val_sources=5)
            assert gc.isenabled() is state
            with pytest.raises(ValueError):       # an error on the way out too
                grouped_split(pairs, num_test_sources=50, num_val_sources=5)
            assert gc.isenabled() is state
    finally:
        (gc.enable if enabled else gc.disable)()


def test_d2l_subset_vocabulary_has_d2ls_tokens(d2l, raw_text, data_dir):
    _, d2l_src, d2l_tgt = _bare_mtfraeng(d2l)._build_arrays(raw_text)
    pairs = load_pairs("d2l", data_dir)
    ours_src = Vocab([s for s, _ in pairs], min_freq=2)
    ours_tgt = Vocab([t for _, t in pairs], min_freq=2)
    for ours, theirs in ((ours_src, d2l_src), (ours_tgt, d2l_tgt)):
        assert set(ours.idx_to_token) | {"<eos>", "<pad>", "<bos>"} >= set(theirs.idx_to_token)
        assert set(theirs.idx_to_token) | set(SPECIAL_TOKENS) >= set(ours.idx_to_token)


def test_vocab_fixed_special_ids_and_min_freq():
    vocab = Vocab([["a", "b", "a"], ["c", "a", "b"]], min_freq=2)
    assert vocab.idx_to_token[:4] == list(SPECIAL_TOKENS)
    assert (vocab.pad, vocab.bos, vocab.eos, vocab.unk) == (0, 1, 2, 3)
    assert vocab.idx_to_token[4:] == ["a", "b"]  # most frequent first; "c" is below min_freq
    assert vocab["c"] == vocab.unk and vocab[["a", "zzz"]] == [4, 3]
    assert vocab.decode([1, 4, 5, 2, 4]) == ["a", "b"]
    assert Vocab.from_tokens(vocab.idx_to_token).idx_to_token == vocab.idx_to_token
    with pytest.raises(ValueError, match="must start with"):
        Vocab.from_tokens(["a", "<pad>"])


def test_grouped_split_never_leaks_a_source(data_dir):
    pairs = load_pairs("basic", data_dir)
    split = grouped_split(pairs, num_test_sources=500, num_val_sources=300, seed=0)
    train_src = {tuple(s) for s, _ in split.train}
    val_src = {tuple(s) for s, _ in split.val}
    test_src = [tuple(g.src) for g in split.test]
    assert len(test_src) == len(set(test_src)) == 500
    assert not train_src & set(test_src) and not train_src & val_src and not val_src & set(test_src)
    assert len(split.train) + len(split.val) + sum(len(g.refs) for g in split.test) == len(pairs)
    all_refs = {}
    for s, t in pairs:
        all_refs.setdefault(tuple(s), []).append(t)
    assert all(g.refs == all_refs[tuple(g.src)] for g in split.test)  # every translation kept
    again = grouped_split(pairs, num_test_sources=500, num_val_sources=300, seed=0)
    assert [g.src for g in again.test] == [g.src for g in split.test]
    other = grouped_split(pairs, num_test_sources=500, num_val_sources=300, seed=1)
    assert [g.src for g in other.test] != [g.src for g in split.test]


def test_grouped_split_rejects_impossible_sizes():
    with pytest.raises(ValueError, match="num_test_sources"):
        grouped_split([(["a"], ["b"])], num_test_sources=1, num_val_sources=0)


def test_grouped_split_groups_by_a_key_and_takes_given_test_sources_first():
    from transformer_lib.translation.data import preprocess, tokenize

    raw = [("Go.", "Va !"), ("go.", "Marche."), ("Hi.", "Salut !"), ("Run!", "Cours !"),
           ("Run.", "Courez !"), ("Wait!", "Attends !"), ("Stop!", "Arrête !"), ("Hop.", "Hop.")]
    words = lambda text: tuple(tokenize(preprocess(text)))   # noqa: E731
    split = grouped_split(raw, num_test_sources=2, num_val_sources=1, seed=3, key=words,
                          test_sources=[("go", ".")])
    assert split.test[0].src == "Go." and split.test[0].refs == ["Va !", "Marche."]
    assert len(split.test) == 2 and len(split.val) == 1
    sources = [words(s) for s, _ in split.train + split.val] + [words(g.src) for g in split.test]
    assert len(sources) == len(set(sources)) == 7              # "Go." and "go." are one source
    # without test_sources, the default key and a tuple key give the old split, draw for draw
    pairs = [(list(tokenize(preprocess(s))), t) for s, t in raw]
    plain = grouped_split(pairs, num_test_sources=2, num_val_sources=1, seed=3)
    assert grouped_split(pairs, num_test_sources=2, num_val_sources=1, seed=3, key=tuple) == plain
    with pytest.raises(ValueError, match="test_sources must be keys"):
        grouped_split(raw, num_test_sources=2, num_val_sources=1, key=words,
                      test_sources=[("nope",)])
    with pytest.raises(ValueError, match="at least the 3 test_sources"):
        grouped_split(raw, num_test_sources=2, num_val_sources=1, key=words,
                      test_sources=[("go", "."), ("hi", "."), ("hop", ".")])


def test_batches_by_tokens_stay_within_the_budget_and_cover_every_pair_once():
    import random

    rng = random.Random(0)
    words = list("abcdefghij")
    pairs = [([rng.choice(words) for _ in range(rng.randint(1, 20))],
              [rng.choice(words) for _ in range(rng.randint(1, 25))]) for _ in range(300)]
    pairs.append((["a"] * 60, ["b"] * 60))                       # longer than the budget
    vocab = Vocab([words])
    loader = BatchLoader(pairs, vocab, vocab, None, max_tokens=200, seed=1)
    sizes = []
    for epoch in range(2):
        loader.set_epoch(epoch)
        batches = list(loader)
        assert len(batches) == len(loader)
        # every pair once, as a (source, target) of one row
        seen = sorted((tuple(s[s != Vocab.pad].tolist()), tuple(t[t != Vocab.pad].tolist()))
                      for b in batches for s, t in zip(b.src, b.tgt_out))
        assert seen == sorted((tuple(encode_source(s, vocab)), tuple(vocab[t] + [Vocab.eos]))
                              for s, t in pairs)
        for b in batches:
            rows, padded = b.src.shape[0], b.src.shape[1] + b.tgt_out.shape[1]
            assert rows * padded <= 200 or rows == 1
        sizes.append(sorted(b.src.shape[0] for b in batches))
    assert sizes[0] == sizes[1]                      # the same cuts, in another order
    assert max(sizes[0]) > 3 * min(sizes[0])          # short pairs come in larger batches
    capped = BatchLoader(pairs, vocab, vocab, 4, max_tokens=200)
    assert max(b.src.shape[0] for b in capped) == 4
    for bad in (0, -5, 2.5, True):
        with pytest.raises(ValueError, match="max_tokens"):
            BatchLoader(pairs, vocab, vocab, None, max_tokens=bad)
    with pytest.raises(ValueError, match="batch_size, max_tokens or both"):
        BatchLoader(pairs, vocab, vocab, None)


def test_d2l_split_is_first_512(data_dir):
    pairs = load_pairs("d2l", data_dir)
    split = d2l_split(pairs)
    assert split.train == pairs[:512] and split.val == pairs[512:]


PAIRS = [(["i", "am", "here", "."], ["je", "suis", "là", "."]), (["go", "."], ["va", "!"]),
         (["he", "is", "a", "very", "tall", "man", "."], ["il", "est", "très", "grand", "."]),
         (["we", "run", "."], ["nous", "courons", "."]), (["hi", "."], ["salut", "!"])]


def test_batches_hold_bos_eos_padding_and_lengths():
    src_vocab, tgt_vocab = Vocab([s for s, _ in PAIRS]), Vocab([t for _, t in PAIRS])
    loader = BatchLoader(PAIRS, src_vocab, tgt_vocab, batch_size=2, seed=0)
    seen = []
    for batch in loader:
        B = batch.src.shape[0]
        assert batch.tgt_in.shape == batch.tgt_out.shape
        assert torch.all(batch.tgt_in[:, 0] == Vocab.bos)
        for b in range(B):
            n = int(batch.src_valid_lens[b])
            assert batch.src[b, n - 1] == Vocab.eos and torch.all(batch.src[b, n:] == Vocab.pad)
            labels = batch.tgt_out[b][batch.tgt_out[b] != Vocab.pad]
            assert labels[-1] == Vocab.eos
            assert torch.equal(batch.tgt_in[b, 1:len(labels)], labels[:-1])  # shifted by one
            seen.append((tuple(src_vocab.decode(batch.src[b])),
                         tuple(tgt_vocab.decode(batch.tgt_out[b]))))
    # every pair once per epoch, each row's target that of its own source
    assert sorted(seen) == sorted((tuple(s), tuple(t)) for s, t in PAIRS)
    assert len(loader) == 3


def test_batches_are_deterministic_and_bucketed(data_dir):
    pairs = load_pairs("basic", data_dir)[:3000]
    src_vocab, tgt_vocab = Vocab([s for s, _ in pairs]), Vocab([t for _, t in pairs])
    first = [b.src for b in BatchLoader(pairs, src_vocab, tgt_vocab, 64, seed=3)]
    second = [b.src for b in BatchLoader(pairs, src_vocab, tgt_vocab, 64, seed=3)]
    assert len(first) == len(second) and all(torch.equal(a, b) for a, b in zip(first, second))
    padding = sum(int((s == Vocab.pad).sum()) for s in first) / sum(s.numel() for s in first)
    assert padding < 0.05  # sorted by length: little padding
    with pytest.raises(ValueError, match="batch_size"):
        BatchLoader(pairs, src_vocab, tgt_vocab, 0)
