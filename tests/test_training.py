"""Loss, schedule, training loop, checkpoints, beam search and translation."""

import time

import pytest
import torch

import transformer_lib as tl
from transformer_lib.translation.checkpoint import (CheckpointError, load_checkpoint, load_weights,
                                                    save_checkpoint)
from transformer_lib.translation.data import BatchLoader, TestGroup, Vocab
from transformer_lib.translation.decoding import beam_search
from transformer_lib.translation.training import (EpochSnapshots, TrainConfig, autocast_dtype,
                                                  cpu_has_native_bf16, evaluate_loss, fit,
                                                  learning_rate, sequence_loss)
from transformer_lib.translation.translate import held_out_bleu, translate, translate_with_attention

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


@pytest.mark.parametrize("d, warmup", [(512, 4000), (64, 50), (16, 1)])
def test_the_inverse_sqrt_schedule_is_eq_3(d, warmup):
    """Eq. (3) of Vaswani et al.: d^-1/2 min(s^-1/2, s warmup^-3/2), s from 1."""
    config = TrainConfig(lr=(d * warmup) ** -0.5, warmup_steps=warmup, schedule="inverse_sqrt")
    for s in [1, 2, warmup // 2 + 1, warmup, warmup + 1, 3 * warmup, 100_000]:
        eq3 = d ** -0.5 * min(s ** -0.5, s * warmup ** -1.5)
        for progress in (0.0, 0.7, 1.0):  # eq. (3) does not know the run's length
            assert learning_rate(config, s - 1, progress) == pytest.approx(eq3, rel=1e-12)
    peak = max(range(1, 3 * warmup + 2), key=lambda s: learning_rate(config, s - 1, 0.0))
    assert peak == warmup and learning_rate(config, warmup - 1, 0.0) == pytest.approx(config.lr)


def test_decay_steps_fix_the_schedule_whatever_stops_the_run():
    # the schedule of a run planned for 100 steps, whatever the progress says
    config = TrainConfig(lr=1e-3, warmup_steps=10, decay_steps=100)
    for step, progress in [(5, 0.9), (50, 0.0), (75, 1.0), (100, 0.2)]:
        assert learning_rate(config, step, progress) == pytest.approx(
            1e-3 * min(1, (step + 1) / 10) * (1 - step / 100))
    for bad in (0, -3, 2.5):
        with pytest.raises((TypeError, ValueError), match="decay_steps"):
            TrainConfig(decay_steps=bad)


class FakeClock:
    """Seconds that pass only when the test says so, whatever the machine's speed."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


STEP_SECONDS = 0.125  # a power of two: sums of it are exact


@pytest.fixture
def clock(monkeypatch):
    """A fake clock for ``fit(..., clock=clock)`` on which each training step takes 1/8 s."""
    from transformer_lib.translation import training

    fake = FakeClock()
    real = training.train_step

    def timed_step(*args, **kwargs):
        fake.advance(STEP_SECONDS)
        return real(*args, **kwargs)

    monkeypatch.setattr(training, "train_step", timed_step)
    return fake


def test_a_time_budget_with_decay_steps_follows_the_step_schedule(monkeypatch, clock):
    """The GRU race's setting: stopped by time, scheduled by steps."""
    from transformer_lib.translation import training

    rates = []
    real = training.learning_rate
    monkeypatch.setattr(training, "learning_rate",
                        lambda c, s, p: rates.append(real(c, s, p)) or rates[-1])
    loader = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, batch_size=2, seed=0)
    config = TrainConfig(epochs=0, max_seconds=1.0, lr=1e-3, warmup_steps=2,
                         decay_steps=50, device="cpu", log_every=1)
    history = training.fit(tiny_model(), loader, None, config, progress=False, clock=clock)
    assert history.steps_done == len(rates) == 8      # 1 s of 1/8-s steps
    assert rates == [pytest.approx(learning_rate(config, s, 0.0)) for s in range(len(rates))]
    with pytest.raises(ValueError, match="schedule"):
        TrainConfig(schedule="cosine")


