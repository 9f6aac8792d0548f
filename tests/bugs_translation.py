"""Planted bugs for chapter 8's checkers: BLEU's clipped precision,
corpus BLEU, and byte-pair encoding's merge loop."""

from __future__ import annotations

import json
import math
from collections import Counter

import sacrebleu
from planted_bugs import PlantedBug

from transformer_lib.instruments.exercises.translation import (
    check_bpe_merges, check_clipped_precision, check_corpus_bleu)
from transformer_lib.translation.bleu import bleu_steps
from transformer_lib.translation.bleu import corpus_bleu as library_bleu

tokens_13a = sacrebleu.BLEU(tokenize="13a").tokenizer

# --- clipped_precision ----------------------------------------------------


def clipped_precision(hypothesis, references, n):
    """A right answer, written as a reader would."""
    def ngrams(tokens):
        return Counter(tuple(tokens[i:i + n])
                       for i in range(len(tokens) - n + 1))
    most = Counter()
    for ref in references:
        most |= ngrams(ref)        # each n-gram's largest count in a ref
    counts = ngrams(hypothesis)
    matches = sum(min(c, most[gram]) for gram, c in counts.items())
    return matches, sum(counts.values())


def library_clipped_precision(hypothesis, references, n):
    """The library's bleu_steps on one sentence (plain words: its 13a
    tokens are the words)."""
    steps = bleu_steps([" ".join(hypothesis)],
                       [[" ".join(ref) for ref in references]], max_n=n)
    return steps.matches[n - 1], steps.totals[n - 1]


def sacrebleu_clipped_precision(hypothesis, references, n):
    """sacreBLEU's counts (n <= 4) on one sentence."""
    score = sacrebleu.corpus_bleu([" ".join(hypothesis)],
                                  [[" ".join(ref)] for ref in references])
    return score.counts[n - 1], score.totals[n - 1]


def no_clipping(hypothesis, references, n):
    def ngrams(tokens):
        return Counter(tuple(tokens[i:i + n])
                       for i in range(len(tokens) - n + 1))
    most = Counter()
    for ref in references:
        most |= ngrams(ref)
    counts = ngrams(hypothesis)
    # BUG: every n-gram found in a reference matches, however often
    matches = sum(c for gram, c in counts.items() if gram in most)
    return matches, sum(counts.values())


def clip_by_sum(hypothesis, references, n):
    def ngrams(tokens):
        return Counter(tuple(tokens[i:i + n])
                       for i in range(len(tokens) - n + 1))
    most = Counter()
    for ref in references:
        most += ngrams(ref)        # BUG: the sum over the references
    counts = ngrams(hypothesis)
    matches = sum(min(c, most[gram]) for gram, c in counts.items())
    return matches, sum(counts.values())


def last_ngram_missed(hypothesis, references, n):
    def ngrams(tokens):
        return Counter(tuple(tokens[i:i + n])
                       for i in range(len(tokens) - n))  # BUG: no + 1
    most = Counter()
    for ref in references:
        most |= ngrams(ref)
    counts = ngrams(hypothesis)
    matches = sum(min(c, most[gram]) for gram, c in counts.items())
    return matches, sum(counts.values())


def ngrams_as_chunks(hypothesis, references, n):
    def ngrams(tokens):
        # BUG: n-grams side by side (a step of n), not overlapping
        return Counter(tuple(tokens[i:i + n])
                       for i in range(0, len(tokens) - n + 1, n))
    most = Counter()
    for ref in references:
        most |= ngrams(ref)
    counts = ngrams(hypothesis)
    matches = sum(min(c, most[gram]) for gram, c in counts.items())
    return matches, sum(counts.values())


def total_by_formula(hypothesis, references, n):
    def ngrams(tokens):
        return Counter(tuple(tokens[i:i + n])
                       for i in range(len(tokens) - n + 1))
    most = Counter()
    for ref in references:
        most |= ngrams(ref)
    counts = ngrams(hypothesis)
    matches = sum(min(c, most[gram]) for gram, c in counts.items())
    return matches, len(hypothesis) - n + 1   # BUG: < 0 when too short


