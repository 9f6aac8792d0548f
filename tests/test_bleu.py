"""BLEU: the sentence score equals d2l's, the corpus score (direct or step by step) equals
sacreBLEU's."""

import inspect
import math
import re

import pytest
import sacrebleu
from hypothesis import given
from hypothesis import strategies as st
from sacrebleu.metrics import BLEU, BLEUScore

from transformer_lib.translation.bleu import BleuSteps, bleu, bleu_steps, corpus_bleu, corpus_bleu_details

# d2l's demo (sec_seq2seq_training): English -> French predictions vs labels, plus cases
# with repeated n-grams, a prediction longer or shorter than the label, and no match at all.
PAIRS = [
    ("va !", "va !"),
    ("j'ai perdu .", "j'ai perdu ."),
    ("il est riche .", "il est calme ."),
    ("je suis chez moi .", "je suis chez moi ."),
    ("je suis <unk> .", "je suis chez moi ."),
    ("il est il est il est", "il est calme ."),          # repeated n-grams: clipped
    ("the the the the the the the", "the cat is on the mat"),
    ("a a b a a b", "a b a b a a"),
    ("le chat", "le chat est sur le tapis ."),            # shorter: brevity penalty
    ("le chat est sur le tapis rouge et bleu .", "le chat est sur le tapis ."),  # longer
    ("x", "le chat est ."),
    ("rien de commun", "nothing in common"),
    ("a  b", "a b"),                                      # empty tokens, as split(' ') gives
]


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("pred, label", PAIRS)
def test_bleu_equals_d2l(d2l, pred, label, k):
    assert bleu(pred, label, k) == d2l.bleu(pred, label, k)


def test_bleu_default_k_is_2(d2l):
    pred, label = "il est riche .", "il est calme ."
    assert bleu(pred, label) == d2l.bleu(pred, label, 2)


def test_bleu_values():
    assert bleu("je suis chez moi .", "je suis chez moi .", k=4) == 1.0
    assert bleu("rien de commun", "nothing in common") == 0.0
    # 3 of 4 unigrams and 1 of 3 bigrams ("il est") match, no brevity penalty
    expected = (3 / 4) ** 0.5 * (1 / 3) ** 0.25
    assert bleu("il est riche .", "il est calme .") == pytest.approx(expected)
    # clipping: each label word matches one prediction word only, so 2 of 4 match
    assert bleu("il est il est", "il est", k=1) == pytest.approx((2 / 4) ** 0.5)


@given(pred=st.lists(st.sampled_from("abcd"), min_size=1, max_size=8),
       label=st.lists(st.sampled_from("abcde"), min_size=1, max_size=8),
       k=st.integers(1, 5))
def test_bleu_equals_d2l_on_random_sentences(d2l, pred, label, k):
    pred, label = " ".join(pred), " ".join(label)
    assert bleu(pred, label, k) == d2l.bleu(pred, label, k)


HYPS = ["The cat sat on the mat.", "A dog barks loudly today!", "It is raining, isn't it?",
        "I have lost my keys again."]
REFS = ["The cat sat on a mat.", "One dog barks today!", "It's raining, isn't it?",
        "I lost my keys again."]
REFS2 = ["The cat is on the mat.", "A dog is barking loudly.", "It is raining, is it not?",
         "Again I have lost my keys."]


@pytest.mark.parametrize("n", [1, 2, 4])
@pytest.mark.parametrize("tokenize", ["13a", "none", "char"])
def test_corpus_bleu_single_reference_equals_sacrebleu(n, tokenize):
    expected = sacrebleu.corpus_bleu(HYPS[:n], [REFS[:n]], tokenize=tokenize).score
    assert corpus_bleu(HYPS[:n], REFS[:n], tokenize=tokenize) == expected
    # one reference given as a one-element list is the same thing
    assert corpus_bleu(HYPS[:n], [[r] for r in REFS[:n]], tokenize=tokenize) == expected


def test_corpus_bleu_multi_reference_equals_sacrebleu_streams():
    per_sentence = [[r1, r2] for r1, r2 in zip(REFS, REFS2)]
    expected = sacrebleu.corpus_bleu(HYPS, [REFS, REFS2]).score
    assert corpus_bleu(HYPS, per_sentence) == expected
    assert expected > sacrebleu.corpus_bleu(HYPS, [REFS]).score  # the second reference counts


def test_corpus_bleu_variable_number_of_references():
    # sentence 0 has an extra reference equal to its hypothesis; the others have one each
    per_sentence = [[REFS[0], HYPS[0]], [REFS[1]], [REFS[2]], [REFS[3]]]
    score = corpus_bleu(HYPS, per_sentence)
    assert score > corpus_bleu(HYPS, REFS)
    # sacreBLEU drops None, so the padded streams are the reference
    expected = sacrebleu.corpus_bleu(HYPS, [REFS, [HYPS[0], None, None, None]]).score
    assert score == expected
    assert corpus_bleu_details(HYPS, per_sentence).ref_len == sacrebleu.corpus_bleu(
        HYPS, [REFS, [HYPS[0], None, None, None]]).ref_len


