"""The checkers of chapter 8's exercises: BLEU's clipped n-gram
precision, corpus BLEU, and byte-pair encoding's merge loop.

What the reader writes:

    clipped_precision(hypothesis, references, n) -> (matches, total)
        hypothesis: a list of tokens; references: a list of token lists.
        total: the hypothesis' n-grams (n consecutive tokens); matches:
        how many of them match, each n-gram counted at most as often as
        it occurs in the one reference that has it most often.

    corpus_bleu(hypotheses, references) -> float
        hypotheses: one string per sentence; references: for each, a list
        of reference strings.  sacreBLEU's corpus BLEU (0-100) with its
        defaults: 13a tokens, n = 1 to 4, the closest reference length,
        its stand-in p_n for an order without a match.

    learn_merges(words, num_merges) -> [(left, right), ...]
        words: {word: how often it occurs}.  Byte-pair encoding's loop
        from single characters: count the adjacent pairs of symbols
        (weighted by the words' counts), merge the most frequent pair
        everywhere (left to right: "a a a" -> "aa a"), count again;
        the merges in order, as Hugging Face's tokenizers learns them.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from functools import lru_cache
from numbers import Integral, Real

from ...translation.bleu import corpus_bleu as library_corpus_bleu
from .core import Case, Checker, Mismatch

# --- clipped_precision ----------------------------------------------------


def _as_counts(got, what: str) -> tuple[int, int]:
    """The reader's (matches, total), checked to be two whole numbers."""
    if (not isinstance(got, (tuple, list)) or len(got) != 2
            or not all(isinstance(x, Integral) for x in got)):
        raise Mismatch(f"{what} should return (matches, total), two "
                       f"whole numbers, got {got!r}")
    return int(got[0]), int(got[1])


def _precision_case(hypothesis: str, references: list[str], ns, want):
    """A case: ``want[i]`` is (matches, total) for ``ns[i]``; sentences
    are given as text, split on spaces."""
    def run(clipped_precision):
        for n, (matches, total) in zip(ns, want):
            refs = [ref.split() for ref in references]
            got = clipped_precision(hypothesis.split(), refs, n)
            got = _as_counts(got, f"for n = {n}, it")
            if got != (matches, total):
                raise Mismatch(f"for n = {n}, expected (matches, total) "
                               f"= ({matches}, {total}), got {got}")
    return run


CLIPPED_PRECISION_CASES = [
    Case("'le le le le' against 'le chat' and 'le tapis', n = 1: a "
         "repeated word matches at most as often as one reference "
         "has it",
         _precision_case("le le le le", ["le chat", "le tapis"], [1],
                         [(1, 4)])),
    Case("'the cat sat on the mat' against 'the cat is on the mat', "
         "n = 1, 2, 3 and 4 (the n-grams overlap)",
         _precision_case("the cat sat on the mat",
                         ["the cat is on the mat"], [1, 2, 3, 4],
                         [(5, 6), (3, 5), (1, 4), (0, 3)])),
    Case("'the cat', shorter than n = 4: no n-grams at all",
         _precision_case("the cat", ["the cat sat on the mat"], [4],
                         [(0, 0)])),
    Case("'le chat noir dort' against 'le chat dort' and 'un chat "
         "noir', n = 1: each word may match in a different reference",
         _precision_case("le chat noir dort",
                         ["le chat dort", "un chat noir"], [1],
                         [(4, 4)])),
    Case("'hello there big world' against 'bonjour le monde', n = 1 "
         "and 2: no match",
         _precision_case("hello there big world", ["bonjour le monde"],
                         [1, 2], [(0, 4), (0, 3)])),
]
# clipped_precision(hypothesis, references, n) -> (matches, total)
#   hypothesis: list[str]; references: list[list[str]]; n >= 1.
check_clipped_precision = Checker(8, "clipped_precision",
                                  CLIPPED_PRECISION_CASES)

# --- corpus_bleu ----------------------------------------------------------


def _bleu_case(hypotheses: list[str], references: list[list[str]]):
    def run(corpus_bleu):
        # sacreBLEU's score (the library's corpus_bleu hands it over)
        want = library_corpus_bleu(hypotheses, references)
        got = corpus_bleu(list(hypotheses),
                          [list(refs) for refs in references])
        if isinstance(got, bool) or not isinstance(got, Real):
            raise Mismatch(f"corpus_bleu should return a number, got "
                           f"{type(got).__name__}")
        got = float(got)
        if not math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-6):
            hint = ""
            if want and math.isclose(100 * got, want, rel_tol=1e-6):
                hint = " (BLEU is a percentage: 0 to 100)"
            raise Mismatch(f"expected BLEU {want:.4f} (sacreBLEU's), "
                           f"got {got:.4f}{hint}")
    return run


