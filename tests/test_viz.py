"""The attention viewer's data: what it embeds is the model's weights (rounded to the
viewer's 3 decimals), masked weights are exactly 0, and bad input names the argument.
The browser side is tested on the built book (test_book.py) and in live kernels
(test_frontends.py)."""

from __future__ import annotations

import json
import re

import pytest
import torch

import transformer_lib as tl
from transformer_lib.instruments.viz import SCALE, AttentionExample, attention_view


def small_model():
    torch.manual_seed(0)
    config = tl.TransformerConfig(20, 22, num_hiddens=32, ffn_num_hiddens=64, num_heads=4,
                                  num_enc_blks=2, num_dec_blks=3, dropout=0.1)
    return tl.Transformer(config).eval()


def test_the_embedded_json_is_the_models_attention_for_every_kind_layer_and_head():
    model = small_model()
    src, tgt = torch.randint(4, 20, (1, 7)), torch.randint(4, 22, (1, 5))
    lens = torch.tensor([5])                                   # two padded source positions
    maps = model.attention_maps(src, tgt, lens)
    source, target = [f"en{i}" for i in range(7)], [f"fr{i}" for i in range(5)]
    view = attention_view(AttentionExample(
        source, {kind: [w[0] for w in layers] for kind, layers in maps.items()}, target))
    html = view._repr_html_()
    embedded = json.loads(re.search(r"data=(\{.*?\});function go", html).group(1))
    assert embedded == view.data
    example = embedded["examples"][0]
    assert example["source"] == source and example["target"] == target
    assert set(example["kinds"]) == {"encoder_self", "decoder_self", "cross"}
    for kind, layers in maps.items():
        stored = example["kinds"][kind]["layers"]
        assert len(stored) == len(layers)                     # 2 encoder, 3 decoder blocks
        for mine, theirs in zip(stored, layers):
            mine = torch.tensor(mine, dtype=torch.float32) / SCALE   # (heads, Q, K)
            assert mine.shape == theirs[0].shape
            assert (mine - theirs[0]).abs().max() <= 0.5 / SCALE + 1e-7
    cross = torch.tensor(example["kinds"]["cross"]["layers"][0])
    encoder = torch.tensor(example["kinds"]["encoder_self"]["layers"][1])
    decoder = torch.tensor(example["kinds"]["decoder_self"]["layers"][2])
    assert (cross[..., 5:] == 0).all() and (encoder[..., 5:] == 0).all()   # source padding
    assert (decoder.triu(1) == 0).all()                                  # causal
    assert ((decoder.sum(-1) - SCALE).abs() <= decoder.shape[-1]).all()  # rows sum to ~1


def test_rounding_keeps_pages_light_and_ids_stable():
    w = torch.softmax(torch.randn(2, 3, 3), -1)
    view = attention_view(AttentionExample(["a", "b", "c"], {"self": [w]}))
    assert all(isinstance(v, int) for v in
               view.data["examples"][0]["kinds"]["self"]["layers"][0][0][0])
    again = attention_view(AttentionExample(["a", "b", "c"], {"self": [w.clone()]}))
    assert again.id == view.id                      # the same data, the same page
    other = attention_view(AttentionExample(["a", "b", "c"], {"self": [w.flip(-1)]}))
    assert other.id != view.id                      # two viewers on one page draw apart
    html = view._repr_html_()
    assert "</script>" not in view.json and " src=" not in html    # nothing is fetched
    assert set(re.findall(r"https?://[^\"' ]+", html)) == {"http://www.w3.org/2000/svg"}


def test_a_label_with_a_closing_tag_cannot_end_the_script():
    w = torch.ones(1, 1, 1)
    html = attention_view(AttentionExample(["</script><b>"], {"self": [w]}))._repr_html_()
    assert html.count("</script>") == 1


@pytest.mark.parametrize("example, message", [
    (AttentionExample(["a", "b"], {"self": [torch.ones(1, 3, 2) / 2]}),
     r"weights\['self'\]\[0\] must have shape \(heads, 2, 2\)"),
    (AttentionExample(["a"], {"cross": [torch.ones(1, 1, 1)]}),
     r"weights\['cross'\] needs the target and source tokens"),
    (AttentionExample(["a", "b"], {"self": [torch.tensor([[float("nan"), 1], [0, 1]])]}),
     r"weights\['self'\]\[0\] holds NaN"),
    (AttentionExample(["a"], {"self": [torch.full((1, 1), 2.0)]}), r"outside \[0, 1\]"),
    (AttentionExample(["a"], {"selfish": [torch.ones(1, 1)]}), r"unknown kind 'selfish'"),
    (AttentionExample(["a"], {"self": []}), r"weights\['self'\] must be a non-empty list"),
    (AttentionExample(["a", "b"], {"self": [torch.ones(2, 2, 2) / 2, torch.ones(3, 2, 2) / 2]}),
     r"weights\['self'\]\[1\] has 3 heads"),
    (AttentionExample("ab", {"self": [torch.ones(2, 2) / 2]}), r"examples\[0\].source must be"),
])
def test_bad_input_names_the_argument(example, message):
    with pytest.raises((ValueError, TypeError), match=message):
        attention_view(example)


def test_an_empty_list_of_examples_is_refused():
    with pytest.raises(TypeError, match="examples must be"):
        attention_view([])
