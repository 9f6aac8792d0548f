"""The library's measuring helpers that chapter 9 calls: gradient norms per block, greedy
translations with a source word hidden, the mean cross-attention behind a translation, and
the recipe's trained model read from chapter 8's checkpoint — each checked against the
by-hand computation it replaces."""

import numpy as np
import pytest
import torch

import transformer_lib as tl
from transformer_lib.translation import recipes, training
from transformer_lib.translation.checkpoint import save_checkpoint
from transformer_lib.translation.data import Vocab, encode_source, pad_batch
from transformer_lib.translation.decoding import greedy_decode
from transformer_lib.translation.recipes import RECIPES, trained_transformer
from transformer_lib.translation.translate import decode_ids, mean_cross_attention

SOURCES = [["i", "am", "cold", "."], ["go", "."], ["he", "is", "calm", "."],
           ["we", "are", "late", "."]]
TARGETS = [["j'ai", "froid", "."], ["va", "!"], ["il", "est", "calme", "."],
           ["nous", "sommes", "en", "retard", "."]]
SRC_VOCAB, TGT_VOCAB = Vocab(SOURCES), Vocab(TARGETS)


def small_model(seed=0):
    torch.manual_seed(seed)
    config = tl.TransformerConfig(len(SRC_VOCAB), len(TGT_VOCAB), num_hiddens=32,
                                  ffn_num_hiddens=64, num_heads=4, num_enc_blks=2,
                                  num_dec_blks=2, dropout=0.0, max_len=32)
    return tl.Transformer(config).eval()


def test_gradient_norms_are_each_blocks_whole_gradient_at_every_step():
    model = small_model().train()
    blocks = [*model.encoder.blks, *model.decoder.blks]
    src = pad_batch([encode_source(s, SRC_VOCAB) for s in SOURCES])
    tgt = torch.randint(3, len(TGT_VOCAB), (len(SOURCES), 5))
    expected = []
    with tl.record_gradient_norms(blocks) as norms:
        for _ in range(3):
            model.zero_grad()
            model(src, tgt).square().mean().backward()
            expected.append([torch.cat([p.grad.flatten() for p in b.parameters()]).norm()
                             for b in blocks])
    assert norms.per_step.shape == (3, len(blocks))
    np.testing.assert_allclose(norms.per_step, np.array(expected), rtol=1e-5)
    model(src, tgt).square().mean().backward()         # the hooks are gone
    assert all(not p._post_accumulate_grad_hooks for b in blocks for p in b.parameters())


def test_gradient_norms_name_bad_blocks():
    with pytest.raises(TypeError, match="blocks"):
        with tl.record_gradient_norms([]):
            pass
    with pytest.raises(ValueError, match=r"blocks\[1\]"):
        with tl.record_gradient_norms([torch.nn.Linear(2, 2), torch.nn.ReLU()]):
            pass


def test_a_hidden_word_is_hidden_from_every_attention_while_its_source_is_translated():
    model = small_model()
    plain = decode_ids(model, SOURCES, SRC_VOCAB, TGT_VOCAB, max_len=6)
    assert decode_ids(model, SOURCES, SRC_VOCAB, TGT_VOCAB, max_len=6, hide=[None] * 4) == plain
    ends = small_model()
    with torch.no_grad():     # a model that often says <eos>
        ends.decoder.dense.bias[TGT_VOCAB.eos] = 5.0
    with_eos = decode_ids(ends, SOURCES, SRC_VOCAB, TGT_VOCAB, max_len=6)
    assert sum(ids[-1] == TGT_VOCAB.eos for ids in with_eos) >= 2
    bare = decode_ids(ends, SOURCES, SRC_VOCAB, TGT_VOCAB, max_len=6, with_eos=False)
    assert bare == [ids[:-1] if ids[-1] == TGT_VOCAB.eos else ids for ids in with_eos]
    hide = [1, None, 0, 2]
    hidden_ids = decode_ids(model, SOURCES, SRC_VOCAB, TGT_VOCAB, max_len=6, hide=hide)
    for i, source in enumerate(SOURCES):        # each sentence alone, by hand
        src = torch.tensor([encode_source(source, SRC_VOCAB)])
        hidden = torch.zeros(src.shape, dtype=torch.bool)
        if hide[i] is not None:
            hidden[0, hide[i]] = True
        with tl.intervene(model, hidden=hidden):
            out = greedy_decode(model, src, torch.tensor([src.shape[1]]), bos_id=Vocab.bos,
                                eos_id=Vocab.eos, max_len=6)[0].tolist()
        end = out.index(Vocab.eos) + 1 if Vocab.eos in out else len(out)
        assert hidden_ids[i] == out[:end]
    assert hidden_ids != plain          # hiding changed something in this untrained model