def best_single_reference(hypothesis, references, n):
    def ngrams(tokens):
        return Counter(tuple(tokens[i:i + n])
                       for i in range(len(tokens) - n + 1))
    counts = ngrams(hypothesis)
    # BUG: the reference with the most matches, not each n-gram's best
    matches = max(sum(min(c, ngrams(ref)[gram])
                      for gram, c in counts.items())
                  for ref in references)
    return matches, sum(counts.values())


def first_reference_only(hypothesis, references, n):
    def ngrams(tokens):
        return Counter(tuple(tokens[i:i + n])
                       for i in range(len(tokens) - n + 1))
    most = ngrams(references[0])   # BUG: the other references ignored
    counts = ngrams(hypothesis)
    matches = sum(min(c, most[gram]) for gram, c in counts.items())
    return matches, sum(counts.values())


# --- corpus_bleu ----------------------------------------------------------

def corpus_bleu(hypotheses, references):
    """A right answer, written as a reader would."""
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = tokens_13a(hypothesis).split()
        ref_tokens = [tokens_13a(ref).split() for ref in refs]
        c += len(hyp)   # r: the closest reference length, shorter on a tie
        r += min((abs(len(ref) - len(hyp)), len(ref))
                 for ref in ref_tokens)[1]
        for n in range(1, 5):
            m, t = clipped_precision(hyp, ref_tokens, n)
            matches[n - 1] += m
            totals[n - 1] += t
    if not any(matches) or not all(totals):
        return 0.0
    log_p, stand_ins = 0.0, 0
    for m, t in zip(matches, totals):
        if m == 0:              # sacreBLEU's stand-in: 1 / (2^k t)
            stand_ins += 1
            m = 1 / 2 ** stand_ins
        log_p += math.log(m / t) / 4
    return 100 * min(1.0, math.exp(1 - r / c)) * math.exp(log_p)


def sacrebleu_corpus_bleu(hypotheses, references):
    """sacreBLEU itself, with reference streams."""
    most = max(map(len, references))
    streams = [[refs[j] if j < len(refs) else None for refs in references]
               for j in range(most)]
    return sacrebleu.corpus_bleu(hypotheses, streams).score


def steps_corpus_bleu(hypotheses, references):
    return bleu_steps(hypotheses, references).score


def average_of_sentences(hypotheses, references):
    # BUG: the mean of the sentences' BLEU, not the corpus' counts
    return sum(corpus_bleu([h], [refs])
               for h, refs in zip(hypotheses, references)) / len(hypotheses)


def arithmetic_mean(hypotheses, references):
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = tokens_13a(hypothesis).split()
        ref_tokens = [tokens_13a(ref).split() for ref in refs]
        c += len(hyp)
        r += min((abs(len(ref) - len(hyp)), len(ref))
                 for ref in ref_tokens)[1]
        for n in range(1, 5):
            m, t = clipped_precision(hyp, ref_tokens, n)
            matches[n - 1] += m
            totals[n - 1] += t
    if not any(matches) or not all(totals):
        return 0.0
    mean_p, stand_ins = 0.0, 0
    for m, t in zip(matches, totals):
        if m == 0:
            stand_ins += 1
            m = 1 / 2 ** stand_ins
        mean_p += (m / t) / 4   # BUG: the arithmetic mean
    return 100 * min(1.0, math.exp(1 - r / c)) * mean_p


def zero_to_one(hypotheses, references):
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = tokens_13a(hypothesis).split()
        ref_tokens = [tokens_13a(ref).split() for ref in refs]
        c += len(hyp)
        r += min((abs(len(ref) - len(hyp)), len(ref))
                 for ref in ref_tokens)[1]
        for n in range(1, 5):
            m, t = clipped_precision(hyp, ref_tokens, n)
            matches[n - 1] += m
            totals[n - 1] += t
    if not any(matches) or not all(totals):
        return 0.0
    log_p, stand_ins = 0.0, 0
    for m, t in zip(matches, totals):
        if m == 0:
            stand_ins += 1
            m = 1 / 2 ** stand_ins
        log_p += math.log(m / t) / 4
    # BUG: a fraction, not a percentage
    return min(1.0, math.exp(1 - r / c)) * math.exp(log_p)


