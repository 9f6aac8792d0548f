"""BLEU: the sentence score equals d2l's, the corpus score equals sacreBLEU's."""

import pytest
import sacrebleu
from hypothesis import given
from hypothesis import strategies as st
from sacrebleu.metrics import BLEUScore

from transformer_lib.bleu import bleu, corpus_bleu, corpus_bleu_details

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