def test_missing_references_are_dropped_not_counted_as_empty():
    # A '' reference would be a real, empty one: its length 0 is closest to the 1-word
    # hypothesis and would change the brevity penalty.  Padding must drop it instead.
    hyps = ["the cat sat on the mat", "dog"]
    refs = [["the cat sat on a mat", "the cat is on the mat"], ["a dog barks"]]
    ours = corpus_bleu(hyps, refs)
    assert ours == sacrebleu.corpus_bleu(hyps, [[r[0] for r in refs],
                                                ["the cat is on the mat", None]]).score
    assert ours != sacrebleu.corpus_bleu(hyps, [[r[0] for r in refs],
                                                ["the cat is on the mat", ""]]).score


def test_corpus_bleu_of_identical_texts_is_100():
    # sacreBLEU computes exp(sum of logs): 100 up to rounding (here 100.00000000000004)
    assert corpus_bleu(HYPS, HYPS) == pytest.approx(100.0, abs=1e-9)
    assert corpus_bleu(HYPS, [[h, "something else entirely"] for h in HYPS]) == pytest.approx(
        100.0, abs=1e-9)


def test_corpus_bleu_details_holds_the_score():
    details = corpus_bleu_details(HYPS, REFS)
    assert isinstance(details, BLEUScore)
    assert details.score == corpus_bleu(HYPS, REFS)
    assert len(details.precisions) == 4