def _fit(model, clock=time.perf_counter, **changes):
    settings = dict(epochs=60, lr=3e-3, warmup_steps=10, label_smoothing=0.0, seed=0, device="cpu")
    settings.update(changes)
    loader = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, batch_size=3, seed=0)
    return fit(model, loader, BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 6, shuffle=False),
               TrainConfig(**settings), progress=False, clock=clock)


def test_tiny_model_overfits_to_bleu_100_and_training_is_seeded():
    model = tiny_model()
    history = _fit(model)
    assert history.validation[-1].loss < 0.05
    groups = [TestGroup(s, [t]) for s, t in PAIRS]
    scores = held_out_bleu(model, groups, SRC_VOCAB, TGT_VOCAB, beam_sizes=(1, 3))
    assert list(scores) == ["greedy", "beam 3"]
    for score in scores.values():
        assert score.single == pytest.approx(100.0) and score.multi == pytest.approx(100.0)
        assert score.hypotheses[0] == "j'ai froid." and score.seconds > 0
    again = _fit(tiny_model())
    assert again.train_loss == history.train_loss  # same seed, same numbers


def test_time_budget_stops_training_and_validation_is_not_training_time(monkeypatch, clock):
    from transformer_lib.translation import training

    real = training.evaluate_loss
    monkeypatch.setattr(training, "evaluate_loss",     # a validation of 5 s
                        lambda *a, **k: clock.advance(5.0) or real(*a, **k))
    history = _fit(tiny_model(), epochs=0, max_seconds=1.0, log_every=1, clock=clock)
    # two 1/8-s steps an epoch: the budget ends with the eighth step, the fourth epoch's last
    assert history.steps_done == 8 and history.train_seconds == 1.0
    assert history.seconds == [STEP_SECONDS * k for k in range(1, 9)]
    assert [(v.epoch, v.seconds) for v in history.validation] == [
        (1.0, 0.25), (2.0, 0.5), (3.0, 0.75), (4.0, 1.0)]  # one each epoch, none twice
    assert clock.now == 1.0 + 4 * 5.0


class SlowStart(BatchLoader):
    """A loader that takes ``seconds`` of ``clock`` at each epoch's start (e.g. to read a file)."""

    def __init__(self, *args, clock, seconds, **kwargs):
        super().__init__(*args, **kwargs)
        self.clock, self.seconds = clock, seconds

    def __iter__(self):
        self.clock.advance(self.seconds)
        yield from super().__iter__()


def test_a_budget_that_ends_as_an_epoch_starts_validates_once(clock):
    loader = SlowStart(PAIRS, SRC_VOCAB, TGT_VOCAB, batch_size=6,   # one step an epoch
                       clock=clock, seconds=0.25)
    val = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 6, shuffle=False)
    history = fit(tiny_model(), loader, val, TrainConfig(epochs=0, max_seconds=0.5, device="cpu"),
                  progress=False, clock=clock)
    # the first epoch ends at 0.375 s; the budget runs out in the second one's slow start
    assert history.steps_done == 1 and [v.epoch for v in history.validation] == [1.0]
    assert history.train_seconds == 0.25 + STEP_SECONDS and clock.now == 0.5 + STEP_SECONDS


def test_a_budget_spent_before_the_first_batch_still_trains_one_step(clock):
    loader = SlowStart(PAIRS, SRC_VOCAB, TGT_VOCAB, batch_size=3,   # two steps an epoch
                       clock=clock, seconds=2.0)                    # a budget's worth and more
    history = fit(tiny_model(), loader, None, TrainConfig(epochs=0, max_seconds=1.0, device="cpu",
                                                          log_every=1), progress=False, clock=clock)
    assert history.steps_done == 1 and len(history.train_loss) == 1
    assert history.train_seconds == 2.0 + STEP_SECONDS


def test_callback_sees_the_history():
    seen = []
    history = fit(tiny_model(), BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 3), None,
                  TrainConfig(epochs=2, log_every=1, device="cpu"),
                  callback=lambda h: seen.append(len(h.train_loss)),
                  progress=False)
    assert seen[-1] == len(history.train_loss) == 4