CORPUS_BLEU_CASES = [
    Case("two sentences: the matches and n-grams summed over the corpus "
         "before dividing, then the geometric mean",
         _bleu_case(["the cat sat on the mat",
                     "a dog runs in the big park"],
                    [["the cat is on the mat"],
                     ["a dog runs in the park today"]])),
    Case("a hypothesis shorter than its closest reference (7 tokens, "
         "not the shortest, 4): the brevity penalty",
         _bleu_case(["the cat is on the mat"],
                    [["the cat is on the red mat", "the cat is here"]])),
    Case("a hypothesis longer than its reference: no penalty (BP = 1)",
         _bleu_case(["the cat is on the mat today"],
                    [["the cat is on the mat"]])),
    Case("two references equally close in length (4 and 6 tokens for a "
         "hypothesis of 5): r takes the shorter",
         _bleu_case(["the cat is on mats"],
                    [["the cat is here", "the cat is on the mat"]])),
    Case("no 3-gram or 4-gram matches: sacreBLEU's stand-ins "
         "1 / (2 * 3-grams) and 1 / (4 * 4-grams)",
         _bleu_case(["a cat sat on my mat"],
                    [["the cat sat under my mat"]])),
    Case("no match at all: BLEU 0",
         _bleu_case(["hello there big world"], [["bonjour le monde"]])),
    Case("hypotheses of 3 tokens, so no 4-gram at all: BLEU 0",
         _bleu_case(["the cat sat", "on the mat"],
                    [["the cat sat"], ["on the mat"]])),
    Case("13a tokens, as sacreBLEU's: 'mat.' is two tokens, 'mat' "
         "and '.'",
         _bleu_case(["The cat sat on the mat."],
                    [["The cat sat on the mat today."]])),
]
# corpus_bleu(hypotheses, references) -> float, 0-100
#   hypotheses: list[str]; references: list[list[str]], one list per
#   hypothesis.
check_corpus_bleu = Checker(8, "corpus_bleu", CORPUS_BLEU_CASES)

# --- learn_merges ---------------------------------------------------------


@lru_cache(maxsize=None)
def _tokenizers_merges(words: tuple[tuple[str, int], ...]):
    """Hugging Face tokenizers' BPE merges of ``words``, each word one
    pre-token (no pre-tokenizer, no normaliser, no special token), all
    of them (until no pair is left)."""
    import tokenizers as tk
    tokenizer = tk.Tokenizer(tk.models.BPE())
    trainer = tk.trainers.BpeTrainer(vocab_size=100_000, min_frequency=0,
                                     special_tokens=[], show_progress=False)
    tokenizer.train_from_iterator(
        (word for word, count in words for _ in range(count)),
        trainer=trainer)
    return [tuple(m) for m in json.loads(tokenizer.to_str())["model"]
            ["merges"]]


def _merged(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    out, i = [], 0
    while i < len(symbols):
        if tuple(symbols[i:i + 2]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def _pair_counts(words: dict[str, int], merges) -> Counter:
    """The adjacent pairs' counts (weighted) once ``merges`` are made."""
    counts = Counter()
    for word, count in words.items():
        symbols = list(word)
        for pair in merges:
            symbols = _merged(symbols, pair)
        for pair in zip(symbols, symbols[1:]):
            counts[pair] += count
    return counts


def _times(count: int) -> str:
    return "once" if count == 1 else f"{count} times"


def _show(pair) -> str:
    return " + ".join(repr(s) for s in pair)


def _merges_case(words: dict[str, int], num_merges: int):
    """A case: the reader's merges must be tokenizers' first
    ``num_merges`` (the words are chosen so that no step has a tie)."""
    def run(learn_merges):
        want = _tokenizers_merges(tuple(words.items()))[:num_merges]
        got = learn_merges(dict(words), num_merges)
        if not isinstance(got, (list, tuple)) or not all(
                isinstance(p, (list, tuple)) and len(p) == 2
                and all(isinstance(s, str) for s in p) for p in got):
            raise Mismatch(f"learn_merges should return a list of "
                           f"(left, right) pairs of strings, got {got!r}")
        for step, (right, mine) in enumerate(zip(want, got)):
            if tuple(mine) == right:
                continue
            counts = _pair_counts(words, want[:step])
            seen = (_times(counts[tuple(mine)]) if tuple(mine) in counts
                    else "not two adjacent symbols after the merges "
                         "before it")
            raise Mismatch(
                f"merge {step + 1} of {num_merges} should be "
                f"{_show(right)} ({_times(counts[right])}, counting each "
                f"word as often as it occurs), got {_show(mine)} "
                f"({seen})")
        if len(got) != num_merges:
            raise Mismatch(f"expected {num_merges} merges, got {len(got)}")
    return run


LEARN_MERGES_CASES = [
    Case("'so' seen 8 times, 'hug' 4 and 'pug' 2, one merge: a word's "
         "pairs count as often as the word",
         _merges_case({"hug": 4, "pug": 2, "so": 8}, 1)),
    Case("'a' seen 5 times and 'is' 3, one merge: pairs lie within a "
         "word, never across two",
         _merges_case({"a": 5, "is": 3}, 1)),
    Case("'aaaa' seen twice and 'bc' 5 times, one merge: a + a occurs "
         "3 times in 'aaaa'",
         _merges_case({"aaaa": 2, "bc": 5}, 1)),
    Case("'banana', 'ana' and 'band', 4 merges: each pair merged "
         "everywhere, the pairs counted again after each merge",
         _merges_case({"banana": 6, "ana": 3, "band": 5}, 4)),
    Case("'aaa', 2 merges: merged from the left, 'aa' + 'a' "
         "(not 'a' + 'aa')",
         _merges_case({"aaa": 1}, 2)),
]
# learn_merges(words, num_merges) -> list[tuple[str, str]]
#   words: dict[str, int], each word and how often it occurs.
check_bpe_merges = Checker(8, "learn_merges", LEARN_MERGES_CASES)
