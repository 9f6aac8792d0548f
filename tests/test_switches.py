"""head_switches: the switches of tl.intervene as ipywidgets in a live kernel. Each control,
set as a reader sets it, gives the translation that tl.intervene gives with the same settings."""

import pytest
import torch

import transformer_lib as tl
from transformer_lib.translation.data import Vocab
from transformer_lib.instruments.switches import head_switches
from transformer_lib.translation.translate import translate_with_attention

SENTENCES = ["i am cold .", "he is very tall .", "we are not afraid of the dark ."]


def tiny():
    """A small random translator and its vocabularies."""
    src = Vocab([s.split() for s in SENTENCES])
    tgt = Vocab([["je", "suis", "il", "est", "nous", "avons", "froid", "."]])
    torch.manual_seed(0)
    config = tl.TransformerConfig(len(src), len(tgt), num_hiddens=32, ffn_num_hiddens=64,
                                  num_heads=2, num_enc_blks=2, num_dec_blks=2, dropout=0.0,
                                  max_len=32)
    return tl.Transformer(config).eval(), src, tgt


def expected(model, src, tgt, sentence, heads_off=(), hidden=(), window=None):
    mask = None
    if hidden:
        mask = torch.zeros(1, len(sentence.split()) + 1, dtype=torch.bool)
        mask[0, list(hidden)] = True
    with tl.intervene(model, heads_off=heads_off, hidden=mask, window=window):
        return translate_with_attention(model, sentence, src, tgt)


def same(a, b):
    assert a.outputs == b.outputs and a.weights.keys() == b.weights.keys()
    for kind in a.weights:
        assert len(a.weights[kind]) == len(b.weights[kind])
        for x, y in zip(a.weights[kind], b.weights[kind]):
            assert torch.equal(x, y)


def test_each_control_gives_intervenes_translation():
    model, src, tgt = tiny()
    sentence = SENTENCES[2]
    ranking = [(k, b, h) for k in ("cross", "encoder_self", "decoder_self") for b in range(2)
               for h in range(2)]
    panel = head_switches(model, src, tgt, sentence, ranking=ranking)
    same(panel.result, expected(model, src, tgt, sentence))
    assert panel.settings() == {"heads_off": [], "hidden": [], "window": None}

    panel.heads["cross", 1, 0].value = False                       # a head's button
    assert panel.settings()["heads_off"] == [("cross", 1, 0)]
    same(panel.result, expected(model, src, tgt, sentence, [("cross", 1, 0)]))
    assert not panel.result.weights["cross"][1][0].any()          # its weights are 0

    panel.words.children[1].value = True                          # a word, hidden
    panel.window.value = 1
    same(panel.result, expected(model, src, tgt, sentence, [("cross", 1, 0)], [1], 1))
    assert not panel.result.weights["cross"][0][..., 1].any()

    panel.all_on.click()                                          # heads back; word and window stay
    assert panel.settings() == {"heads_off": [], "hidden": [1], "window": 1}
    panel.top.value = 4                                           # the four most important kept
    assert set(panel.settings()["heads_off"]) == set(ranking[4:])
    same(panel.result, expected(model, src, tgt, sentence, ranking[4:], [1], 1))

    panel.text.value = SENTENCES[0]                               # a new sentence: no hidden word
    assert [b.description for b in panel.words.children] == ["i", "am", "cold", "."]
    assert panel.settings()["hidden"] == []
    same(panel.result, expected(model, src, tgt, SENTENCES[0], ranking[4:], [], 1))
    assert panel.figure.value[:4] == b"\x89PNG"


def test_one_translation_per_click_even_when_it_sets_many_heads(monkeypatch):
    model, src, tgt = tiny()
    panel = head_switches(model, src, tgt, SENTENCES[0])
    calls = []
    monkeypatch.setattr(panel, "translate", lambda: calls.append(1))
    panel.heads["encoder_self", 0, 0].value = False
    panel.heads["cross", 0, 1].value = False
    panel.all_on.click()
    assert len(calls) == 3


def test_switches_errors_name_the_argument():
    model, src, tgt = tiny()
    with pytest.raises(TypeError, match="model"):
        head_switches(torch.nn.Linear(2, 2), src, tgt, "i am cold .")
    with pytest.raises(TypeError, match="sentence"):
        head_switches(model, src, tgt, 3)
    with pytest.raises(ValueError, match="ranking"):
        head_switches(model, src, tgt, "i am", ranking=[("cross", 0, 0)])   # not every head
    with pytest.raises(ValueError, match="ranking"):
        head_switches(model, src, tgt, "i am", ranking=[("nope", 0, 0)])
    with pytest.raises(TypeError, match="ranking"):
        head_switches(model, src, tgt, "i am", ranking=5)