def test_callbacks_are_not_training_time_and_a_list_runs_each(clock):
    slow, seen = [], []
    history = fit(tiny_model(), BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 3),
                  BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 6, shuffle=False),
                  TrainConfig(epochs=0, max_seconds=1.0, log_every=1, device="cpu"),
                  callback=[lambda h: slow.append(clock.advance(1.0)),
                            lambda h: seen.append(len(h.train_loss))], progress=False, clock=clock)
    # a budget of 1 s, 1/8 s a step and 1 s of callback at every log point: the eight steps
    # are all the training time (counted, the callbacks would stop it after the first)
    assert history.steps_done == 8 and history.train_seconds == 1.0
    assert history.seconds == [STEP_SECONDS * k for k in range(1, 9)]
    # one call at each of the 8 log points and after each of the 4 epochs' validations
    assert len(slow) == 12 and seen == [1, 2, 2, 3, 4, 4, 5, 6, 6, 7, 8, 8]
    assert history.validation[-1].seconds == 1.0


def test_epoch_snapshots_keep_the_weights_each_validation_saw():
    model = tiny_model()
    snapshots = EpochSnapshots(model, epochs=2)
    history = fit(model, BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 3, seed=0),
                  BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 6, shuffle=False),
                  TrainConfig(epochs=4, device="cpu"), callback=snapshots, progress=False)
    assert snapshots.last_epoch == 2 and sorted(snapshots.weights) == [1, 2]
    val = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 6, shuffle=False)
    for epoch, weights in snapshots.weights.items():
        then = tiny_model()
        then.load_state_dict(weights)
        assert evaluate_loss(then, val) == pytest.approx(history.validation[epoch - 1].loss)
    assert evaluate_loss(model, val) == pytest.approx(history.validation[-1].loss)
    assert evaluate_loss(model, val) != pytest.approx(history.validation[1].loss)
    with pytest.raises(ValueError, match="epochs"):
        EpochSnapshots(model, epochs=0)


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


def test_translate_with_attention_gives_the_weights_used_while_decoding():
    model = tiny_model(num_enc_blks=2, num_dec_blks=2).eval()
    result = translate_with_attention(model, "I am cold.", SRC_VOCAB, TGT_VOCAB, max_len=4)
    [greedy] = translate(model, ["I am cold."], SRC_VOCAB, TGT_VOCAB, max_len=4)
    assert result.source == ["i", "am", "cold", ".", "<eos>"]
    assert result.outputs[:-1] == greedy.tokens and result.outputs[-1] == "<eos>"
    assert result.inputs == ["<bos>"] + greedy.tokens and result.text == greedy.text
    S, T = len(result.source), len(result.outputs)
    assert result.weights["encoder_self"][0].shape == (4, S, S)      # (heads, queries, keys)
    assert result.weights["decoder_self"][0].shape == (4, T, T)
    assert result.weights["cross"][0].shape == (4, T, S)
    # every weight is one the decoding used: the cached decoding replayed step by step, each
    # block's own layers (two of each kind, so that an order of blocks would show)
    src, inputs = torch.tensor([SRC_VOCAB[result.source]]), torch.tensor([TGT_VOCAB[result.inputs]])
    with torch.no_grad(), tl.record_attention(model) as maps:
        memory, cache = model.encoder(src), model.decoder.init_cache()
        for t in range(T):
            model.decoder(inputs[:, t:t + 1], memory, cache=cache)
    for b in range(2):
        torch.testing.assert_close(result.weights["encoder_self"][b],
                                   maps[f"encoder.blks.block{b}.attention"][0][0])
        for t in range(T):
            step_self = maps[f"decoder.blks.block{b}.attention1"][t][0, :, 0]   # (heads, t + 1)
            torch.testing.assert_close(result.weights["decoder_self"][b][:, t, :t + 1], step_self)
            assert (result.weights["decoder_self"][b][:, t, t + 1:] == 0).all()
            step_cross = maps[f"decoder.blks.block{b}.attention2"][t][0, :, 0]  # (heads, S)
            torch.testing.assert_close(result.weights["cross"][b][:, t], step_cross)
    assert not torch.allclose(result.weights["cross"][0], result.weights["cross"][1])


