"""Incremental decoding with the key/value cache equals full-sequence decoding."""

import copy
import itertools

import pytest
import torch

import transformer_lib as tl
from transformer_lib.translation.decoding import greedy_decode_uncached, gnmt_length_penalty

SRC_VOCAB, TGT_VOCAB = 40, 35


@pytest.fixture(params=[False, True], ids=["post-norm", "pre-norm"])
def model(request):
    torch.manual_seed(0)
    config = tl.TransformerConfig(SRC_VOCAB, TGT_VOCAB, num_hiddens=32, ffn_num_hiddens=64, num_heads=4,
                                  num_enc_blks=2, num_dec_blks=3, dropout=0.1, norm_first=request.param)
    return tl.Transformer(config).eval()


def test_cached_steps_give_the_full_sequence_logits_and_weights(model):
    src = torch.randint(0, SRC_VOCAB, (3, 6))
    src_lens = torch.tensor([6, 2, 4])
    tgt = torch.randint(0, TGT_VOCAB, (3, 9))
    layers = [f"blks.block{i}.attention{j}" for i in range(3) for j in (1, 2)]
    with torch.no_grad():
        enc = model.encoder(src, src_lens)
        with tl.record_attention(model.decoder) as full_w:
            full = model.decoder(tgt, enc, src_lens)
        cache = model.decoder.init_cache()
        steps = []
        for t in range(tgt.shape[1]):
            with tl.record_attention(model.decoder) as step_w:
                steps.append(model.decoder(tgt[:, t:t + 1], enc, src_lens, cache=cache))
            for name in layers:  # step t's row of every block's weights
                [w], [w_full] = step_w[name], full_w[name]
                torch.testing.assert_close(w[:, :, 0], w_full[:, :, t, :w.shape[-1]], atol=1e-6, rtol=1e-5)
    assert cache.length == tgt.shape[1]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)


def test_cache_accepts_several_new_steps_at_once(model):
    src, tgt = torch.randint(0, SRC_VOCAB, (2, 5)), torch.randint(0, TGT_VOCAB, (2, 7))
    with torch.no_grad():
        enc = model.encoder(src)
        full = model.decoder(tgt, enc)
        cache = model.decoder.init_cache()
        parts = [model.decoder(tgt[:, a:b], enc, cache=cache) for a, b in ((0, 3), (3, 4), (4, 7))]
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=1e-5)


def test_greedy_decoding_is_identical_with_and_without_cache(model):
    src = torch.randint(0, SRC_VOCAB, (4, 7))
    src_lens = torch.tensor([7, 5, 3, 1])
    cached = tl.greedy_decode(model, src, src_lens, bos_id=1, max_len=20, use_cache=True)
    full = tl.greedy_decode(model, src, src_lens, bos_id=1, max_len=20, use_cache=False)
    assert cached.shape == (4, 20)
    assert torch.equal(cached, full)


def test_greedy_decoding_stops_at_eos_and_restores_training_mode(model):
    src, eos = torch.randint(0, SRC_VOCAB, (2, 4)), 2

    def endless_and_ends():
        # 30 steps without an end; where each row would end: just after its first eos
        rows = tl.greedy_decode(model, src, bos_id=1, max_len=30).tolist()
        return rows, [row.index(eos) + 1 if eos in row else 30 for row in rows]

    # raise eos's logit until both rows emit it before the 30th step, at different steps
    for _ in range(40):
        endless, ends = endless_and_ends()
        if max(ends) < 30 and ends[0] != ends[1]:
            break
        with torch.no_grad():
            model.decoder.dense.bias[eos] += 0.25
    assert max(ends) < 30 and ends[0] != ends[1]
    model.train()
    out = tl.greedy_decode(model, src, bos_id=1, max_len=30, eos_id=eos)
    assert model.training
    # a row ends at its first eos, and decoding stops at the step where the last row ends
    assert out.shape[1] == max(ends)
    for row, end in enumerate(ends):
        assert out[row, :end].tolist() == endless[row][:end]
        assert (out[row, end:] == eos).all()                  # after eos, only eos


