"""From English text to French text with a trained model, and corpus BLEU on a test split."""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from .bleu import bleu, corpus_bleu
from .data import Vocab, encode_source, pad_batch, preprocess, tokenize
from .decoding import beam_search, greedy_decode


def detokenize(tokens) -> str:
    """Undo the space that preprocessing put before ``, . ! ?`` (``"va !"`` -> ``"va!"``)."""
    return re.sub(r" ([,.!?])", r"\1", " ".join(tokens))


@dataclass
class Translation:
    source_tokens: list
    tokens: list                 # the translation, without <eos>
    unknown: list                # source words outside the vocabulary (read as <unk>)

    @property
    def text(self) -> str:
        return " ".join(self.tokens)


def _model_device(model) -> torch.device:
    return next(model.parameters()).device


def translate_tokens(model, sources, src_vocab: Vocab, tgt_vocab: Vocab, *, beam_size: int = 1,
                     max_len: int | None = None, batch_size: int = 256, length_penalty: float = 0.6,
                     use_cache: bool = True):
    """Translate token lists; returns one token list (without ``<eos>``) per source.

    Sources are decoded in batches of similar length; ``beam_size=1`` is greedy decoding.
    ``max_len`` (default: twice the longest source plus 5) bounds the output length.
    ``use_cache=False`` re-runs the decoder on the whole prefix (for decoders without a cache).
    """
    device = _model_device(model)
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    results = [None] * len(sources)
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        encoded = [encode_source(sources[i], src_vocab) for i in idx]
        src = pad_batch(encoded).to(device)
        lens = torch.tensor([len(e) for e in encoded], device=device)
        steps = max_len or 2 * src.shape[1] + 5
        if hasattr(model, "config") and hasattr(model.config, "max_len"):
            steps = min(steps, model.config.max_len - 1)
        if beam_size == 1:
            out = greedy_decode(model, src, lens, bos_id=tgt_vocab.bos, eos_id=tgt_vocab.eos, max_len=steps,
                                use_cache=use_cache)
        else:
            out = beam_search(model, src, lens, bos_id=tgt_vocab.bos, eos_id=tgt_vocab.eos, max_len=steps,
                              beam_size=beam_size, length_penalty=length_penalty)
        for i, row in zip(idx, out.tolist()):
            results[i] = tgt_vocab.decode(row)
    return results


def translate(model, sentences, src_vocab: Vocab, tgt_vocab: Vocab, **kwargs) -> list[Translation]:
    """Translate English sentences (raw text); see :func:`translate_tokens` for the options.

    An empty sentence is a ``ValueError``; words outside the vocabulary are read as ``<unk>``
    and listed in each result's ``unknown``.
    """
    if isinstance(sentences, str):
        raise TypeError("sentences must be a list of strings; wrap a single sentence in a list")
    sources = []
    for i, sentence in enumerate(sentences):
        tokens = tokenize(preprocess(sentence))
        if not tokens:
            raise ValueError(f"sentence {i} is empty: there is nothing to translate")
        sources.append(tokens)
    outputs = translate_tokens(model, sources, src_vocab, tgt_vocab, **kwargs)
    return [Translation(s, o, [t for t in s if src_vocab[t] == src_vocab.unk])
            for s, o in zip(sources, outputs)]


def evaluate_bleu(model, test_groups, src_vocab: Vocab, tgt_vocab: Vocab, **kwargs) -> dict:
    """Corpus sacreBLEU of the model's translations of ``test_groups``.

    Returns ``{"single": BLEU against each source's first reference, "multi": BLEU against
    all of them, "hypotheses": [...]}``.  Both sides are detokenised first, so sacreBLEU's
    own tokenizer (13a) sees ordinary text.
    """
    hyps = [detokenize(h) for h in translate_tokens(model, [g.src for g in test_groups],
                                                     src_vocab, tgt_vocab, **kwargs)]
    single = corpus_bleu(hyps, [detokenize(g.refs[0]) for g in test_groups])
    multi = corpus_bleu(hyps, [[detokenize(r) for r in g.refs] for g in test_groups])
    return {"single": single, "multi": multi, "hypotheses": hyps}


# d2l's four example sentences (d2l.ai, section "The Transformer Architecture"): the English, the
# reference French, and the sentence BLEU (k=2) that d2l's book printed for its own model.
D2L_EXAMPLES = (("go .", "va !", 1.000), ("i lost .", "j'ai perdu .", 0.687),
                ("he's calm .", "il est calme .", 0.658), ("i'm home .", "je suis chez moi .", 1.000))


def score_d2l_examples(model, src_vocab: Vocab, tgt_vocab: Vocab, *, max_len: int = 9) -> list:
    """Greedy translations of d2l's four sentences, scored as d2l scores them (sentence BLEU,
    k=2, against the one reference): ``[(translation, bleu), ...]`` in the order of
    :data:`D2L_EXAMPLES`.  An empty translation scores 0.  ``max_len`` is d2l's ``num_steps``."""
    results = translate(model, [english for english, _, _ in D2L_EXAMPLES], src_vocab, tgt_vocab,
                        max_len=max_len)
    return [(r.text, bleu(r.text, reference, k=2) if r.tokens else 0.0)
            for r, (_, reference, _) in zip(results, D2L_EXAMPLES)]