def longer_reference_on_a_tie(hypotheses, references):
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = tokens_13a(hypothesis).split()
        ref_tokens = [tokens_13a(ref).split() for ref in refs]
        c += len(hyp)
        # BUG: the closest length, but the longer one on a tie
        r += min((abs(len(ref) - len(hyp)), -len(ref))
                 for ref in ref_tokens)[1] * -1
        for n in range(1, 5):
            m, t = clipped_precision(hyp, ref_tokens, n)
            matches[n - 1] += m
            totals[n - 1] += t
    if not any(matches) or not all(totals):
        return 0.0
    log_p, stand_ins = 0.0, 0
    for m, t in zip(matches, totals):
        if m == 0:
            stand_ins += 1
            m = 1 / 2 ** stand_ins
        log_p += math.log(m / t) / 4
    return 100 * min(1.0, math.exp(1 - r / c)) * math.exp(log_p)


def shortest_reference(hypotheses, references):
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = tokens_13a(hypothesis).split()
        ref_tokens = [tokens_13a(ref).split() for ref in refs]
        c += len(hyp)
        r += min(len(ref) for ref in ref_tokens)   # BUG: not the closest
        for n in range(1, 5):
            m, t = clipped_precision(hyp, ref_tokens, n)
            matches[n - 1] += m
            totals[n - 1] += t
    if not any(matches) or not all(totals):
        return 0.0
    log_p, stand_ins = 0.0, 0
    for m, t in zip(matches, totals):
        if m == 0:
            stand_ins += 1
            m = 1 / 2 ** stand_ins
        log_p += math.log(m / t) / 4
    return 100 * min(1.0, math.exp(1 - r / c)) * math.exp(log_p)


def no_brevity_penalty(hypotheses, references):
    matches, totals = [0] * 4, [0] * 4
    for hypothesis, refs in zip(hypotheses, references):
        hyp = tokens_13a(hypothesis).split()
        ref_tokens = [tokens_13a(ref).split() for ref in refs]
        for n in range(1, 5):
            m, t = clipped_precision(hyp, ref_tokens, n)
            matches[n - 1] += m
            totals[n - 1] += t
    if not any(matches) or not all(totals):
        return 0.0
    log_p, stand_ins = 0.0, 0
    for m, t in zip(matches, totals):
        if m == 0:
            stand_ins += 1
            m = 1 / 2 ** stand_ins
        log_p += math.log(m / t) / 4
    return 100 * math.exp(log_p)   # BUG: no brevity penalty


def penalty_above_1(hypotheses, references):
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = tokens_13a(hypothesis).split()
        ref_tokens = [tokens_13a(ref).split() for ref in refs]
        c += len(hyp)
        r += min((abs(len(ref) - len(hyp)), len(ref))
                 for ref in ref_tokens)[1]
        for n in range(1, 5):
            m, t = clipped_precision(hyp, ref_tokens, n)
            matches[n - 1] += m
            totals[n - 1] += t
    if not any(matches) or not all(totals):
        return 0.0
    log_p, stand_ins = 0.0, 0
    for m, t in zip(matches, totals):
        if m == 0:
            stand_ins += 1
            m = 1 / 2 ** stand_ins
        log_p += math.log(m / t) / 4
    return 100 * math.exp(1 - r / c) * math.exp(log_p)   # BUG: no min(1, .)


def no_stand_in(hypotheses, references):
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = tokens_13a(hypothesis).split()
        ref_tokens = [tokens_13a(ref).split() for ref in refs]
        c += len(hyp)
        r += min((abs(len(ref) - len(hyp)), len(ref))
                 for ref in ref_tokens)[1]
        for n in range(1, 5):
            m, t = clipped_precision(hyp, ref_tokens, n)
            matches[n - 1] += m
            totals[n - 1] += t
    if not all(matches):        # BUG: 0 as soon as one order has no match
        return 0.0
    log_p = sum(math.log(m / t) for m, t in zip(matches, totals)) / 4
    return 100 * min(1.0, math.exp(1 - r / c)) * math.exp(log_p)


