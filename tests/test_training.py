"""Loss, schedule, training loop, checkpoints, beam search and translation."""

import pytest
import torch

import transformer_lib as tl
from transformer_lib.bleu import corpus_bleu
from transformer_lib.checkpoint import CheckpointError, load_checkpoint, load_weights, save_checkpoint
from transformer_lib.data import BatchLoader, TestGroup, Vocab
from transformer_lib.decoding import attention_weights_of, beam_search
from transformer_lib.training import TrainConfig, evaluate_loss, fit, learning_rate, sequence_loss
from transformer_lib.translate import evaluate_bleu, translate

PAIRS = [(["i", "am", "cold", "."], ["j'ai", "froid", "."]), (["go", "."], ["va", "!"]),
         (["he", "is", "calm", "."], ["il", "est", "calme", "."]),
         (["i", "am", "home", "."], ["je", "suis", "chez", "moi", "."]),
         (["we", "are", "late", "."], ["nous", "sommes", "en", "retard", "."]),
         (["she", "is", "tall", "."], ["elle", "est", "grande", "."])]
SRC_VOCAB, TGT_VOCAB = Vocab([s for s, _ in PAIRS]), Vocab([t for _, t in PAIRS])


def tiny_model(seed=0, **changes):
    torch.manual_seed(seed)
    config = dict(num_hiddens=32, ffn_num_hiddens=64, num_heads=4, num_enc_blks=1, num_dec_blks=1,
                  dropout=0.0, max_len=32)
    config.update(changes)
    return tl.Transformer(tl.TransformerConfig(len(SRC_VOCAB), len(TGT_VOCAB), **config))


def test_masked_loss_ignores_padding():
    logits = torch.randn(2, 4, 10)
    labels = torch.tensor([[5, 6, 2, 0], [7, 2, 0, 0]])
    loss = sequence_loss(logits, labels)
    changed = logits.clone()
    changed[labels == 0] = torch.randn(3, 10) * 100  # whatever the model says at padding
    assert torch.equal(sequence_loss(changed, labels), loss)
    keep = labels != 0
    manual = torch.nn.functional.cross_entropy(logits[keep], labels[keep])
    torch.testing.assert_close(loss, manual)  # averaged over the 5 real tokens, not all 8


def test_learning_rate_warms_up_then_decays():
    config = TrainConfig(lr=1e-3, warmup_steps=10, schedule="linear")
    assert learning_rate(config, 0, 0.0) == pytest.approx(1e-4)
    assert learning_rate(config, 9, 0.0) == pytest.approx(1e-3)
    assert learning_rate(config, 100, 0.5) == pytest.approx(5e-4)
    assert learning_rate(config, 100, 1.0) == 0.0
    assert learning_rate(TrainConfig(lr=1e-3, warmup_steps=1, schedule="constant"), 50, 0.9) == 1e-3
    with pytest.raises(ValueError, match="schedule"):
        TrainConfig(schedule="cosine")


def _fit(model, **changes):
    settings = dict(epochs=60, lr=3e-3, warmup_steps=10, label_smoothing=0.0, seed=0, device="cpu")
    settings.update(changes)
    loader = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, batch_size=3, seed=0)
    return fit(model, loader, BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 6, shuffle=False),
               TrainConfig(**settings), progress=False)


def test_tiny_model_overfits_to_bleu_100_and_training_is_seeded():
    model = tiny_model()
    history = _fit(model)
    assert history.val_loss[-1][2] < 0.05
    groups = [TestGroup(s, [t]) for s, t in PAIRS]
    for beam in (1, 3):
        result = evaluate_bleu(model, groups, SRC_VOCAB, TGT_VOCAB, beam_size=beam)
        assert result["single"] == pytest.approx(100.0)
    again = _fit(tiny_model())
    assert again.train_loss == history.train_loss  # same seed, same numbers


def test_time_budget_stops_training():
    history = _fit(tiny_model(), epochs=0, max_seconds=1.0, log_every=1)
    assert 0.9 < history.train_seconds < 3.0
    assert history.seconds[-1] <= 1.5


def test_callback_sees_the_history():
    seen = []
    history = fit(tiny_model(), BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 3), None,
                  TrainConfig(epochs=2, log_every=1, device="cpu"), callback=lambda h: seen.append(len(h.train_loss)),
                  progress=False)
    assert seen[-1] == len(history.train_loss) == 4


def test_greedy_equals_beam_of_size_one():
    model = tiny_model(seed=3).eval()
    src = torch.randint(4, len(SRC_VOCAB), (5, 6))
    lens = torch.tensor([6, 5, 3, 2, 1])
    greedy = tl.greedy_decode(model, src, lens, bos_id=1, eos_id=2, max_len=12)
    beam = beam_search(model, src, lens, bos_id=1, eos_id=2, max_len=12, beam_size=1)
    assert torch.equal(greedy, beam[:, :greedy.shape[1]])


def test_beam_search_returns_valid_sequences():
    model = tiny_model(seed=4).eval()
    src = torch.randint(4, len(SRC_VOCAB), (3, 5))
    out = beam_search(model, src, torch.tensor([5, 3, 1]), bos_id=1, eos_id=2, max_len=9, beam_size=4)
    assert out.shape[0] == 3 and out.shape[1] <= 9
    ended = (out == 2).cumsum(1) > 0
    assert torch.all(out[ended] == 2)