@pytest.mark.parametrize("call, error, match", [
    (lambda: bleu("", "va !"), ValueError, "pred_seq"),
    (lambda: bleu("va !", "va !", k=0), ValueError, "k"),
    (lambda: bleu("va !", "va !", k=-1), ValueError, "k"),
    (lambda: corpus_bleu(HYPS, REFS[:3]), ValueError, "references"),
    (lambda: corpus_bleu(HYPS[:1], [REFS[0], REFS[1]]), ValueError, "references"),
    (lambda: corpus_bleu([], []), ValueError, "empty"),
    (lambda: corpus_bleu(HYPS[:2], [[REFS[0]], []]), ValueError, "references"),
    (lambda: corpus_bleu(HYPS[:1], [[None]]), TypeError, "references"),
    (lambda: corpus_bleu("a hypothesis", "a reference"), TypeError, "hypotheses"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# --- bleu_steps: the same corpus BLEU, in readable steps -------------------------------------------

def sacrebleu_of(hyps, per_sentence, max_n=4, tokenize="13a"):
    """sacreBLEU's BLEUScore, with the references padded into streams by hand (None = no
    reference, which sacreBLEU drops)."""
    streams = [[refs[j] if j < len(refs) else None for refs in per_sentence]
               for j in range(max(map(len, per_sentence)))]
    return BLEU(max_ngram_order=max_n, tokenize=tokenize).corpus_score(hyps, streams)


def assert_steps_equal(steps, expected):
    assert isinstance(steps, BleuSteps)
    assert list(steps.matches) == list(expected.counts)
    assert list(steps.totals) == list(expected.totals)
    assert (steps.hyp_len, steps.ref_len) == (expected.sys_len, expected.ref_len)
    assert steps.brevity_penalty == pytest.approx(expected.bp, rel=1e-12, abs=1e-12)
    assert [100 * p for p in steps.precisions] == pytest.approx(expected.precisions, rel=1e-12)
    assert steps.score == pytest.approx(expected.score, rel=1e-9, abs=1e-9)


WORDS = ["le", "chat", "est", "sur", "la", "table", "il", "calme", ".", "!", "l'eau", "Tu"]
sentence = st.lists(st.sampled_from(WORDS), min_size=0, max_size=9).map(" ".join)


@given(corpus=st.lists(st.tuples(sentence, st.lists(sentence, min_size=1, max_size=3)),
                       min_size=1, max_size=5),
       max_n=st.integers(1, 4))
def test_bleu_steps_equals_sacrebleu_on_random_corpora(corpus, max_n):
    hyps = [h for h, _ in corpus]
    per_sentence = [refs for _, refs in corpus]
    assert_steps_equal(bleu_steps(hyps, per_sentence, max_n), sacrebleu_of(hyps, per_sentence, max_n))
    if max_n == 4:
        assert bleu_steps(hyps, per_sentence).score == pytest.approx(
            corpus_bleu(hyps, per_sentence), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("tokenize", ["13a", "none", "char", "intl"])
def test_bleu_steps_equals_sacrebleu_on_text(tokenize):
    per_sentence = [[r1, r2] for r1, r2 in zip(REFS, REFS2)]
    assert_steps_equal(bleu_steps(HYPS, per_sentence, tokenize=tokenize),
                       sacrebleu_of(HYPS, per_sentence, tokenize=tokenize))
    assert_steps_equal(bleu_steps(HYPS, REFS, tokenize=tokenize),
                       sacrebleu_of(HYPS, [[r] for r in REFS], tokenize=tokenize))


def test_bleu_steps_tokenizes_as_corpus_bleu():
    default = inspect.signature(bleu_steps).parameters["tokenize"].default
    assert default == inspect.signature(corpus_bleu).parameters["tokenize"].default == "13a"
    # 13a splits the full stop off "mat.", so "mat ." and "mat." tokenize alike
    assert bleu_steps(["the cat sat on the mat."], ["the cat sat on the mat ."]).score == \
        pytest.approx(100.0)


def test_bleu_steps_by_hand():
    # hypothesis: 6 tokens; references of 4 and 7 tokens: r = 7 is closer (|6 - 7| < |6 - 4|)
    hyps = ["il est il est calme ."]
    refs = [["il est calme .", "oui , il est très calme ."]]
    steps = bleu_steps(hyps, refs)
    # unigrams: "il" and "est" occur twice but at most once in any one reference: 4 of 6 match
    assert steps.matches == (4, 3, 2, 1) and steps.totals == (6, 5, 4, 3)
    assert (steps.hyp_len, steps.ref_len) == (6, 7)
    assert steps.brevity_penalty == pytest.approx(math.exp(1 - 7 / 6))
    expected = 100 * math.exp(1 - 7 / 6) * (4 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert steps.score == pytest.approx(expected, rel=1e-12)
    # a tie (references of 5 and 7 tokens for 6) takes the shorter reference: no penalty
    tie = bleu_steps(hyps, [["il est calme , oui", "oui , il est très calme ."]])
    assert tie.ref_len == 5 and tie.brevity_penalty == 1.0


def test_the_worked_formula_prints_each_step_and_multiplies_to_the_score():
    steps = bleu_steps(["il est il est calme ."], [["il est calme .", "oui , il est très calme ."]])
    lines = steps.worked().splitlines()
    assert lines[:4] == ["p_1 =  4 /  6 = 0.6667", "p_2 =  3 /  5 = 0.6000",
                         "p_3 =  2 /  4 = 0.5000", "p_4 =  1 /  3 = 0.3333"]
    assert lines[4] == "c = 6 hypothesis tokens, r = 7 reference tokens"
    assert lines[-1].startswith("BLEU = 100 * BP * (p_1 p_2 p_3 p_4)^(1/4) = 100 * ")
    bp, mean, score = map(float, re.fullmatch(r".* = 100 \* (\S+) \* (\S+) = (\S+)",
                                              lines[-1]).groups())
    assert bp * mean * 100 == pytest.approx(score, abs=0.01)   # 4 decimals each
    assert score == pytest.approx(steps.score, abs=1e-4)
    smoothed = bleu_steps(["a b c d"], ["a b x d"]).worked()   # no 3-gram and no 4-gram matches
    assert smoothed.count("(no match: the stand-in)") == 2


def test_bleu_steps_counts_are_summed_before_dividing():
    # Two sentences: 1 of 1 and 0 of 3 unigrams match. Corpus p_1 = 1/4, not the mean 1/2.
    steps = bleu_steps(["oui", "x y z"], ["oui", "a b c"], max_n=1)
    assert steps.matches == (1,) and steps.totals == (4,) and steps.precisions == (0.25,)


def test_bleu_steps_smoothing_and_zero_scores():
    # no 4-gram matches while lower orders match: sacreBLEU's "exp" smoothing, 1 / (2 * total)
    steps = bleu_steps(["le chat est là ."], ["le chat est ici ."])
    assert steps.matches[3] == 0 and steps.precisions[3] == 1 / (2 * steps.totals[3])
    # nothing matches, or a hypothesis too short to have any 4-gram: the score is 0
    assert bleu_steps(["x y z w"], ["a b c d"]).score == 0.0
    assert bleu_steps(["le chat"], ["le chat"]).score == 0.0
    assert bleu_steps([""], ["le chat"]).brevity_penalty == 0.0


@pytest.mark.parametrize("call, error, match", [
    (lambda: bleu_steps(HYPS, REFS[:3]), ValueError, "references"),
    (lambda: bleu_steps([], []), ValueError, "hypotheses"),
    (lambda: bleu_steps("a hypothesis", ["a reference"]), TypeError, "hypotheses"),
    (lambda: bleu_steps(HYPS[:1], [[]]), ValueError, r"references\[0\]"),
    (lambda: bleu_steps(HYPS[:1], [[1]]), TypeError, r"references\[0\]"),
    (lambda: bleu_steps(HYPS, REFS, max_n=0), ValueError, "max_n"),
    (lambda: bleu_steps(HYPS, REFS, max_n=2.5), (TypeError, ValueError), "max_n"),
    (lambda: bleu_steps(HYPS, REFS, tokenize="words"), ValueError, "tokenize"),
])
def test_bleu_steps_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()