def test_translate_with_attention_replays_exactly_the_steps_decoded():
    model = tiny_model().eval()
    with torch.no_grad():
        model.decoder.dense.bias[Vocab.eos] = -1e9            # this decoder never ends a sentence
    result = translate_with_attention(model, "I am cold.", SRC_VOCAB, TGT_VOCAB, max_len=4)
    assert len(result.outputs) == 4 and "<eos>" not in result.outputs   # four steps, no invented end
    assert result.inputs == ["<bos>"] + result.outputs[:-1]
    assert result.weights["cross"][0].shape == (4, 4, len(result.source))
    assert result.text == " ".join(result.outputs)


def test_a_single_layer_is_recorded_under_a_readable_name():
    mha = tl.MultiHeadAttention(8, 2)
    X = torch.randn(1, 3, 8)
    with tl.record_attention(mha) as maps:
        mha(X, X, X)
    assert list(maps) == ["attention"] and maps.of(mha) is maps["attention"]


def test_attention_maps_leave_no_state_behind():
    model = tiny_model().train()
    src, tgt = torch.randint(4, len(SRC_VOCAB), (2, 5)), torch.randint(4, len(TGT_VOCAB), (2, 3))
    maps = model.attention_maps(src, tgt, torch.tensor([5, 2]))
    assert model.training                                            # its mode is restored
    assert all(layer.attention.recorder is None
               for layers in model.attention_layers().values() for layer in layers)
    assert torch.all(maps["cross"][0][1, :, :, 2:] == 0)            # padding: exactly 0
    with pytest.raises(RuntimeError, match="boom"), tl.record_attention(model):
        raise RuntimeError("boom")
    assert model.encoder.blks[0].attention.attention.recorder is None  # also after an error
    with tl.record_attention(model), pytest.raises(RuntimeError, match="nested"):
        with tl.record_attention(model):
            pass


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


def test_evaluate_loss_is_the_mean_over_every_token_each_scored_from_its_prefix_alone():
    # the reference decodes one pair at a time and feeds position t only the inputs up to t, so
    # it needs no padding, no batching and no causal mask: evaluate_loss must weight its
    # batches by their token counts (unequal here) and mask the future
    model = tiny_model().eval()
    loader = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 2, shuffle=False)
    assert len({batch.num_target_tokens for batch in loader}) > 1
    losses = []
    for english, french in PAIRS:
        src = torch.tensor([SRC_VOCAB[english] + [Vocab.eos]])
        labels = TGT_VOCAB[french] + [Vocab.eos]
        inputs = [Vocab.bos] + labels[:-1]
        with torch.no_grad():
            for t, label in enumerate(labels):
                logits = model(src, torch.tensor([inputs[:t + 1]]))[0, -1]
                losses.append(torch.nn.functional.cross_entropy(logits, torch.tensor(label)))
    expected = torch.stack(losses).mean().item()
    assert evaluate_loss(model, loader) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_sequence_loss_equals_torch_cross_entropy(dtype, smoothing):
    logits = (torch.randn(3, 7, 50) * 3).to(dtype).requires_grad_()
    reference = logits.detach().clone().requires_grad_()
    labels = torch.randint(1, 50, (3, 7))
    labels[0, 4:], labels[2, 1:] = 0, 0  # padding
    loss = sequence_loss(logits, labels, label_smoothing=smoothing)
    expected = torch.nn.functional.cross_entropy(reference.reshape(-1, 50).float(), labels.reshape(-1),
                                                 ignore_index=0, label_smoothing=smoothing)
    assert loss.dtype == torch.float32
    torch.testing.assert_close(loss, expected, atol=2e-6, rtol=1e-6)
    loss.backward()
    expected.backward()
    assert logits.grad.dtype == dtype
    torch.testing.assert_close(logits.grad.float(), reference.grad.float(), atol=1e-7, rtol=1e-5)
    assert torch.all(logits.grad[labels == 0] == 0)                 # padding gets no gradient


