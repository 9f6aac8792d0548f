"""The byte-level BPE vocabulary: text <-> pieces <-> ids, files, and Vocab's interface."""

import pytest
import torch

from transformer_lib.translation import BatchLoader, Vocab
from transformer_lib.translation.subwords import SubwordVocab

CORPUS = ["I am cold.", "Je suis froid.", "He is calm.", "Il est calme.", "We are late!",
          "Nous sommes en retard !", "She is tall.", "Elle est grande."] * 20
HARD = ["Hello, how are you?", "Où est la gare ?", "C'est l'été !", "It's 5 o'clock!!!",
        "Ça coûte 12,50 € ?!", "ÉLÈVE naïve cœur", "tab\there", "😀 漢字 ß", "'''", "x"]


@pytest.fixture(scope="module")
def vocab():
    return SubwordVocab.train(CORPUS, vocab_size=300)


def test_the_special_tokens_come_first_and_the_size_is_the_one_asked_for(vocab):
    assert vocab.idx_to_token[:4] == ["<pad>", "<bos>", "<eos>", "<unk>"]
    assert (vocab.pad, vocab.bos, vocab.eos, vocab.unk) == (0, 1, 2, 3)
    assert len(vocab) == 300 and len(set(vocab.idx_to_token)) == 300


def test_every_string_has_pieces_and_comes_back(vocab):
    for text in CORPUS[:8] + HARD:
        pieces = vocab.tokenize(text)
        assert pieces and vocab.unk not in vocab[pieces], text
        assert vocab.detokenize(pieces) == text.strip(), text
        assert vocab.encode(text) == vocab[pieces]


def test_frequent_words_become_one_piece_and_rare_ones_several(vocab):
    # " is", " est" and " calm" occur 40 to 80 times in the corpus, "Xylophone" never
    assert {"Ġis", "Ġest", "Ġcalm"} <= set(vocab.tokenize("He is calm. Il est calme."))
    assert len(vocab.tokenize("Xylophone")) == 10      # the space, then letter by letter


def test_training_is_deterministic_and_the_json_round_trips(vocab, tmp_path):
    assert SubwordVocab.train(CORPUS, vocab_size=300).to_json() == vocab.to_json()
    path = vocab.save(tmp_path / "tokenizer.json")
    again = SubwordVocab.load(path)
    assert again.idx_to_token == vocab.idx_to_token
    assert [again.encode(t) for t in HARD] == [vocab.encode(t) for t in HARD]


def test_it_serves_the_loaders_and_decoding_as_a_vocab_does(vocab):
    pairs = [(vocab.tokenize(en), vocab.tokenize(fr)) for en, fr in zip(CORPUS[:8:2],
                                                                          CORPUS[1:8:2])]
    batch = next(iter(BatchLoader(pairs, vocab, vocab, 4, shuffle=False)))
    assert batch.tgt_in[:, 0].eq(vocab.bos).all()
    texts = {vocab.detokenize(vocab.decode(row)) for row in batch.tgt_out}
    assert texts == set(CORPUS[1:8:2])
    assert vocab.decode(torch.tensor([1, 5, 6, 2, 7])) == vocab.to_tokens([5, 6])


def test_bad_arguments_are_named(vocab, tmp_path):
    with pytest.raises(ValueError, match="vocab_size must be at least 260"):
        SubwordVocab.train(CORPUS, vocab_size=100)
    with pytest.raises((TypeError, ValueError), match="min_frequency"):
        SubwordVocab.train(CORPUS, vocab_size=300, min_frequency=0)
    with pytest.raises(ValueError, match="sentences is empty"):
        SubwordVocab.train([], vocab_size=300)
    with pytest.raises(TypeError, match="text must be a string"):
        vocab.tokenize(["a", "b"])
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="bad.json is not a tokenizer's JSON"):
        SubwordVocab.load(bad)
    import tokenizers
    plain = tokenizers.Tokenizer(tokenizers.models.BPE())
    plain.add_special_tokens(["<eos>", "<pad>", "<bos>", "<unk>"])
    with pytest.raises(ValueError, match="ids 0-3"):
        SubwordVocab(plain)
    assert Vocab.pad == vocab.pad