@pytest.mark.parametrize("hide, message", [
    ([None], "one entry per source"), ("0123", "one entry per source"),
    ([None, 5, None, None], r"hide\[1\]"), ([True, None, None, None], r"hide\[0\]")])
def test_bad_hide_is_named(hide, message):
    with pytest.raises(ValueError, match=message):
        decode_ids(small_model(), SOURCES, SRC_VOCAB, TGT_VOCAB, hide=hide)


def test_mean_cross_attention_is_the_blocks_and_heads_mean_of_each_sentence():
    model = small_model()
    outputs = [[5, 6], [7], [5, 8, 9], []]
    weights = mean_cross_attention(model, SOURCES, outputs, SRC_VOCAB, batch_size=3)
    for source, output, w in zip(SOURCES, outputs, weights):
        src = torch.tensor([encode_source(source, SRC_VOCAB)])
        tgt = torch.tensor([[Vocab.bos] + output])
        maps = model.attention_maps(src, tgt, torch.tensor([src.shape[1]]))["cross"]
        alone = torch.stack(maps).mean(dim=(0, 2))[0, :len(output)]    # (T, S)
        assert w.shape[0] == len(output)
        torch.testing.assert_close(w[:, :src.shape[1]], alone, rtol=0, atol=1e-5)
        assert torch.all(w[:, src.shape[1]:] == 0)        # padding gets nothing
    with pytest.raises(ValueError, match="outputs"):
        mean_cross_attention(model, SOURCES, outputs[:2], SRC_VOCAB)


def test_the_recipes_model_comes_from_a_checkpoint_of_that_recipe_and_seed(tmp_path,
                                                                          monkeypatch):
    recipe = RECIPES["basic"].with_train(seed=3, device="cpu")
    assert recipe.label.startswith("basic, seed 3, settings ")
    # another version of the recipe is another model; its own for_precision is the same one
    assert recipe.with_train(lr=1e-3).label != recipe.label
    assert recipe.for_precision().label == recipe.label
    assert recipe.with_train(log_every=1).label == recipe.label
    model = small_model()
    saved = tmp_path / "model.ckpt"
    save_checkpoint(saved, model, SRC_VOCAB, TGT_VOCAB, extra={"recipe": recipe.label})
    monkeypatch.setattr(training, "fit", lambda *a, **k: pytest.fail("trained"))
    loaded, src_vocab, tgt_vocab = trained_transformer(recipe, checkpoint=saved)
    assert src_vocab.idx_to_token == SRC_VOCAB.idx_to_token
    for a, b in zip(loaded.state_dict().values(), model.state_dict().values()):
        assert torch.equal(a, b)

    trained = []                     # another seed: the checkpoint is not its model
    monkeypatch.setattr(training, "fit", lambda model, loader, val, config, **k:
                        trained.append((loader.batch_size, config.seed, val)))
    monkeypatch.setattr(recipes.Recipe, "load_data", lambda self: (
        type("Split", (), {"train": list(zip(SOURCES, TARGETS))}), SRC_VOCAB, TGT_VOCAB))
    other = recipe.with_train(seed=4)
    model4, _, _ = trained_transformer(other, checkpoint=saved)
    assert trained == [(other.batch_size, 4, None)]
    assert model4.config.num_hiddens == other.model["num_hiddens"] and not model4.training
    trained_transformer(other, checkpoint=tmp_path / "absent.ckpt")
    assert len(trained) == 2


def test_the_books_paths_exist_only_in_the_books_sources(tmp_path, monkeypatch):
    from pathlib import Path

    from transformer_lib.instruments.web import (book_root, page_files_dir, saved_page_model_path,
                                                 saved_translator_path)

    notebooks = tmp_path / "book" / "notebooks"
    notebooks.mkdir(parents=True)
    monkeypatch.chdir(notebooks)
    assert (book_root(), saved_translator_path()) == (None, None)
    assert page_files_dir() == Path("translator_web")
    (tmp_path / "book" / "_config.yml").write_text("title: x\n")
    (tmp_path / "book" / "_extra").mkdir()
    root = (tmp_path / "book").resolve()
    assert book_root() == root
    assert page_files_dir() == root / "_extra" / "translator"
    assert page_files_dir("everyday") == root / "_extra" / "everyday"
    with pytest.raises(ValueError, match="model must be one of"):
        page_files_dir("other")
    assert saved_translator_path() == root / "_build" / "translator" / "exported.ckpt"
    assert page_files_dir("language_model") == root / "_extra" / "language_model"
    assert (saved_page_model_path("language_model")
            == root / "_build" / "language_model" / "exported.ckpt")
    with pytest.raises(ValueError, match="model must be one of"):
        saved_page_model_path("other")