def test_sequence_loss_leaves_the_logits_alone_and_takes_any_pad_id():
    logits = torch.randn(2, 5, 9, requires_grad=True)       # float32: no copy on .float()
    before = logits.detach().clone()
    labels = torch.tensor([[1, 2, 3, -100, -100], [4, 5, -100, -100, -100]])
    loss = sequence_loss(logits, labels, pad_id=-100, label_smoothing=0.1)
    loss.backward(retain_graph=True)
    assert torch.equal(logits.detach(), before)             # the backward pass wrote into a copy
    expected = torch.nn.functional.cross_entropy(before.reshape(-1, 9), labels.reshape(-1),
                                                 ignore_index=-100, label_smoothing=0.1)
    torch.testing.assert_close(loss, expected)
    loss.backward()                                          # a second pass sees the same tensors


def test_fit_refuses_an_empty_loader():
    with pytest.raises(ValueError, match="train_loader is empty"):
        fit(tiny_model(), [], None, TrainConfig(epochs=1, device="cpu"), progress=False)


def test_a_resumed_run_ends_with_the_weights_of_an_uninterrupted_one(tmp_path):
    config = TrainConfig(epochs=4, lr=3e-3, warmup_steps=3, log_every=1, device="cpu")

    def loader():
        return BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, batch_size=3, seed=0)  # 2 steps an epoch

    val = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 6, shuffle=False)
    whole = tiny_model(dropout=0.2)                                    # dropout: the generator matters
    expected = fit(whole, loader(), val, config, progress=False, checkpoint=tmp_path / "whole.state")

    def ctrl_c_in_epoch_3(history):
        if history.steps and history.steps[-1] == 5:
            raise KeyboardInterrupt
    state = tmp_path / "run.state"
    with pytest.raises(KeyboardInterrupt):
        fit(tiny_model(dropout=0.2), loader(), val, config, progress=False, checkpoint=state,
            callback=ctrl_c_in_epoch_3)
    resumed = tiny_model(seed=99, dropout=0.2)                        # other initial weights
    history = fit(resumed, loader(), val, config, progress=False, checkpoint=state, resume=True)
    assert history.steps_done == 8 and len(history.validation) == 4
    for (name, a), b in zip(whole.state_dict().items(), resumed.state_dict().values()):
        assert torch.equal(a, b), name                                # bit for bit
    assert history.train_loss == expected.train_loss
    assert [v.loss for v in history.validation] == [v.loss for v in expected.validation]
    again = fit(resumed, loader(), val, config, progress=False, checkpoint=state, resume=True)
    assert again.steps_done == 8 and again.train_loss == expected.train_loss   # finished: nothing to do
    with pytest.raises(CheckpointError, match="lr"):
        fit(resumed, loader(), val, TrainConfig(epochs=4, lr=1e-3, device="cpu"), progress=False,
            checkpoint=state, resume=True)


def test_autocast_dtype_follows_the_device(monkeypatch):
    monkeypatch.delenv("TRANSFORMER_LIB_PRECISION", raising=False)
    cpu = torch.device("cpu")
    assert autocast_dtype("auto", cpu) == (torch.bfloat16 if cpu_has_native_bf16() else None)
    assert autocast_dtype("float32", cpu) is None
    assert autocast_dtype("bfloat16", cpu) is torch.bfloat16
    with pytest.raises(ValueError, match="precision"):
        autocast_dtype("int8", cpu)
    with pytest.raises(ValueError, match="precision"):
        TrainConfig(precision="half")


@pytest.mark.parametrize("forced, expected", [("float32", None), ("bfloat16", torch.bfloat16)])
def test_the_environment_can_force_what_auto_means(monkeypatch, forced, expected):
    cpu = torch.device("cpu")
    monkeypatch.setenv("TRANSFORMER_LIB_PRECISION", forced)
    assert autocast_dtype("auto", cpu) is expected
    assert autocast_dtype("bfloat16", cpu) is torch.bfloat16     # an explicit choice still wins
    assert _fit(tiny_model(), epochs=1).precision == forced
    monkeypatch.setenv("TRANSFORMER_LIB_PRECISION", "half")
    with pytest.raises(ValueError, match="TRANSFORMER_LIB_PRECISION"):
        autocast_dtype("auto", cpu)