def test_beam_reorder_keeps_the_chosen_rows(model):
    src, tgt = torch.randint(0, SRC_VOCAB, (3, 5)), torch.randint(0, TGT_VOCAB, (3, 4))
    with torch.no_grad():
        enc = model.encoder(src)
        cache = model.decoder.init_cache()
        model.decoder(tgt[:, :3], enc, cache=cache)
        index = torch.tensor([2, 2, 0])
        cache.reorder(index)
        step = model.decoder(tgt[index, 3:], enc[index], cache=cache)
        full = model.decoder(tgt[index], enc[index])
    torch.testing.assert_close(step[:, 0], full[:, 3], atol=1e-5, rtol=1e-5)


def test_beam_search_shows_every_step_to_on_step(model):
    src = torch.randint(4, SRC_VOCAB, (2, 5))
    lens = torch.tensor([5, 3])
    settings = dict(bos_id=1, eos_id=2, max_len=6, beam_size=3)
    steps = []
    out = tl.beam_search(model, src, lens, **settings, on_step=steps.append)
    assert torch.equal(out, tl.beam_search(model, src, lens, **settings))  # watching changes nothing
    assert 1 <= len(steps) <= 6
    previous = torch.ones(2, 3, 1, dtype=torch.long)                     # <bos>
    for t, step in enumerate(steps):
        assert step.candidates.shape == (2, 3, TGT_VOCAB) and step.tokens.shape == (2, 3, t + 2)
        # the kept beams are the k best candidates, each extending the beam it names
        best = step.candidates.reshape(2, -1).topk(3, dim=1).values
        torch.testing.assert_close(step.scores, best)
        parents = previous.gather(1, step.from_beam[..., None].expand(-1, -1, t + 1))
        assert torch.equal(step.tokens[..., :-1], parents)
        chosen = step.candidates.gather(1, step.from_beam[..., None].expand(-1, -1, TGT_VOCAB))
        torch.testing.assert_close(chosen.gather(2, step.tokens[..., -1:]).squeeze(-1), step.scores)
        previous = step.tokens
    assert (steps[0].from_beam == 0).all()  # step 1 extends <bos> only: the other beams start at -inf
    # the answer: the last step's beam with the best length-normalised score
    last = steps[-1]
    normalised = last.scores / ((5 + last.lengths) / 6) ** 0.6
    best = normalised.argmax(dim=1)
    expected = last.tokens[torch.arange(2), best, 1:]
    assert torch.equal(out, expected)


def test_length_penalty_is_gnmts_formula():
    lengths = torch.tensor([[1, 4, 7], [0, 11, 30]])                      # (B, k) |y|
    for alpha in (0.6, 1.0, 0.25):
        expected = torch.tensor([[(5 + n) ** alpha / 6 ** alpha for n in row]
                                 for row in lengths.tolist()])
        torch.testing.assert_close(gnmt_length_penalty(lengths, alpha), expected)
        torch.testing.assert_close(gnmt_length_penalty(lengths.float(), alpha), expected)
    assert torch.equal(gnmt_length_penalty(lengths, 0.0), torch.ones(2, 3))     # alpha 0: no penalty
    assert gnmt_length_penalty(torch.tensor([1.0]), 0.6).item() == 1.0          # |y| = 1: (6/6)^alpha
    longer = gnmt_length_penalty(torch.arange(1.0, 20.0), 0.6)
    assert (longer.diff() > 0).all()                                      # grows with |y|


def test_beam_search_divides_by_the_length_penalty(model):
    src = torch.randint(4, SRC_VOCAB, (3, 5))
    lens = torch.tensor([5, 3, 1])
    for alpha in (0.0, 0.6, 2.0):
        steps = []
        out = tl.beam_search(model, src, lens, bos_id=1, eos_id=2, max_len=7, beam_size=3,
                             length_penalty=alpha, on_step=steps.append)
        last = steps[-1]
        best = (last.scores / gnmt_length_penalty(last.lengths, alpha)).argmax(dim=1)
        assert torch.equal(out, last.tokens[torch.arange(3), best, 1:])


