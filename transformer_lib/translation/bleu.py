"""BLEU: the book's sentence-level score, and sacreBLEU's corpus score for
reporting.

- :func:`bleu` is the simplified sentence BLEU that d2l's book uses to
  compare translations while teaching (equal to ``d2l.bleu``).
- :func:`corpus_bleu` is the standard corpus BLEU (0-100) computed by
  sacreBLEU, the number to report; it accepts one or several references
  per sentence.
- :func:`bleu_steps` computes the same corpus BLEU in readable steps (the
  clipped n-gram counts, the lengths, the brevity penalty), to show how
  the score is made.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import sacrebleu
from sacrebleu.metrics import BLEU, BLEUScore

from .._checks import check_positive_int


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
    (harder) n-gram matches more.  The score lies in [0, 1]; it is 1 for a
    prediction equal to the label, and for some others, since only n-grams
    up to ``k`` count: ``bleu("a c a b a", "a b a c a", k=2)`` is 1.

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


def _per_sentence_references(hypotheses,
                              references) -> list[list[str]]:
    """Check the corpus and return each sentence's references as a list
    (one reference given as a string becomes a one-element list)."""
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
    return per_sentence


def _reference_streams(hypotheses, references) -> list[list[str | None]]:
    """Check the corpus and turn per-sentence references into sacreBLEU's
    reference streams.

    sacreBLEU wants ``streams[j][i]`` = the j-th reference of sentence i,
    every stream as long as the corpus.  A sentence with fewer references
    is padded with ``None``, which sacreBLEU drops (an empty string ``''``
    would count as a real, empty reference).
    """
    per_sentence = _per_sentence_references(hypotheses, references)
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


def _geometric_mean(precisions) -> float:
    """(p_1 ... p_N)^(1/N), or 0 if some p_n is 0."""
    if not all(p > 0 for p in precisions):
        return 0.0
    return math.exp(sum(map(math.log, precisions)) / len(precisions))


@dataclass(frozen=True)
class BleuSteps:
    """The intermediate quantities of corpus BLEU (see :func:`bleu_steps`).

    The tuples have one entry per n-gram order n = 1, ..., ``max_n``.
    """

    matches: tuple[int, ...]       # clipped n-gram matches, corpus sum
    totals: tuple[int, ...]        # the hypotheses' n-grams, corpus sum
    precisions: tuple[float, ...]  # p_n in [0, 1]
    hyp_len: int                   # c: hypothesis tokens in the corpus
    ref_len: int                   # r: closest reference lengths, summed
    brevity_penalty: float         # BP = min(1, exp(1 - r / c))
    score: float                   # BLEU, 0-100

    def worked(self) -> str:
        """The formula with these numbers, one line per step."""
        lines = []
        for n, (m, t, p) in enumerate(
                zip(self.matches, self.totals, self.precisions), start=1):
            note = "   (no match: the stand-in)" if m == 0 and p > 0 else ""
            lines.append(f"p_{n} = {m:>2} / {t:>2} = {p:.4f}{note}")
        n_max = len(self.precisions)
        mean = _geometric_mean(self.precisions)
        product = " ".join(f"p_{n}" for n in range(1, n_max + 1))
        bp = self.brevity_penalty
        return "\n".join(lines + [
            f"c = {self.hyp_len} hypothesis tokens, "
            f"r = {self.ref_len} reference tokens",
            f"BP = min(1, exp(1 - r/c)) = {bp:.4f}",
            f"BLEU = 100 * BP * ({product})^(1/{n_max}) = "
            f"100 * {bp:.4f} * {mean:.4f} = {self.score:.4f}"])


def bleu_steps(hypotheses: list[str],
               references: list[list[str]] | list[str], max_n: int = 4,
               *, tokenize: str = "13a") -> BleuSteps:
    r"""Corpus BLEU (Papineni et al., 2002) in readable steps; its
    ``score`` is sacreBLEU's, and :func:`corpus_bleu`'s (for ``max_n=4``).

    ``hypotheses`` holds one string per sentence; ``references`` one
    reference string or a list of reference strings for each of them.
    Both sides are tokenized by sacreBLEU's ``tokenize`` tokenizer
    (``"13a"``, as in :func:`corpus_bleu`).  For each order
    n = 1, ..., ``max_n``:

    - ``totals[n-1]``: the number of n-grams in all hypotheses;
    - ``matches[n-1]``: how many of them match, *clipped*: an n-gram
      counts at most as often as it occurs in one reference of its
      sentence (the most generous reference for that n-gram);
    - ``precisions[n-1]`` = :math:`p_n` = matches / totals.  Both counts
      are summed over the corpus *before* dividing.

    With :math:`c` hypothesis tokens and :math:`r` reference tokens (for
    each sentence the reference length closest to the hypothesis' length,
    the shorter one on a tie), the brevity penalty is
    :math:`\mathrm{BP} = \min(1, e^{1 - r/c})` (0 when :math:`c = 0`) and,
    with :math:`n_\max` = ``max_n``,

    .. math::

        \mathrm{BLEU} = 100 \cdot \mathrm{BP} \cdot
            \exp\Big(\frac{1}{n_\max} \sum_{n=1}^{n_\max} \log p_n\Big).

    As sacreBLEU by default (its ``smooth_method="exp"``), an order with
    no match while other orders match gets :math:`p_n = 1/(2^k \cdot
    \mathrm{totals})` for its k-th such order instead of 0; with no match
    at all, or no n-grams of some order, the score is 0.

    Raises ``TypeError``/``ValueError`` naming the argument for a corpus
    that :func:`corpus_bleu` refuses, ``max_n < 1`` or an unknown
    ``tokenize``.
    """
    per_sentence = _per_sentence_references(hypotheses, references)
    check_positive_int("max_n", max_n)
    if tokenize not in BLEU.TOKENIZERS:
        raise ValueError(f"tokenize must be one of {sorted(BLEU.TOKENIZERS)}"
                         f", got {tokenize!r}")
    tokenizer = BLEU(tokenize=tokenize).tokenizer

    def tokens(text: str) -> list[str]:
        return tokenizer(text.rstrip()).split()

    matches, totals = [0] * max_n, [0] * max_n
    hyp_len = ref_len = 0
    for hypothesis, refs in zip(hypotheses, per_sentence):
        hyp = tokens(hypothesis)
        ref_tokens = [tokens(ref) for ref in refs]
        hyp_len += len(hyp)
        # r: the reference length closest to c's, the shorter on a tie
        ref_len += min((abs(len(ref) - len(hyp)), len(ref))
                       for ref in ref_tokens)[1]
        for n in range(1, max_n + 1):
            most = Counter()          # each n-gram's largest count in a ref
            for ref in ref_tokens:
                most |= _ngrams(ref, n)
            hyp_counts = _ngrams(hyp, n)
            matches[n - 1] += sum(min(count, most[gram])
                                  for gram, count in hyp_counts.items())
            totals[n - 1] += sum(hyp_counts.values())

    precisions, zeros = [0.0] * max_n, 0
    if any(matches):
        for n, (m, t) in enumerate(zip(matches, totals)):
            if t == 0:
                break                 # no n-grams of this order: BLEU 0
            if m == 0:
                zeros += 1
                precisions[n] = 1 / (2 ** zeros * t)
            else:
                precisions[n] = m / t
    if hyp_len < ref_len:
        bp = math.exp(1 - ref_len / hyp_len) if hyp_len > 0 else 0.0
    else:
        bp = 1.0
    score = 100 * bp * _geometric_mean(precisions)
    return BleuSteps(tuple(matches), tuple(totals), tuple(precisions),
                     hyp_len, ref_len, bp, score)


def sentence_counts(hypotheses: list[str], references) -> np.ndarray:
    """``(sentences, 2 * 4 + 2)``: each sentence's clipped n-gram matches
    (n = 1..4), n-gram totals, hypothesis length c and reference length
    r, as :func:`bleu_steps` counts them.  Summed over any set of
    sentences, they give that set's corpus BLEU (:func:`bleu_from_counts`)
    without tokenizing again."""
    per_sentence = _per_sentence_references(hypotheses, references)
    rows = []
    for hypothesis, refs in zip(hypotheses, per_sentence):
        s = bleu_steps([hypothesis], [refs])
        rows.append([*s.matches, *s.totals, s.hyp_len, s.ref_len])
    return np.array(rows, dtype=float).reshape(len(rows), 10)


def bleu_from_counts(sums) -> float:
    """Corpus BLEU from summed :func:`sentence_counts` (matches, totals,
    c, r): 100 * BP * the geometric mean of the four precisions.  Without
    sacreBLEU's smoothing: an order with no match gives 0 (as does a set
    with no hypothesis token), so use it on sets large enough to match at
    every order."""
    m, t, c, r = sums[:4], sums[4:8], sums[8], sums[9]
    if not (m > 0).all():        # some order has no match, or no n-grams
        return 0.0
    brevity_penalty = min(1.0, math.exp(1 - r / c))
    return 100 * brevity_penalty * math.exp(np.log(m / t).mean())


def bootstrap_bleu(hypotheses: list[str], references, *,
                   resamples: int = 1000, level: float = 95,
                   seed: int = 0, baseline: list[str] | None = None):
    """The middle ``level`` % of corpus BLEU over ``resamples`` bootstrap
    resamples of the sentences: draw as many sentences as there are, with
    replacement, and score the draw from its summed counts.

    With ``baseline`` (other hypotheses of the same sentences), each draw
    scores both and the range is that of BLEU(hypotheses) -
    BLEU(baseline): a paired bootstrap.  Returns ``(low, high)``."""
    check_positive_int("resamples", resamples)
    if not 1 < level < 100:    # 0.95 would be the middle 0.95 %
        raise ValueError(f"level must be a percentage between 1 and 100 "
                         f"(95 for the middle 95 %), got {level!r}")
    counts = sentence_counts(hypotheses, references)
    other = None
    if baseline is not None:
        if len(baseline) != len(hypotheses):
            raise ValueError(f"baseline must have one hypothesis per "
                             f"sentence ({len(hypotheses)}), got "
                             f"{len(baseline)}")
        other = sentence_counts(baseline, references)
    rng = np.random.default_rng(seed)
    scores = []
    for _ in range(resamples):
        pick = rng.integers(0, len(counts), len(counts))
        score = bleu_from_counts(counts[pick].sum(0))
        if other is not None:
            score -= bleu_from_counts(other[pick].sum(0))
        scores.append(score)
    low, high = np.percentile(scores, [(100 - level) / 2,
                                       (100 + level) / 2])
    return float(low), float(high)