@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_each_precision_is_seeded_and_learns(precision):
    models = [tiny_model(), tiny_model()]
    logits_dtypes = set()                     # what the output layer computed in, while training
    models[0].decoder.dense.register_forward_hook(
        lambda layer, inputs, out: logits_dtypes.add(out.dtype) if layer.training else None)
    histories = [_fit(model, epochs=20, precision=precision) for model in models]
    assert histories[0].train_loss == histories[1].train_loss       # same seed, same numbers
    assert histories[0].precision == precision
    assert logits_dtypes == {getattr(torch, precision)}
    assert histories[0].validation[-1].loss < 0.5 * histories[0].validation[0].loss


def test_fit_leaves_the_callers_generator_and_the_models_mode_alone():
    model = tiny_model()
    model.eval()
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    _fit(model, epochs=2)
    assert torch.equal(torch.rand(3), expected)                      # no hidden reseeding
    assert not model.training


def test_batch_order_depends_on_the_epoch_only():
    loader = BatchLoader(PAIRS * 4, SRC_VOCAB, TGT_VOCAB, batch_size=5, seed=0)

    def order():
        return [batch.src.tolist() for batch in loader]

    first = order()
    assert order() == first                                          # peeking changes nothing
    loader.set_epoch(1)
    assert order() != first
    loader.set_epoch(0)
    assert order() == first
    batch = next(iter(loader))
    assert batch.num_target_tokens == int((batch.tgt_out != Vocab.pad).sum())


