"""An attention viewer that works wherever HTML does: the static book,
JupyterLab, the classic Notebook and Colab, with no kernel, no ipywidgets
and nothing fetched from a CDN.

:func:`attention_view` embeds the weights as compact JSON (each weight
rounded to 3 decimals) next to a small script (``attention_view.js``, in
this package) that draws a *head view* -- query tokens on the left, key
tokens on the right, one line per head and pair with the weight as its
opacity; pointing at a token keeps only its lines -- and a *matrix view*
of one head, kept in step.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib.resources import files

import torch

# kind -> (title, the tokens of the queries, the tokens of the keys)
KINDS = {
    "cross": ("cross-attention", "target", "source"),
    "encoder_self": ("encoder self-attention", "source", "source"),
    "decoder_self": ("decoder self-attention", "target", "target_inputs"),
    "self": ("self-attention", "source", "source"),
}
SCALE = 1000  # weights are stored as integers: round(weight * SCALE)

_STYLE = """<style>
.tl-av{font:13px sans-serif;margin:.5em 0}
.tl-av-controls,.tl-av-heads{display:flex;flex-wrap:wrap;gap:.3em 1em;
 margin:.2em 0}
.tl-av-views{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
.tl-av-head{font-weight:600}
.tl-av-token{cursor:pointer;outline:none}
.tl-av-token:focus text,.tl-av-focused text{font-weight:700;
 text-decoration:underline}
.tl-av-readout{min-height:1.3em;opacity:.8}
.tl-av svg text{font:12px sans-serif}
</style>"""


@dataclass
class AttentionExample:
    """One sentence for :func:`attention_view`.

    source, target: the tokens (target: ``None`` for a self-attention
    layer on one sequence); target_inputs: the decoder's input tokens,
    the keys of its self-attention (default: ``target``; when decoding,
    ``<bos>`` and the tokens produced so far).  weights: ``{kind: [one
    tensor per layer]}``, kind one of :data:`KINDS`; each tensor
    ``(h, Q, K)`` (or ``(Q, K)`` for one head), with Q and K the lengths
    of the kind's query and key tokens.
    """

    source: list[str]
    weights: dict[str, list]
    target: list[str] | None = None
    target_inputs: list[str] | None = None
    label: str = ""


def _checked_layers(name: str, layers, queries: list, keys: list) -> list:
    """The layers of one kind as nested lists of integer weights."""
    if not isinstance(layers, (list, tuple)) or not layers:
        raise ValueError(f"{name} must be a non-empty list with one tensor "
                         f"per layer")
    result, heads = [], None
    for i, w in enumerate(layers):
        w = torch.as_tensor(w).detach().float().cpu()
        if w.dim() == 2:
            w = w[None]
        if w.dim() != 3 or tuple(w.shape[1:]) != (len(queries), len(keys)):
            raise ValueError(
                f"{name}[{i}] must have shape (heads, {len(queries)}, "
                f"{len(keys)}) for {len(queries)} query and {len(keys)} "
                f"key tokens, got {tuple(w.shape)}")
        if heads is not None and w.shape[0] != heads:
            raise ValueError(f"{name}[{i}] has {w.shape[0]} heads, the "
                             f"layers before it {heads}")
        heads = w.shape[0]
        if not torch.isfinite(w).all():
            raise ValueError(f"{name}[{i}] holds NaN or infinite weights")
        if (w < 0).any() or (w > 1 + 1e-4).any():
            raise ValueError(f"{name}[{i}] holds weights outside [0, 1]")
        result.append(torch.round(w * SCALE).int().tolist())
    return result


def _example_json(example: AttentionExample, index: int) -> dict:
    where = f"examples[{index}]"
    inputs = example.target if example.target_inputs is None \
        else example.target_inputs
    tokens = {"source": example.source, "target": example.target,
              "target_inputs": inputs}
    for side, toks in tokens.items():
        if toks is not None and (isinstance(toks, str) or not all(
                isinstance(t, str) for t in toks)):
            raise TypeError(f"{where}.{side} must be a list of strings")
    if not isinstance(example.weights, dict) or not example.weights:
        raise ValueError(f"{where}.weights must map a kind of attention "
                         f"to its layers, e.g. {{'cross': [...]}}")
    unknown = set(example.weights) - set(KINDS)
    if unknown:
        raise ValueError(f"{where}.weights has an unknown kind "
                         f"{sorted(unknown)[0]!r}; known: {sorted(KINDS)}")
    kinds = {}
    for kind in (k for k in KINDS if k in example.weights):  # cross first
        layers = example.weights[kind]
        title, q_side, k_side = KINDS[kind]
        if tokens[q_side] is None or tokens[k_side] is None:
            raise ValueError(f"{where}.weights[{kind!r}] needs the "
                             f"{q_side} and {k_side} tokens")
        kinds[kind] = {"title": title, "queries": q_side, "keys": k_side,
                       "layers": _checked_layers(
                           f"{where}.weights[{kind!r}]", layers,
                           tokens[q_side], tokens[k_side])}
    used = {side for k in kinds.values()
            for side in (k["queries"], k["keys"])}
    return {"label": example.label or f"sentence {index + 1}",
            **{side: list(tokens[side]) for side in used}, "kinds": kinds}


class AttentionView:
    """The viewer as an HTML output (``_repr_html_``); ``.data`` is the
    embedded JSON as a Python object."""

    def __init__(self, data: dict):
        self.data = data
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
        self.json = text
        self.id = "tl-av-" + hashlib.sha1(text.encode()).hexdigest()[:12]

    def _repr_html_(self) -> str:
        script = files(__package__).joinpath("attention_view.js").read_text()
        # "</" would end the <script> element early
        payload = self.json.replace("</", "<\\/")
        return (f'{_STYLE}<div id="{self.id}" class="tl-attention-view">'
                f'</div><script>{script}\n(function(){{'
                f'var id="{self.id}", data={payload};'
                f'function go(n){{var root=document.getElementById(id);'
                f'if(root&&!root.firstChild){{tlAttentionView(root,data);}}'
                f'else if(!root&&n<50){{setTimeout(function(){{go(n+1);}},'
                f'100);}}}}go(0);}})();</script>')


def attention_view(examples) -> AttentionView:
    """The head view and matrix view of one or several sentences.

    examples: an :class:`AttentionExample` or a list of them (a sentence
    menu appears for several).  Raises ``ValueError``/``TypeError``
    naming the argument for tokens that do not match the weights' shapes,
    weights outside [0, 1] or not finite, and unknown kinds.
    """
    if isinstance(examples, AttentionExample):
        examples = [examples]
    if not examples or not all(isinstance(e, AttentionExample)
                               for e in examples):
        raise TypeError("examples must be an AttentionExample or a "
                        "non-empty list of them")
    data = {"scale": SCALE, "examples": [_example_json(e, i)
                                         for i, e in enumerate(examples)]}
    return AttentionView(data)