def test_a_checkpoint_keeps_the_subword_vocabulary_whole(vocab, tmp_path):
    import transformer_lib as tl
    from transformer_lib.translation.checkpoint import (CheckpointError, load_checkpoint,
                                                        load_weights, save_checkpoint)

    torch.manual_seed(0)
    config = tl.TransformerConfig(len(vocab), len(vocab), num_hiddens=16, ffn_num_hiddens=32,
                                  num_enc_blks=1, num_dec_blks=1, tie_embeddings=True)
    model = tl.Transformer(config)
    path = save_checkpoint(tmp_path / "bpe.pt", model, vocab, vocab, dict(recipe="x"))
    loaded, src_vocab, tgt_vocab, extra = load_checkpoint(path)
    assert isinstance(src_vocab, SubwordVocab) and src_vocab.to_json() == vocab.to_json()
    assert tgt_vocab.encode("Où est la gare ?") == vocab.encode("Où est la gare ?")
    assert loaded.decoder.dense.weight is loaded.encoder.embedding.weight   # still tied
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(),
                                                  loaded.state_dict().values()))
    assert load_weights(tl.Transformer(config), path, vocab, vocab) == extra
    other = SubwordVocab.train(CORPUS[:40] + ["Xylophone zebra"] * 3, vocab_size=300)
    with pytest.raises(CheckpointError, match="another source vocabulary"):
        load_weights(tl.Transformer(config), path, other, vocab)


def test_a_checkpoint_from_before_tying_still_loads_its_weights(tmp_path):
    import transformer_lib as tl
    from transformer_lib.translation.checkpoint import load_weights, save_checkpoint

    words = Vocab([["a", "b"]])
    config = tl.TransformerConfig(len(words), len(words), num_hiddens=16, ffn_num_hiddens=32,
                                  num_enc_blks=1, num_dec_blks=1)
    path = save_checkpoint(tmp_path / "old.pt", tl.Transformer(config), words, words)
    payload = torch.load(path, weights_only=True)
    del payload["config"]["tie_embeddings"]                 # as saved before the field existed
    torch.save(payload, path)
    assert load_weights(tl.Transformer(config), path, words, words) == {}


def test_a_bpe_recipe_trains_translates_and_scores_on_raw_sentences(data_dir):
    import transformer_lib as tl
    from transformer_lib.translation import TrainConfig, evaluate_bleu, fit, translate
    from transformer_lib.translation.recipes import RECIPES, Recipe

    recipe = Recipe(subset="basic", tokenizer="bpe", vocab_size=600, test_sources_of="basic",
                    model=dict(num_hiddens=32, ffn_num_hiddens=64, num_heads=2,
                               num_enc_blks=1, num_dec_blks=1, dropout=0.0, max_len=64,
                               tie_embeddings=True),
                    train=TrainConfig(epochs=1, lr=3e-3, warmup_steps=10, device="cpu",
                                      precision="float32"),
                    batch_size=None, max_tokens=2000, num_test_sources=600)
    split, src_vocab, tgt_vocab = recipe.load_data(data_dir)
    assert src_vocab is tgt_vocab and len(src_vocab) == 600
    # the basic recipe's 500 test sources first, in its order, then 100 more
    basic = RECIPES["basic"].load_data(data_dir)[0]
    assert len(split.test) == 600
    assert [tuple(tl.translation.Vocab.tokenize(src_vocab.detokenize(g.src)))
            for g in split.test[:500]] == [tuple(g.src) for g in basic.test]
    seen = {tuple(s) for s, _ in split.train}
    assert not seen & {tuple(g.src) for g in split.test}
    # the pieces of each training pair read back as that pair's raw English and French
    raw = recipe.raw_split(data_dir)
    assert [(src_vocab.detokenize(s), tgt_vocab.detokenize(t)) for s, t in split.train] == [
        (s.strip(), t.strip()) for s, t in raw.train]
    torch.manual_seed(0)
    model = tl.Transformer(tl.TransformerConfig(len(src_vocab), len(tgt_vocab), **recipe.model))
    loader = BatchLoader(split.train, src_vocab, tgt_vocab, None, max_tokens=recipe.max_tokens)
    history = fit(model, loader, None, recipe.train, progress=False)
    assert history.steps_done == len(loader)
    assert history.train_loss[-1] < history.train_loss[0] - 1.0                # it learned
    [result] = translate(model, ["Where is the station, Émile? 😀"], src_vocab, tgt_vocab,
                         max_len=8)
    assert result.unknown == [] and "<unk>" not in result.text and "Ġ" not in result.text
    score = evaluate_bleu(model, split.test[:20], src_vocab, tgt_vocab, max_len=12)
    assert 0 <= score.single <= 100 and "Ġ" not in " ".join(score.hypotheses)
    with pytest.raises(ValueError, match="tokenizer must be 'words' or 'bpe'"):
        Recipe(subset="basic", model={}, train=TrainConfig(), tokenizer="chars")