@pytest.mark.parametrize("norm_first", [False, True])
def test_parameter_counts_add_up_and_follow_the_formulas(norm_first):
    d, d_ff, V_src, V_tgt = 16, 40, 11, 13
    config = tl.TransformerConfig(V_src, V_tgt, num_hiddens=d, ffn_num_hiddens=d_ff, num_heads=2,
                                  num_enc_blks=2, num_dec_blks=3, norm_first=norm_first)
    counts = tl.Transformer(config).parameter_counts()
    attention, ffn, norm = 4 * d * d, 2 * d * d_ff + d_ff + d, 2 * d
    expected = {"source embedding": V_src * d, "encoder blocks": 2 * (attention + ffn + 2 * norm),
                "target embedding": V_tgt * d, "decoder blocks": 3 * (2 * attention + ffn + 3 * norm),
                "output layer": d * V_tgt + V_tgt}
    if norm_first:
        expected["final norms"] = 2 * norm
    assert counts == expected
    assert sum(counts.values()) == tl.Transformer(config).num_parameters()


def test_the_bootstrap_of_bleu_resamples_the_summed_counts():
    from transformer_lib.translation.bleu import (bleu_from_counts, bleu_steps, bootstrap_bleu,
                                      corpus_bleu, sentence_counts)

    refs = [["the cat sat on the mat .", "a cat sat on the mat ."], ["he is calm ."],
            ["i am cold ."], ["we are late again ."]] * 5
    hyps = ["the cat sat on a mat .", "he is calm .", "i am very cold .", "we are late ."] * 5
    counts = sentence_counts(hyps, refs)
    assert counts.shape == (20, 10)
    whole = bleu_steps(hyps, refs)
    assert list(counts.sum(0)) == [*whole.matches, *whole.totals, whole.hyp_len, whole.ref_len]
    assert bleu_from_counts(counts.sum(0)) == pytest.approx(corpus_bleu(hyps, refs))
    low, high = bootstrap_bleu(hyps, refs, resamples=200, seed=1)
    assert low <= whole.score <= high and low < high
    assert bootstrap_bleu(hyps, refs, resamples=200, seed=1) == (low, high)   # seeded
    # by hand: the same draws
    rng = np.random.default_rng(1)
    scores = [bleu_from_counts(counts[rng.integers(0, 20, 20)].sum(0)) for _ in range(200)]
    assert (low, high) == tuple(np.percentile(scores, [2.5, 97.5]))
    # Two sentences: a draw is sentence 1 twice, sentence 2 twice, or both (each a quarter of
    # the draws or more), and a corpus repeated has its BLEU. So the middle 95% runs exactly
    # from the smallest to the largest of those three BLEUs, which sacreBLEU gives here.
    two_hyps = ["the cat sat on the mat today .", "he is very calm and happy today ."]
    two_refs = ["the cat sat on the mat .", "he is calm and happy today ."]
    draws = [corpus_bleu(two_hyps[:1], two_refs[:1]), corpus_bleu(two_hyps[1:], two_refs[1:]),
             corpus_bleu(two_hyps, two_refs)]
    assert len(set(draws)) == 3
    assert bootstrap_bleu(two_hyps, two_refs) == pytest.approx((min(draws), max(draws)))
    # paired with itself: every difference is 0
    assert bootstrap_bleu(hyps, refs, baseline=hyps, resamples=50) == (0.0, 0.0)
    # a model that writes nothing, or matches no 4-gram: 0, not nan
    for nothing in [[""] * 20, ["cat"] * 20]:
        assert bleu_from_counts(sentence_counts(nothing, refs).sum(0)) == 0.0
        assert bootstrap_bleu(nothing, refs, resamples=20) == (0.0, 0.0)
    for bad, message in [(dict(resamples=0), "resamples"), (dict(level=100), "level"),
                         (dict(baseline=hyps[:3]), "baseline")]:
        with pytest.raises(ValueError, match=message):
            bootstrap_bleu(hyps, refs, **bad)


def test_show_batch_prints_the_four_tensors_as_tokens(capsys):
    from transformer_lib.translation.data import BatchLoader, show_batch

    batch = next(iter(BatchLoader(list(zip(SOURCES, TARGETS))[:2], SRC_VOCAB, TGT_VOCAB,
                                  batch_size=2, shuffle=False)))
    show_batch(batch, SRC_VOCAB, TGT_VOCAB)
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"src {tuple(batch.src.shape)}:"
    assert printed[1].split() == ["go", ".", "<eos>", "<pad>", "<pad>"]
    assert f"src_valid_lens: {batch.src_valid_lens.tolist()}" in printed
    assert printed[-1].split()[-1] in ("<eos>", "<pad>")


def test_measuring_the_hosts_matmul_leaves_torchs_generator_alone():
    """Chapter 8 measures it between building its model and training it."""
    from transformer_lib.translation.provenance import matmul_gflops

    torch.manual_seed(0)
    state = torch.get_rng_state()
    assert matmul_gflops(size=64) > 0
    assert torch.equal(torch.get_rng_state(), state)
