"""From English text to French text with a trained model, corpus BLEU on
a test split, and the attention behind a translation."""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass

import torch

from .._checks import check_positive_int
from .bleu import bleu, corpus_bleu
from .data import Vocab, check_token_lists, encode_source, pad_batch
from .decoding import beam_search, greedy_decode
from ..model.intervene import intervene


def detokenize(tokens) -> str:
    """Undo the space that preprocessing put before ``, . ! ?``
    (``"va !"`` -> ``"va!"``): :meth:`Vocab.detokenize`."""
    return Vocab.detokenize(tokens)


@dataclass
class Translation:
    source_tokens: list[str]
    tokens: list[str]   # the translation, without <eos>
    unknown: list[str]  # source words outside the vocabulary (read <unk>)
    text: str           # the translation as text (words joined by spaces)


def _model_device(model) -> torch.device:
    return next(model.parameters()).device


def translate_tokens(model, sources, src_vocab: Vocab, tgt_vocab: Vocab,
                     **kwargs) -> list[list[str]]:
    """Translate token lists; one token list (without ``<eos>``) per source.

    Sources are decoded in batches of similar length; ``beam_size=1`` (the
    default) is greedy decoding.  ``max_len`` (default: twice the longest
    source plus 5) bounds the output length.  ``use_cache=False`` re-runs
    the decoder on the whole prefix at every step.  Other options:
    ``batch_size=256``, ``length_penalty=0.6`` (beam search).
    """
    return [tgt_vocab.decode(ids) for ids in
            decode_ids(model, sources, src_vocab, tgt_vocab, **kwargs)]


def _batches(sources, src_vocab: Vocab, batch_size: int, device):
    """``(indices, src (B, S), valid lengths (B,))`` over ``sources`` in
    batches of similar length: the shortest first."""
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        encoded = [encode_source(sources[i], src_vocab) for i in idx]
        lens = torch.tensor([len(e) for e in encoded], device=device)
        yield idx, pad_batch(encoded).to(device), lens


def _check_vocab_sizes(model, src_vocab, tgt_vocab) -> None:
    """A vocabulary larger than the model's (the two swapped, or another
    model's) would feed or read ids it does not have."""
    for name, vocab, part in [("src_vocab", src_vocab, "encoder"),
                              ("tgt_vocab", tgt_vocab, "decoder")]:
        size = getattr(getattr(model, part, None), "vocab_size", None)
        if size is not None and len(vocab) > size:
            raise ValueError(
                f"{name} has {len(vocab)} tokens, more than the model's "
                f"{part} ({size}): is it this model's, and in this place "
                f"(source, then target)?")


def _check_hide(hide, sources) -> None:
    if not isinstance(hide, (list, tuple)) or len(hide) != len(sources):
        raise ValueError(f"hide must be a list with one entry per source "
                         f"({len(sources)}), got {hide!r:.60}")
    for i, (position, source) in enumerate(zip(hide, sources)):
        if position is not None and (
                isinstance(position, bool) or not isinstance(position, int)
                or not 0 <= position <= len(source)):
            raise ValueError(f"hide[{i}] must be None or a source position "
                             f"0..{len(source)}, got {position!r}")