def prefix_log_probs(model, src, lens, tokens, eos_id):
    """The model's own log-probability of each row of ``tokens`` (``<bos>`` first), from one
    uncached pass: a beam's score, computed without the search or its cache. Tokens after the
    first ``eos_id`` add nothing (a finished beam only repeats it)."""
    with torch.no_grad():
        log_p = model(src, tokens[:, :-1], lens).float().log_softmax(-1)
    chosen = log_p.gather(2, tokens[:, 1:, None]).squeeze(-1)
    is_eos = (tokens[:, 1:] == eos_id).long()
    ended_before = (is_eos.cumsum(1) - is_eos) > 0
    return chosen.masked_fill(ended_before, 0.0).sum(1), (~ended_before).sum(1)


def test_every_kept_beam_scores_its_prefix_as_the_model_does(model):
    src, lens = torch.randint(4, SRC_VOCAB, (2, 5)), torch.tensor([5, 3])
    with torch.no_grad():            # an eos likely enough that some beams finish early
        model.decoder.dense.bias[2] += 2.0
    steps = []
    tl.beam_search(model, src, lens, bos_id=1, eos_id=2, max_len=6, beam_size=3,
                   on_step=steps.append)
    assert any(step.finished.any() and not step.finished.all() for step in steps)
    for step in steps:
        tokens = step.tokens.reshape(6, -1)                          # (B k, t + 1)
        scores, lengths = prefix_log_probs(model, src.repeat_interleave(3, 0),
                                           lens.repeat_interleave(3), tokens, eos_id=2)
        torch.testing.assert_close(step.scores.reshape(-1), scores, atol=1e-4, rtol=1e-5)
        assert torch.equal(step.lengths.reshape(-1), lengths.float())


def test_a_beam_as_wide_as_every_answer_finds_the_best_one():
    # target words 2 (<eos>) to 5; an answer ends at its first <eos> or after 3 words: 1 + 3 +
    # 36 answers in all. A beam of that width keeps every prefix, so it must return the answer
    # with the best length-normalised log-probability, found here by scoring every answer.
    pad, bos, eos, max_len = 0, 1, 2, 3
    torch.manual_seed(0)
    small = tl.Transformer(tl.TransformerConfig(SRC_VOCAB, 6, num_hiddens=32, ffn_num_hiddens=64,
                                                num_heads=4, num_enc_blks=2, num_dec_blks=2,
                                                dropout=0.0)).eval()
    with torch.no_grad():            # an <eos> likely enough that short answers can win
        small.decoder.dense.bias[eos] += 1.5
    src, lens = torch.randint(4, SRC_VOCAB, (4, 5)), torch.tensor([5, 4, 2, 1])
    answers = [list(a) for n in range(1, max_len + 1) for a in itertools.product(range(2, 6), repeat=n)
               if eos not in a[:-1] and (a[-1] == eos or n == max_len)]
    log_p, length = [], []
    for answer in answers:
        tokens = torch.tensor([[bos, *answer]]).expand(4, -1)
        score, n = prefix_log_probs(small, src, lens, tokens, eos)
        log_p.append(score)
        length.append(n)
    log_p, length = torch.stack(log_p), torch.stack(length)         # (answers, B)
    assert len(answers) == 40
    best = {}
    for alpha in (0.0, 0.6, 2.0):
        out = tl.beam_search(small, src, lens, bos_id=bos, eos_id=eos, pad_id=pad,
                             max_len=max_len, beam_size=len(answers), length_penalty=alpha)
        best[alpha] = [answers[i] for i in (log_p / ((5 + length) / 6) ** alpha).argmax(0)]
        expected = [a + [eos] * (out.shape[1] - len(a)) for a in best[alpha]]
        assert out.tolist() == expected, alpha
    # the penalty decides some answers here: each alpha picks another set
    assert best[0.0] != best[0.6] and best[0.6] != best[2.0] and best[0.0] != best[2.0]