def same_stand_in(hypotheses, references):
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = tokens_13a(hypothesis).split()
        ref_tokens = [tokens_13a(ref).split() for ref in refs]
        c += len(hyp)
        r += min((abs(len(ref) - len(hyp)), len(ref))
                 for ref in ref_tokens)[1]
        for n in range(1, 5):
            m, t = clipped_precision(hyp, ref_tokens, n)
            matches[n - 1] += m
            totals[n - 1] += t
    if not any(matches) or not all(totals):
        return 0.0
    log_p = 0.0
    for m, t in zip(matches, totals):
        if m == 0:
            m = 1 / 2             # BUG: 1 / (2 t) for every such order
        log_p += math.log(m / t) / 4
    return 100 * min(1.0, math.exp(1 - r / c)) * math.exp(log_p)


def stand_in_without_match(hypotheses, references):
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = tokens_13a(hypothesis).split()
        ref_tokens = [tokens_13a(ref).split() for ref in refs]
        c += len(hyp)
        r += min((abs(len(ref) - len(hyp)), len(ref))
                 for ref in ref_tokens)[1]
        for n in range(1, 5):
            m, t = clipped_precision(hyp, ref_tokens, n)
            matches[n - 1] += m
            totals[n - 1] += t
    if not all(totals):        # BUG: stand-ins even when nothing matches
        return 0.0
    log_p, stand_ins = 0.0, 0
    for m, t in zip(matches, totals):
        if m == 0:
            stand_ins += 1
            m = 1 / 2 ** stand_ins
        log_p += math.log(m / t) / 4
    return 100 * min(1.0, math.exp(1 - r / c)) * math.exp(log_p)


def stand_in_without_ngrams(hypotheses, references):
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = tokens_13a(hypothesis).split()
        ref_tokens = [tokens_13a(ref).split() for ref in refs]
        c += len(hyp)
        r += min((abs(len(ref) - len(hyp)), len(ref))
                 for ref in ref_tokens)[1]
        for n in range(1, 5):
            m, t = clipped_precision(hyp, ref_tokens, n)
            matches[n - 1] += m
            totals[n - 1] += t
    if not any(matches):        # BUG: an order with no n-gram not caught
        return 0.0
    log_p, stand_ins = 0.0, 0
    for m, t in zip(matches, totals):
        if m == 0:
            stand_ins += 1
            m = 1 / 2 ** stand_ins
        log_p += math.log(m / t) / 4
    return 100 * min(1.0, math.exp(1 - r / c)) * math.exp(log_p)


def split_on_spaces(hypotheses, references):
    matches, totals, c, r = [0] * 4, [0] * 4, 0, 0
    for hypothesis, refs in zip(hypotheses, references):
        hyp = hypothesis.split()   # BUG: not sacreBLEU's 13a tokens
        ref_tokens = [ref.split() for ref in refs]
        c += len(hyp)
        r += min((abs(len(ref) - len(hyp)), len(ref))
                 for ref in ref_tokens)[1]
        for n in range(1, 5):
            m, t = clipped_precision(hyp, ref_tokens, n)
            matches[n - 1] += m
            totals[n - 1] += t
    if not any(matches) or not all(totals):
        return 0.0
    log_p, stand_ins = 0.0, 0
    for m, t in zip(matches, totals):
        if m == 0:
            stand_ins += 1
            m = 1 / 2 ** stand_ins
        log_p += math.log(m / t) / 4
    return 100 * min(1.0, math.exp(1 - r / c)) * math.exp(log_p)


# --- learn_merges ---------------------------------------------------------

def learn_merges(words, num_merges):
    """A right answer, written as a reader would."""
    splits = {word: list(word) for word in words}
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for word, count in words.items():
            symbols = splits[word]
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += count
        best = max(pairs, key=pairs.get)
        merges.append(best)
        for word, symbols in splits.items():
            merged, i = [], 0
            while i < len(symbols):
                if tuple(symbols[i:i + 2]) == best:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            splits[word] = merged
    return merges


