"""BLEU: the book's sentence-level score, and sacreBLEU's corpus score for
reporting.

- :func:`bleu` is the simplified sentence BLEU that d2l's book uses to
  compare translations while teaching (equal to ``d2l.bleu``).
- :func:`corpus_bleu` is the standard corpus BLEU (0-100) computed by
  sacreBLEU, the number to report; it accepts one or several references
  per sentence.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import sacrebleu
from sacrebleu.metrics import BLEUScore

from ._checks import check_positive_int


def _ngrams(tokens: list[str], n: int) -> Counter:
    """How often each n-gram (a tuple of ``n`` tokens) occurs in
    ``tokens``."""
    return Counter(tuple(tokens[i:i + n])
                   for i in range(len(tokens) - n + 1))


def bleu(pred_seq: str, label_seq: str, k: int = 2) -> float:
    r"""Sentence BLEU of ``pred_seq`` against one ``label_seq``, as
    simplified in d2l's book.

    Tokens are ``str.split(' ')``.  With ``len_pred`` and ``len_label``
    tokens (Papineni et al., 2002, in the form of d2l's book),

    .. math::

        \mathrm{BLEU} = \exp\Big(\min\big(0,
                        1 - \tfrac{len_{label}}{len_{pred}}\big)\Big)
                        \prod_{n=1}^{\min(k,\,len_{pred})} p_n^{1/2^n},

    where :math:`p_n` is the clipped n-gram precision: the number of the
    prediction's n-grams that match the label's, each label n-gram matching
    at most as often as it occurs in the label, divided by the prediction's
    ``len_pred - n + 1`` n-grams.  The exponent :math:`1/2^n` weighs longer
    (harder) n-gram matches more.  The score lies in [0, 1] and is 1 only
    for a prediction equal to the label.

    Raises ``ValueError`` for an empty ``pred_seq`` or ``k < 1``.
    """
    if not isinstance(pred_seq, str) or not pred_seq:
        raise ValueError(f"pred_seq must be a non-empty string, got "
                         f"{pred_seq!r}")
    if not isinstance(label_seq, str):
        raise TypeError(f"label_seq must be a string, got "
                        f"{type(label_seq).__name__}")
    check_positive_int("k", k)
    pred, label = pred_seq.split(" "), label_seq.split(" ")
    score = math.exp(min(0, 1 - len(label) / len(pred)))
    for n in range(1, min(k, len(pred)) + 1):
        pred_counts, label_counts = _ngrams(pred, n), _ngrams(label, n)
        matches = sum(min(c, label_counts[g])
                      for g, c in pred_counts.items())
        score *= (matches / (len(pred) - n + 1)) ** (0.5 ** n)
    return score


def _reference_streams(hypotheses, references) -> list[list[str | None]]:
    """Check the corpus and turn per-sentence references into sacreBLEU's
    reference streams.

    sacreBLEU wants ``streams[j][i]`` = the j-th reference of sentence i,
    every stream as long as the corpus.  A sentence with fewer references
    is padded with ``None``, which sacreBLEU drops (an empty string ``''``
    would count as a real, empty reference).
    """
    if isinstance(hypotheses, str) or not isinstance(hypotheses, Sequence):
        raise TypeError("hypotheses must be a list of strings")
    if isinstance(references, str) or not isinstance(references, Sequence):
        raise TypeError("references must be a list of strings or of lists "
                        "of strings")
    if not hypotheses:
        raise ValueError("hypotheses must not be empty (an empty corpus has "
                         "no BLEU)")
    if len(references) != len(hypotheses):
        raise ValueError(f"references must give one entry per hypothesis: "
                         f"got {len(references)} for {len(hypotheses)} "
                         f"hypotheses")
    if not all(isinstance(h, str) for h in hypotheses):
        raise TypeError("hypotheses must be a list of strings")
    per_sentence = [[r] if isinstance(r, str) else list(r)
                    for r in references]
    for i, refs in enumerate(per_sentence):
        if not refs:
            raise ValueError(f"references[{i}] is empty: each hypothesis "
                             f"needs a reference")
        if not all(isinstance(r, str) for r in refs):
            raise TypeError(f"references[{i}] must be a string or a list "
                            f"of strings")
    num_streams = max(len(refs) for refs in per_sentence)
    return [[refs[j] if j < len(refs) else None for refs in per_sentence]
            for j in range(num_streams)]


def corpus_bleu_details(hypotheses: list[str],
                        references: list[list[str]] | list[str], *,
                        tokenize: str = "13a") -> BLEUScore:
    """Like :func:`corpus_bleu`, but return sacreBLEU's whole ``BLEUScore``.

    It holds the n-gram precisions, brevity penalty and lengths besides
    ``.score``.
    """
    streams = _reference_streams(hypotheses, references)
    return sacrebleu.corpus_bleu(list(hypotheses), streams,
                                 tokenize=tokenize)


def corpus_bleu(hypotheses: list[str],
                references: list[list[str]] | list[str], *,
                tokenize: str = "13a") -> float:
    """Corpus BLEU (0-100) of ``hypotheses`` by sacreBLEU, with its default
    settings.

    ``references`` holds, for each hypothesis, either one reference string
    or a list of reference strings; the number of references may differ
    from sentence to sentence (a hypothesis n-gram matches if it occurs in
    any of its sentence's references, and the brevity penalty uses the
    closest reference length).  Texts should be detokenized: sacreBLEU
    tokenizes them itself with ``tokenize`` (``"13a"``, the WMT standard,
    by default).

    Raises ``ValueError`` for an empty corpus, a length mismatch between
    ``hypotheses`` and ``references``, or a sentence without a reference.
    """
    return corpus_bleu_details(hypotheses, references,
                               tokenize=tokenize).score