def test_attention_weights_of_a_translation():
    model = tiny_model().eval()
    src = torch.randint(4, len(SRC_VOCAB), (2, 5))
    out, weights = tl.greedy_decode(model, src, bos_id=1, max_len=4, return_weights=True)
    beam_out, beam_weights = beam_search(model, src, bos_id=1, eos_id=2, max_len=4, beam_size=2,
                                         return_weights=True)
    assert beam_weights["cross"][0].shape == (2, 4, beam_out.shape[1] + 1, 5)
    # the weights are those of the decoding itself: step t's cross-attention row
    cache, enc = model.decoder.init_cache(), model.encoder(src)
    _, step0 = model.decoder(torch.ones(2, 1, dtype=torch.long), enc, cache=cache, return_weights=True)
    torch.testing.assert_close(step0["cross"][0][:, :, 0], weights["cross"][0][:, :, 0])
    assert weights["cross"][0].shape == (2, 4, 5, 5)  # (B, heads, 1 + output length, source length)
    assert weights["decoder_self"][0].shape == (2, 4, 5, 5)
    assert weights["encoder_self"][0].shape == (2, 4, 5, 5)


def test_checkpoint_round_trip(tmp_path):
    model = tiny_model(seed=1).eval()
    path = save_checkpoint(tmp_path / "m.pt", model, SRC_VOCAB, TGT_VOCAB, {"subset": "test"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.pt"]  # no temporary file left
    loaded, src_vocab, tgt_vocab, extra = load_checkpoint(path)
    assert extra == {"subset": "test"} and src_vocab.idx_to_token == SRC_VOCAB.idx_to_token
    src, tgt = torch.randint(0, len(SRC_VOCAB), (2, 4)), torch.randint(0, len(TGT_VOCAB), (2, 3))
    assert torch.equal(loaded(src, tgt), model(src, tgt))
    other = tiny_model(seed=2)
    load_weights(other, path, SRC_VOCAB, TGT_VOCAB)
    assert torch.equal(other.eval()(src, tgt), model(src, tgt))


def test_checkpoint_mismatches_are_clear_errors(tmp_path):
    path = save_checkpoint(tmp_path / "m.pt", tiny_model(), SRC_VOCAB, TGT_VOCAB)
    with pytest.raises(CheckpointError, match="another config.*num_hiddens"):
        load_weights(tiny_model(num_hiddens=16), path, SRC_VOCAB, TGT_VOCAB)
    other_vocab = Vocab([t for _, t in PAIRS] + [["nouveau"]])
    with pytest.raises(CheckpointError, match="another config|another target vocabulary"):
        load_weights(tiny_model(), path, SRC_VOCAB, other_vocab)
    swapped = Vocab.from_tokens(TGT_VOCAB.idx_to_token[:4] + TGT_VOCAB.idx_to_token[4:][::-1])
    with pytest.raises(CheckpointError, match="another target vocabulary"):
        load_weights(tiny_model(), path, SRC_VOCAB, swapped)
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(path.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="cannot be read"):
        load_checkpoint(corrupt)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt")
    torch.save({"weights": torch.zeros(1)}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="not a transformer_lib checkpoint"):
        load_checkpoint(tmp_path / "foreign.pt")


def test_translate_reports_unknown_words_and_rejects_empty_input():
    model = tiny_model().eval()
    [result] = translate(model, ["I am frozen."], SRC_VOCAB, TGT_VOCAB)
    assert result.source_tokens == ["i", "am", "frozen", "."] and result.unknown == ["frozen"]
    with pytest.raises(ValueError, match="sentence 1 is empty"):
        translate(model, ["go.", "   "], SRC_VOCAB, TGT_VOCAB)
    with pytest.raises(TypeError, match="list of strings"):
        translate(model, "go.", SRC_VOCAB, TGT_VOCAB)


def test_evaluate_loss_uses_the_causal_mask():
    model = tiny_model().eval()
    loader = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 6, shuffle=False)
    batch = next(iter(loader))
    manual = sequence_loss(model(batch.src, batch.tgt_in, batch.src_valid_lens), batch.tgt_out).item()
    assert evaluate_loss(model, loader) == pytest.approx(manual)


def test_d2l_examples_are_scored_as_d2l_scores_them():
    from transformer_lib.data import tokenize
    from transformer_lib.translate import D2L_EXAMPLES, score_d2l_examples

    pairs = [(tokenize(en), tokenize(fr)) for en, fr, _ in D2L_EXAMPLES]
    src_vocab, tgt_vocab = Vocab([s for s, _ in pairs]), Vocab([t for _, t in pairs])
    torch.manual_seed(0)
    model = tl.Transformer(tl.TransformerConfig(len(src_vocab), len(tgt_vocab), num_hiddens=32, ffn_num_hiddens=64,
                                                num_heads=4, num_enc_blks=1, num_dec_blks=1, dropout=0.0))
    untrained = score_d2l_examples(model, src_vocab, tgt_vocab)
    assert len(untrained) == 4 and all(0.0 <= score < 1.0 for _, score in untrained)
    fit(model, BatchLoader(pairs, src_vocab, tgt_vocab, 4), None,
        TrainConfig(epochs=80, lr=3e-3, warmup_steps=5, label_smoothing=0.0, device="cpu"), progress=False)
    assert score_d2l_examples(model, src_vocab, tgt_vocab) == [(fr, 1.0) for _, fr, _ in D2L_EXAMPLES]
    assert [printed for _, _, printed in D2L_EXAMPLES] == [1.000, 0.687, 0.658, 1.000]  # d2l's book