def decode_ids(model, sources, src_vocab: Vocab, tgt_vocab: Vocab, *,
               beam_size: int = 1, max_len: int | None = None,
               batch_size: int = 256, length_penalty: float = 0.6,
               use_cache: bool = True, hide=None,
               with_eos: bool = True) -> list[list[int]]:
    """The target ids the decoder emitted for each source (token lists),
    up to and with its first ``<eos>`` (without it if ``with_eos`` is
    False), or all of them if none came.

    ``batch_size``: the decoder's rows per call, sources times beams
    (``batch_size // beam_size`` sources at a time, at least one): a
    beam's ``(rows, V)`` scores stay small enough to be fast on a CPU.

    ``hide``: one entry per source, ``None`` or the position of a source
    token that no attention may see while that source is translated
    (:func:`~transformer_lib.model.intervene`'s ``hidden``)."""
    check_positive_int("beam_size", beam_size)
    check_positive_int("batch_size", batch_size)
    if max_len is not None:
        check_positive_int("max_len", max_len)
    check_token_lists("sources", sources)
    _check_vocab_sizes(model, src_vocab, tgt_vocab)
    device = _model_device(model)
    if hide is not None:
        _check_hide(hide, sources)
    results = [None] * len(sources)
    config_max_len = getattr(getattr(model, "config", None), "max_len", None)
    ids = dict(bos_id=tgt_vocab.bos, eos_id=tgt_vocab.eos,
               pad_id=tgt_vocab.pad)
    per_call = max(1, batch_size // beam_size)   # sources
    for idx, src, lens in _batches(sources, src_vocab, per_call, device):
        steps = max_len or 2 * src.shape[1] + 5
        if config_max_len:
            steps = min(steps, config_max_len - 1)
        hidden = None
        if hide is not None:
            hidden = torch.zeros(src.shape, dtype=torch.bool, device=device)
            for row, i in enumerate(idx):
                if hide[i] is not None:
                    hidden[row, hide[i]] = True
        hiding = (intervene(model, hidden=hidden) if hidden is not None
                  else nullcontext())
        with hiding:
            if beam_size == 1:
                out = greedy_decode(model, src, lens, max_len=steps,
                                    use_cache=use_cache, **ids)
            else:
                out = beam_search(model, src, lens, max_len=steps,
                                  beam_size=beam_size,
                                  length_penalty=length_penalty, **ids)
        for i, row in zip(idx, out.tolist()):
            if Vocab.eos in row:    # cut after the first <eos>, or at it
                row = row[:row.index(Vocab.eos) + (1 if with_eos else 0)]
            results[i] = row
    return results


def mean_cross_attention(model, sources, outputs, src_vocab: Vocab, *,
                         batch_size: int = 256) -> list[torch.Tensor]:
    """For each source (a token list) and the target ids of its
    translation (``outputs``, without ``<eos>``): the cross-attention that
    produced each output token, averaged over all blocks and heads, a
    ``(len(output), S)`` tensor (S: the padded source length of its
    batch; each row sums to 1 over the source's own positions).  The
    decoder reads ``<bos>`` + the output (teacher forcing), in the
    batches :func:`decode_ids` uses."""
    if len(outputs) != len(sources):
        raise ValueError(f"outputs must have one entry per source "
                         f"({len(sources)}), got {len(outputs)}")
    device = _model_device(model)
    results = [None] * len(sources)
    for idx, src, lens in _batches(sources, src_vocab, batch_size, device):
        rows = [[Vocab.bos] + list(outputs[i]) for i in idx]
        tgt = pad_batch(rows, Vocab.pad).to(device)
        maps = model.attention_maps(src, tgt, lens)["cross"]
        weights = torch.stack(maps).mean(dim=(0, 2))          # (B, T, S)
        for row, i in enumerate(idx):
            results[i] = weights[row, :len(outputs[i])].float().cpu()
    return results


def _sources(sentences, src_vocab) -> list[list[str]]:
    """Raw sentences -> the source vocabulary's tokens (words after d2l's
    preprocessing, or subword pieces)."""
    if isinstance(sentences, str):
        raise TypeError("sentences must be a list of strings; wrap a single "
                        "sentence in a list")
    sources = []
    for i, sentence in enumerate(sentences):
        if not isinstance(sentence, str):
            raise TypeError(f"sentences[{i}] must be a string (raw text; "
                            f"translate_tokens takes token lists), got "
                            f"{sentence!r:.40}")
        tokens = src_vocab.tokenize(sentence)
        if not tokens:
            raise ValueError(f"sentence {i} is empty: there is nothing to "
                             f"translate")
        sources.append(tokens)
    return sources


def translate(model, sentences, src_vocab: Vocab, tgt_vocab: Vocab,
              **kwargs) -> list[Translation]:
    """Translate English sentences (raw text); see
    :func:`translate_tokens` for the options.

    An empty sentence is a ``ValueError``; words outside the vocabulary
    are read as ``<unk>`` and listed in each result's ``unknown``.
    """
    sources = _sources(sentences, src_vocab)
    outputs = translate_tokens(model, sources, src_vocab, tgt_vocab,
                               **kwargs)
    return [Translation(s, o, [t for t in s if src_vocab[t] == Vocab.unk],
                        _joined(o, tgt_vocab))
            for s, o in zip(sources, outputs)]


def _joined(tokens, vocab) -> str:
    """A translation's text as the book prints it: word tokens joined by
    spaces (``"va !"``), subword pieces decoded to text."""
    if isinstance(vocab, Vocab):
        return " ".join(tokens)
    return vocab.detokenize(tokens)


@dataclass
class AttendedTranslation:
    """A translation with every attention weight the model used for it."""

    source: list[str]   # English tokens + <eos>: the encoder's positions
    inputs: list[str]   # <bos>, then all outputs but the last: the
    #                     decoder's input at each step
    outputs: list[str]  # what each decoder step emitted (<eos> last, if
    #                     the decoder emitted it)
    weights: dict       # kind -> [(heads, queries, keys) for each block]

    @property
    def text(self) -> str:
        return " ".join(t for t in self.outputs if t != "<eos>")


def translate_with_attention(model, sentence: str, src_vocab: Vocab,
                             tgt_vocab: Vocab,
                             **kwargs) -> AttendedTranslation:
    """Translate one English sentence (options as in
    :func:`translate_tokens`) and collect the attention weights behind
    the translation, for every layer and head.

    The decoder is run once more on its own output (teacher forcing on
    ``<bos>`` + the translation); the key/value cache computes exactly
    what a full pass computes (tested), so these are the weights it used
    while translating.  Kinds: ``encoder_self`` (source x source),
    ``decoder_self`` (outputs x inputs) and ``cross`` (outputs x source).
    """
    [source] = _sources([sentence], src_vocab)
    [ids] = decode_ids(model, [source], src_vocab, tgt_vocab, **kwargs)
    device = _model_device(model)
    src = torch.tensor([encode_source(source, src_vocab)], device=device)
    tgt = torch.tensor([[Vocab.bos] + ids[:-1]], device=device)  # the inputs
    lens = torch.tensor([src.shape[1]], device=device)
    weights = model.attention_maps(src, tgt, lens)
    return AttendedTranslation(
        source=source + ["<eos>"], inputs=tgt_vocab.to_tokens(tgt[0]),
        outputs=tgt_vocab.to_tokens(ids),
        weights={kind: [w[0].float().cpu() for w in per_block]
                 for kind, per_block in weights.items()})


@dataclass
class BleuScore:
    """Corpus BLEU of a model's translations of a test split."""

    single: float      # against each source's first reference
    multi: float       # against all of its references
    hypotheses: list   # the detokenised translations
    seconds: float     # decoding time


def evaluate_bleu(model, test_groups, src_vocab: Vocab, tgt_vocab: Vocab,
                  **kwargs) -> BleuScore:
    """Corpus sacreBLEU of the model's translations of ``test_groups``
    (options as in :func:`translate_tokens`).  Both sides are detokenised
    first, so that sacreBLEU's own tokenizer (13a) sees ordinary text."""
    if test_groups and not hasattr(test_groups[0], "refs"):
        raise TypeError(f"test_groups must hold TestGroup entries (a "
                        f"split's .test: each source with its references), "
                        f"got {type(test_groups[0]).__name__}")
    start = time.perf_counter()
    outputs = translate_tokens(model, [g.src for g in test_groups],
                               src_vocab, tgt_vocab, **kwargs)
    seconds = time.perf_counter() - start
    hyps = [tgt_vocab.detokenize(h) for h in outputs]
    firsts = [tgt_vocab.detokenize(g.refs[0]) for g in test_groups]
    alls = [[tgt_vocab.detokenize(r) for r in g.refs] for g in test_groups]
    return BleuScore(corpus_bleu(hyps, firsts), corpus_bleu(hyps, alls),
                     hyps, seconds)


def held_out_bleu(model, test_groups, src_vocab: Vocab, tgt_vocab: Vocab,
                  *, beam_sizes=(1, 4)) -> dict[str, BleuScore]:
    """:func:`evaluate_bleu` for each beam size: ``{"greedy": ...,
    "beam 4": ...}``."""
    if isinstance(beam_sizes, int):
        raise TypeError(f"beam_sizes must be a list of beam sizes, e.g. "
                        f"({beam_sizes},), got {beam_sizes}")
    return {("greedy" if k == 1 else f"beam {k}"):
            evaluate_bleu(model, test_groups, src_vocab, tgt_vocab,
                          beam_size=k)
            for k in beam_sizes}


# d2l's four example sentences (d2l.ai, section "The Transformer
# Architecture"): the English, the reference French, and the sentence
# BLEU (k=2) that d2l's book printed for its own model.
D2L_EXAMPLES = (("go .", "va !", 1.000),
                ("i lost .", "j'ai perdu .", 0.687),
                ("he's calm .", "il est calme .", 0.658),
                ("i'm home .", "je suis chez moi .", 1.000))


def score_d2l_examples(model, src_vocab: Vocab, tgt_vocab: Vocab, *,
                       max_len: int = 9) -> list[tuple[str, float]]:
    """Greedy translations of d2l's four sentences, scored as d2l scores
    them (sentence BLEU, k=2, against the one reference):
    ``[(translation, bleu), ...]`` in the order of :data:`D2L_EXAMPLES`.
    An empty translation scores 0.  ``max_len`` is d2l's ``num_steps``."""
    english = [english for english, _, _ in D2L_EXAMPLES]
    results = translate(model, english, src_vocab, tgt_vocab,
                        max_len=max_len)
    return [(r.text, bleu(r.text, reference, k=2) if r.tokens else 0.0)
            for r, (_, reference, _) in zip(results, D2L_EXAMPLES)]