def test_evaluate_loss_with_batch_statistics():
    torch.manual_seed(0)
    model = tiny_model(norm="batch")
    loader = BatchLoader(PAIRS, SRC_VOCAB, TGT_VOCAB, 3, shuffle=False)
    running = [m.running_mean.clone() for m in model.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    plain = evaluate_loss(model, loader)
    batch_stats = evaluate_loss(model, loader, batch_statistics=True)
    assert abs(plain - batch_stats) > 1e-3                           # two functions
    after = [m.running_mean for m in model.modules() if isinstance(m, torch.nn.BatchNorm1d)]
    assert all(torch.equal(a, b) for a, b in zip(running, after))   # running averages untouched
    layer = tiny_model()
    assert evaluate_loss(layer, loader) == pytest.approx(evaluate_loss(layer, loader, batch_statistics=True))


def test_d2l_examples_are_scored_as_d2l_scores_them():
    from transformer_lib.translation.data import tokenize
    from transformer_lib.translation.translate import D2L_EXAMPLES, score_d2l_examples

    pairs = [(tokenize(en), tokenize(fr)) for en, fr, _ in D2L_EXAMPLES]
    src_vocab, tgt_vocab = Vocab([s for s, _ in pairs]), Vocab([t for _, t in pairs])
    torch.manual_seed(0)
    model = tl.Transformer(tl.TransformerConfig(len(src_vocab), len(tgt_vocab), num_hiddens=32,
                                                ffn_num_hiddens=64,
                                                num_heads=4, num_enc_blks=1, num_dec_blks=1, dropout=0.0))
    untrained = score_d2l_examples(model, src_vocab, tgt_vocab)
    assert len(untrained) == 4 and all(0.0 <= score < 1.0 for _, score in untrained)
    fit(model, BatchLoader(pairs, src_vocab, tgt_vocab, 4), None,
        TrainConfig(epochs=80, lr=3e-3, warmup_steps=5, label_smoothing=0.0, device="cpu"), progress=False)
    assert score_d2l_examples(model, src_vocab, tgt_vocab) == [(fr, 1.0) for _, fr, _ in D2L_EXAMPLES]


def test_d2l_examples_are_scored_with_d2ls_own_bleu(d2l, monkeypatch):
    # translations that are partly right, where d2l's k = 2 gives other scores than k = 4
    import importlib

    from transformer_lib.translation.translate import D2L_EXAMPLES, Translation, score_d2l_examples

    module = importlib.import_module("transformer_lib.translation.translate")
    hypotheses = ["va !", "j'ai perdu perdu .", "il est .", ""]
    monkeypatch.setattr(module, "translate", lambda model, english, *vocabs, max_len: [
        Translation(e.split(), h.split(), [], h) for e, h in zip(english, hypotheses)])
    scores = score_d2l_examples(None, None, None)
    assert [text for text, _ in scores] == hypotheses
    for (_, score), hypothesis, (_, reference, _) in zip(scores[:3], hypotheses, D2L_EXAMPLES):
        assert score == pytest.approx(d2l.bleu(hypothesis, reference, 2))
    assert 0 < scores[1][1] < 1 and 0 < scores[2][1] < 1 and scores[3][1] == 0.0   # empty: 0


def test_the_cpu_recipe_trains_fewer_epochs_in_float32(monkeypatch):
    from transformer_lib.translation.recipes import RECIPES

    basic = RECIPES["basic"].with_train(device="cpu")
    assert basic.for_precision().train.epochs == (7 if cpu_has_native_bf16() else 4)
    monkeypatch.setenv("TRANSFORMER_LIB_PRECISION", "float32")
    assert basic.for_precision().train.epochs == basic.float32_epochs == 4
    assert basic.with_train(precision="bfloat16").for_precision().train.epochs == 7
    monkeypatch.setenv("TRANSFORMER_LIB_PRECISION", "bfloat16")
    assert basic.for_precision().train.epochs == 7
    assert RECIPES["d2l"].with_train(precision="float32").for_precision().train.epochs == 30


@pytest.mark.parametrize("config", [
    tl.TransformerConfig(2205, 3125, max_len=64, norm_first=True),
    TrainConfig(max_seconds=600.0, device="cuda:0", precision="float16"),
    tl.model.DecoderOnlyConfig(8000, tie_embeddings=True)], ids=lambda c: type(c).__name__)
def test_a_printed_config_fits_the_page_and_reads_back_as_the_same_config(config):
    text = str(config)
    assert text.count("\n") >= 2 and max(len(line) for line in text.splitlines()) <= 77
    assert eval(text, {type(config).__name__: type(config)}) == config  # noqa: S307
    assert repr(config) == repr(config).replace("\n", "")  # the repr stays one line


def test_the_optimizer_is_adamw_with_the_configs_rate_decay_and_beta2():
    from transformer_lib.translation.training import make_optimizer

    model = torch.nn.Linear(3, 2)
    group = make_optimizer(model, TrainConfig(lr=3e-4, weight_decay=0.02,
                                              beta2=0.98)).param_groups[0]
    assert (group["lr"], group["weight_decay"], group["betas"]) == (3e-4, 0.02, (0.9, 0.98))
    assert make_optimizer(model, TrainConfig()).param_groups[0]["betas"] == (0.9, 0.999)


def test_a_language_models_checkpoint_round_trip(tmp_path):
    from transformer_lib.model import LanguageModel, LanguageModelConfig

    vocab = Vocab.from_tokens(list(Vocab([[]]).idx_to_token) + list("abc "))
    torch.manual_seed(0)
    model = LanguageModel(LanguageModelConfig(len(vocab), num_hiddens=16, ffn_num_hiddens=32,
                                              num_heads=2, num_blks=2).gpt()).eval()
    path = save_checkpoint(tmp_path / "lm.pt", model, vocab, vocab, {"what": "lm"})
    loaded, src_vocab, tgt_vocab, extra = load_checkpoint(path)
    assert extra == {"what": "lm"} and tgt_vocab.idx_to_token == vocab.idx_to_token
    assert loaded.config == model.config
    ids = torch.randint(0, len(vocab), (2, 5))
    assert torch.equal(loaded(ids), model(ids))
    # the tied output layer is the embedding again, not a copy
    assert loaded.dense.weight is loaded.embedding.weight
    small = Vocab.from_tokens(list(Vocab([[]]).idx_to_token))
    save_checkpoint(tmp_path / "bad.pt", model, small, small)
    with pytest.raises(CheckpointError, match="vocabulary sizes"):
        load_checkpoint(tmp_path / "bad.pt")