@pytest.fixture
def drawn_to_specials(model):
    """The model, with its output layer's bias pushing <pad> (0) and <bos> (1) far above every
    other token: a decoder that did not keep them out would write nothing else."""
    model = copy.deepcopy(model)
    with torch.no_grad():
        model.decoder.dense.bias[[0, 1]] += 100.0
    return model


def test_decoders_never_write_pad_or_bos(drawn_to_specials):
    model = drawn_to_specials
    src, lens = torch.randint(4, SRC_VOCAB, (3, 5)), torch.tensor([5, 3, 1])
    args = dict(bos_id=1, eos_id=2, max_len=8)
    outputs = {
        "greedy": tl.greedy_decode(model, src, lens, pad_id=0, **args),
        "greedy, no cache": tl.greedy_decode(model, src, lens, pad_id=0, use_cache=False, **args),
        "uncached": greedy_decode_uncached(model, src, lens, pad_id=0, **args),
        "beam 3": tl.beam_search(model, src, lens, pad_id=0, beam_size=3, **args),
    }
    for name, out in outputs.items():
        assert not ((out == 0) | (out == 1)).any(), name
    # the same choice as the largest logit among the other tokens
    with torch.no_grad():
        first = model.decoder.decode(torch.ones(3, 1, dtype=torch.long),
                                     model.encoder.encode(src, lens), lens)[:, -1]
    assert torch.equal(outputs["greedy"][:, 0], first[:, 2:].argmax(-1) + 2)
    # without pad_id only <bos> is kept out, and <pad> is what the biased model writes
    assert (tl.greedy_decode(model, src, lens, **args) == 0).all()


def test_beam_scores_stay_the_models_log_probabilities(drawn_to_specials):
    # <pad> and <bos> are set to -inf after the softmax: the other tokens keep their
    # log-probabilities, so a kept prefix's score is its log-probability under the model
    model = drawn_to_specials
    src, lens = torch.randint(4, SRC_VOCAB, (1, 4)), torch.tensor([4])
    steps = []
    tl.beam_search(model, src, lens, bos_id=1, eos_id=2, pad_id=0, max_len=1, beam_size=2,
                   on_step=steps.append)
    [step] = steps
    with torch.no_grad():
        logits = model.decoder.decode(torch.ones(1, 1, dtype=torch.long),
                                      model.encoder.encode(src, lens), lens)[0, -1]
    expected = logits.float().log_softmax(-1)
    assert torch.isinf(step.candidates[0, 0, :2]).all()
    torch.testing.assert_close(step.candidates[0, 0, 2:], expected[2:])
    assert step.scores[0, 0] < -50       # the specials took nearly all the probability


def test_decode_ids_batches_beams_by_rows(model, monkeypatch):
    import importlib

    from transformer_lib.translation import Vocab
    from transformer_lib.translation.translate import decode_ids

    translate = importlib.import_module("transformer_lib.translation.translate")

    words = [f"w{i}" for i in range(SRC_VOCAB - 4)]
    vocab, tgt_vocab = Vocab([words]), Vocab([words[:TGT_VOCAB - 4]])
    sources = [words[i:i + 1 + i % 5] for i in range(12)]
    calls = []

    def watched(model, src, *args, **kwargs):
        calls.append(src.shape[0])
        return tl.beam_search(model, src, *args, **kwargs)

    monkeypatch.setattr(translate, "beam_search", watched)
    args = dict(beam_size=4, max_len=6)
    out = decode_ids(model, sources, vocab, tgt_vocab, batch_size=16, **args)
    assert calls == [4, 4, 4]                    # 16 rows: 4 sources x 4 beams per call
    assert out == decode_ids(model, sources, vocab, tgt_vocab, batch_size=400, **args)
    with pytest.raises(ValueError, match="beam_size"):
        decode_ids(model, sources, vocab, tgt_vocab, beam_size=0)
    with pytest.raises(ValueError, match="batch_size"):
        decode_ids(model, sources, vocab, tgt_vocab, batch_size=0)