def tokenizers_merges(words, num_merges):
    """Hugging Face tokenizers' BPE trainer, each word one pre-token."""
    import tokenizers as tk
    tokenizer = tk.Tokenizer(tk.models.BPE())
    trainer = tk.trainers.BpeTrainer(vocab_size=len(set("".join(words)))
                                     + num_merges, special_tokens=[],
                                     show_progress=False)
    tokenizer.train_from_iterator(
        [word for word, count in words.items() for _ in range(count)],
        trainer=trainer)
    merges = json.loads(tokenizer.to_str())["model"]["merges"]
    return [tuple(m) for m in merges]


def unweighted_pairs(words, num_merges):
    splits = {word: list(word) for word in words}
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for word in words:
            symbols = splits[word]
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += 1       # BUG: not weighted by the count
        best = max(pairs, key=pairs.get)
        merges.append(best)
        for word, symbols in splits.items():
            merged, i = [], 0
            while i < len(symbols):
                if tuple(symbols[i:i + 2]) == best:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            splits[word] = merged
    return merges


def one_string(words, num_merges):
    # BUG: the words joined into one sequence: pairs across two words
    symbols = [ch for word, count in words.items() for _ in range(count)
               for ch in word]
    merges = []
    for _ in range(num_merges):
        pairs = Counter(zip(symbols, symbols[1:]))
        best = max(pairs, key=pairs.get)
        merges.append(best)
        merged, i = [], 0
        while i < len(symbols):
            if tuple(symbols[i:i + 2]) == best:
                merged.append(symbols[i] + symbols[i + 1])
                i += 2
            else:
                merged.append(symbols[i])
                i += 1
        symbols = merged
    return merges


def pair_once_per_word(words, num_merges):
    splits = {word: list(word) for word in words}
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for word, count in words.items():
            symbols = splits[word]
            # BUG: a set: a pair twice in a word counts once
            for pair in set(zip(symbols, symbols[1:])):
                pairs[pair] += count
        best = max(pairs, key=pairs.get)
        merges.append(best)
        for word, symbols in splits.items():
            merged, i = [], 0
            while i < len(symbols):
                if tuple(symbols[i:i + 2]) == best:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            splits[word] = merged
    return merges


def first_occurrence_only(words, num_merges):
    splits = {word: list(word) for word in words}
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for word, count in words.items():
            symbols = splits[word]
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += count
        best = max(pairs, key=pairs.get)
        merges.append(best)
        for symbols in splits.values():
            for i in range(len(symbols) - 1):
                if (symbols[i], symbols[i + 1]) == best:
                    symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
                    break          # BUG: only the first occurrence
    return merges


def counted_once(words, num_merges):
    splits = {word: list(word) for word in words}
    pairs = Counter()              # BUG: counted once, before the loop
    for word, count in words.items():
        symbols = splits[word]
        for pair in zip(symbols, symbols[1:]):
            pairs[pair] += count
    merges = []
    for _ in range(num_merges):
        best = max(pairs, key=pairs.get)
        merges.append(best)
        del pairs[best]
        for word, symbols in splits.items():
            merged, i = [], 0
            while i < len(symbols):
                if tuple(symbols[i:i + 2]) == best:
                    merged.append(symbols[i] + symbols[i + 1])
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            splits[word] = merged
    return merges


def string_replace(words, num_merges):
    splits = {word: " ".join(word) for word in words}   # "b a n a n a"
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for word, count in words.items():
            symbols = splits[word].split()
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += count
        best = max(pairs, key=pairs.get)
        merges.append(best)
        for word, text in splits.items():
            # BUG: "n a" also matches inside "an a": no symbol boundaries
            splits[word] = text.replace(" ".join(best), "".join(best))
    return merges


def merged_from_the_right(words, num_merges):
    splits = {word: list(word) for word in words}
    merges = []
    for _ in range(num_merges):
        pairs = Counter()
        for word, count in words.items():
            symbols = splits[word]
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += count
        best = max(pairs, key=pairs.get)
        merges.append(best)
        for symbols in splits.values():
            # BUG: from the right ("a a a" -> "a aa"), so that merging in
            # place does not shift the positions still to visit
            for i in reversed(range(len(symbols) - 1)):
                if tuple(symbols[i:i + 2]) == best:
                    symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
    return merges


