"""The encoder-decoder at a glance: the role of Figure 1 of Vaswani et al.
(2017), drawn as SVG.  Each box names the library class that implements
it and links to the chapter that builds it."""

from __future__ import annotations

from collections.abc import Callable
from html import escape

# Box colours, one per kind of sub-layer (as in the paper's figure).
COLOURS = {"attention": "#fbd9b0", "addnorm": "#f3eda0", "ffn": "#bfe0f2",
           "embedding": "#f6c7cf", "output": "#d9d0ee", "plain": "#ffffff"}

# (label, class, kind, chapter) of each box, from the bottom up.
ENCODER = [("Multi-head attention", "MultiHeadAttention", "attention",
            "02_multihead_attention"),
           ("Add & Norm", "AddNorm", "addnorm", "04_layernorm_vs_batchnorm"),
           ("Feed-forward", "PositionWiseFFN", "ffn", "03_ffn"),
           ("Add & Norm", "AddNorm", "addnorm", "04_layernorm_vs_batchnorm")]
DECODER = [("Masked multi-head attention", "MultiHeadAttention(causal)",
            "attention", "06_encoder_decoder"),
           ("Add & Norm", "AddNorm", "addnorm", "04_layernorm_vs_batchnorm"),
           ("Cross-attention", "MultiHeadAttention", "attention",
            "06_encoder_decoder"),
           ("Add & Norm", "AddNorm", "addnorm", "04_layernorm_vs_batchnorm"),
           ("Feed-forward", "PositionWiseFFN", "ffn", "03_ffn"),
           ("Add & Norm", "AddNorm", "addnorm", "04_layernorm_vs_batchnorm")]

WIDTH, BOX_W, BOX_H, GAP = 620, 230, 38, 14


def _linked(link, chapter, body):
    """``body`` inside a link to ``chapter``'s page (none without
    ``link``)."""
    if link is None:
        return body
    return f'<a href="{escape(link(chapter))}" target="_top">{body}</a>'


def _box(x, y, label, cls, kind):
    """One sub-layer: a rounded box with its name and its class."""
    return (f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" '
            f'rx="6" fill="{COLOURS[kind]}" stroke="#444"/>'
            f'<text x="{x + BOX_W / 2}" y="{y + 16}" class="label">'
            f'{escape(label)}</text>'
            f'<text x="{x + BOX_W / 2}" y="{y + 31}" class="cls">'
            f'{escape(cls)}</text>')


def _arrow(x, y1, y2):
    return (f'<line x1="{x}" y1="{y1}" x2="{x}" y2="{y2}" stroke="#444" '
            f'marker-end="url(#head)"/>')


def _column(x, bottom, layers, link):
    """Boxes stacked upwards from ``bottom``, joined by arrows; returns
    the SVG and each box's upper edge (the last one is the top)."""
    parts, y, centre, ys = [], bottom, x + BOX_W / 2, []
    for i, (label, cls, kind, chapter) in enumerate(layers):
        y -= BOX_H
        parts.append(_linked(link, chapter, _box(x, y, label, cls, kind)))
        ys.append(y)
        if i + 1 < len(layers):
            parts.append(_arrow(centre, y, y - GAP + 2))
            y -= GAP
    return parts, ys


def architecture_svg(link: Callable[[str], str] | None = None) -> str:
    """The encoder (left) and the decoder (right) as an SVG string.

    link: maps a chapter's file stem (``"03_ffn"``) to the address a box
    links to, e.g. ``lambda stem: f"{stem}.html"``; ``None``: no links.
    """
    height = 700
    left, right = 40, WIDTH - 40 - BOX_W
    stage = [("Positional encoding", "PositionalEncoding", "embedding",
              "05_positional_encoding")]
    parts = []
    tops = {}
    sides = (("enc", left, ENCODER, "source", "source ids (B, S)",
              "TransformerEncoderBlock"),
             ("dec", right, DECODER, "target",
              "target ids, shifted right (B, T)", "TransformerDecoderBlock"))
    for side, x, layers, word, inputs, block in sides:
        centre = x + BOX_W / 2
        # inputs at the bottom, then embedding + positional encoding
        embed = [(f"Embedding × √d ({word})", "EmbeddedBlockStack.embed",
                  "embedding", "05_positional_encoding")] + stage
        parts.append(f'<text x="{centre}" y="{height - 12}" class="label">'
                     f'{inputs}</text>')
        parts.append(_arrow(centre, height - 28, height - 44))
        p, ys = _column(x, height - 46, embed, link)
        top = ys[-1]
        parts += p + [_arrow(centre, top, top - 2 * GAP)]
        # the N blocks, framed
        p, ys = _column(x, top - 2 * GAP - 10, layers, link)
        block_top = ys[-1]
        frame_y, frame_h = block_top - 28, top - block_top - 2 * GAP + 28
        caption = _linked(link, "06_encoder_decoder",
                          f'<text x="{x - 6}" y="{frame_y + 17}" '
                          f'class="frame">{block} × N</text>')
        parts += [f'<rect x="{x - 14}" y="{frame_y}" width="{BOX_W + 28}" '
                  f'height="{frame_h}" rx="10" fill="none" stroke="#888" '
                  f'stroke-dasharray="5,4"/>', caption] + p
        tops[side] = (block_top, frame_y, ys)
    # the encoder's output feeds every decoder block's cross-attention
    enc_top, enc_frame, _ = tops["enc"]
    cross_y = tops["dec"][2][2] + BOX_H / 2  # the cross-attention box
    mid = (left + BOX_W + right) / 2
    parts.append(f'<path d="M {left + BOX_W / 2} {enc_top} '
                 f'V {enc_frame - 20} H {mid} V {cross_y} H {right - 2}" '
                 f'fill="none" '
                 f'stroke="#444" marker-end="url(#head)"/>')
    parts.append(f'<text x="{left + BOX_W / 2}" y="{enc_frame - 26}" '
                 f'class="cls">memory M (B, S, d)</text>')
    # the decoder's output layer
    dec_top, dec_frame, _ = tops["dec"]
    centre = right + BOX_W / 2
    # The model returns logits; the softmax is taken by what reads them.
    head = [("Linear", "TransformerDecoder.dense", "output",
             "08_translator"),
            ("Softmax", "sequence_loss, beam_search", "output",
             "07_first_model")]
    parts.append(_arrow(centre, dec_top, dec_frame - GAP + 2))
    p, ys = _column(right, dec_frame - GAP, head, link)
    top = ys[-1]
    parts += p + [_arrow(centre, top, top - GAP),
                  f'<text x="{centre}" y="{top - GAP - 6}" class="label">'
                  f'next-token probabilities (B, T, V)</text>']
    style = ("<style>.label{font:13px sans-serif;text-anchor:middle}"
             ".cls{font:11px monospace;text-anchor:middle;fill:#333}"
             ".frame{font:bold 12px monospace;text-anchor:start;fill:#555}"
             "a:hover rect{stroke-width:2.5}</style>")
    marker = ('<defs><marker id="head" viewBox="0 0 10 10" refX="9" '
              'refY="5" markerWidth="7" markerHeight="7" orient="auto">'
              '<path d="M0,0 L10,5 L0,10 z" fill="#444"/></marker></defs>')
    crop = top - GAP - 26  # nothing is drawn above the top caption
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" '
            f'height="{height - crop}" '
            f'viewBox="0 {crop} {WIDTH} {height - crop}" '
            f'role="img" aria-label="The Transformer encoder-decoder">'
            f'{style}{marker}<rect width="100%" height="100%" '
            f'y="{crop}" fill="white"/>{"".join(parts)}</svg>')