CORRECT = [
    (check_clipped_precision, clipped_precision, "a reader's answer"),
    (check_clipped_precision, library_clipped_precision,
     "the library's bleu_steps"),
    (check_clipped_precision, sacrebleu_clipped_precision,
     "sacreBLEU's counts"),
    (check_corpus_bleu, corpus_bleu, "a reader's answer"),
    (check_corpus_bleu, library_bleu, "the library's corpus_bleu"),
    (check_corpus_bleu, steps_corpus_bleu, "the library's bleu_steps"),
    (check_corpus_bleu, sacrebleu_corpus_bleu, "sacreBLEU's corpus_bleu"),
    (check_bpe_merges, learn_merges, "a reader's answer"),
    (check_bpe_merges, tokenizers_merges, "tokenizers' BpeTrainer"),
]

P1 = [c.name for c in check_clipped_precision.cases]
B = [c.name for c in check_corpus_bleu.cases]
M = [c.name for c in check_bpe_merges.cases]

BUGS = [
    PlantedBug("no clipping", check_clipped_precision, no_clipping,
               case=P1[0], alone=True),
    PlantedBug("clipped by the sum over the references",
               check_clipped_precision, clip_by_sum, case=P1[0], alone=True),
    PlantedBug("the last n-gram missed (range(len - n))",
               check_clipped_precision, last_ngram_missed, case=P1[0]),
    PlantedBug("n-grams side by side, not overlapping",
               check_clipped_precision, ngrams_as_chunks, case=P1[1]),
    PlantedBug("total = len - n + 1, below 0 when too short",
               check_clipped_precision, total_by_formula,
               case=P1[2], alone=True),
    PlantedBug("the single best reference",
               check_clipped_precision, best_single_reference,
               case=P1[3], alone=True),
    PlantedBug("the first reference only",
               check_clipped_precision, first_reference_only,
               case=P1[3], alone=True),
    PlantedBug("an average of sentence BLEUs", check_corpus_bleu,
               average_of_sentences, case=B[0], alone=True),
    PlantedBug("the arithmetic mean of the precisions", check_corpus_bleu,
               arithmetic_mean, case=B[0]),
    PlantedBug("BLEU on a 0-1 scale", check_corpus_bleu, zero_to_one,
               case=B[0]),
    PlantedBug("the shortest reference, not the closest",
               check_corpus_bleu, shortest_reference, case=B[1], alone=True),
    PlantedBug("the longer reference on a tie", check_corpus_bleu,
               longer_reference_on_a_tie, case=B[3], alone=True),
    PlantedBug("no brevity penalty", check_corpus_bleu, no_brevity_penalty,
               case=B[1]),
    PlantedBug("a brevity penalty above 1", check_corpus_bleu,
               penalty_above_1, case=B[2]),
    PlantedBug("no stand-in: 0 when an order has no match",
               check_corpus_bleu, no_stand_in, case=B[4], alone=True),
    PlantedBug("the same stand-in 1 / (2 t) for every order",
               check_corpus_bleu, same_stand_in, case=B[4], alone=True),
    PlantedBug("stand-ins when nothing matches", check_corpus_bleu,
               stand_in_without_match, case=B[5], alone=True),
    PlantedBug("a stand-in for an order with no n-gram",
               check_corpus_bleu, stand_in_without_ngrams,
               case=B[6], alone=True),
    PlantedBug("tokens split on spaces", check_corpus_bleu,
               split_on_spaces, case=B[7], alone=True),
    PlantedBug("pairs not weighted by the word counts", check_bpe_merges,
               unweighted_pairs, case=M[0], alone=True),
    PlantedBug("pairs across words (one string)", check_bpe_merges,
               one_string, case=M[1], alone=True),
    PlantedBug("a pair counted once per word", check_bpe_merges,
               pair_once_per_word, case=M[2], alone=True),
    PlantedBug("only the first occurrence merged", check_bpe_merges,
               first_occurrence_only, case=M[3], alone=True),
    PlantedBug("pairs counted once, not after each merge",
               check_bpe_merges, counted_once, case=M[3]),
    PlantedBug("merged with str.replace", check_bpe_merges,
               string_replace, case=M[3], alone=True),
    PlantedBug("merged from the right", check_bpe_merges,
               merged_from_the_right, case=M[4], alone=True),
]
