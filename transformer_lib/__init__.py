"""transformer_lib: the one tested Transformer implementation behind the
book.

One concept per module:

- :mod:`.attention`   masked softmax, scaled dot-product and additive
                      attention
- :mod:`.multihead`   multi-head attention and its key/value cache
- :mod:`.layouts`     the same function in other code bases' layouts:
                      d2l's, ViT's fused qkv, jadore801120's post-norm
- :mod:`.record`      recording attention weights (``record_attention``) and
                      gradient norms (``record_gradient_norms``)
- :mod:`.intervene`   heads off, source words hidden (``intervene``)
- :mod:`.heads`       each head's confidence (``head_confidence``)
- :mod:`.ffn`         the position-wise feed-forward network
- :mod:`.addnorm`     residual connection + LayerNorm
- :mod:`.positional`  sinusoidal positional encoding
- :mod:`.stack`       embeddings + positional encoding + N blocks
- :mod:`.encoder`, :mod:`.decoder`, :mod:`.model`: the encoder-decoder,
                      post-norm (the paper) or pre-norm (``norm_first``)
- :mod:`.decoding`    greedy decoding and beam search
- :mod:`.rnn`         a GRU encoder-decoder with additive attention
- :mod:`.checkup`     `doctor()`: a self-check of the set-up
- :mod:`.architecture` the encoder-decoder drawn as SVG (the book's figure)
- :mod:`.viz`         ``attention_view``: attention you can point at, as
                      plain HTML and JavaScript (no kernel, no CDN)
- :mod:`.export`, :mod:`.web`: the trained translator as ONNX graphs, and
                      a page box that runs them in the reader's browser

The translator pipeline: :mod:`.download` (finding and verifying the
fra-eng pairs), :mod:`.data` (preprocessing, vocabularies, subsets,
grouped split, batches), :mod:`.training`, :mod:`.checkpoint`,
:mod:`.bleu`, :mod:`.translate`, :mod:`.recipes` and the command line
(``python -m transformer_lib``, :mod:`.cli`).
"""

from .addnorm import AddNorm
from .attention import (AdditiveAttention, DotProductAttention,
                        attention_mask, masked_softmax,
                        scaled_dot_product_attention)
from .decoder import (BlockCache, DecoderCache, PreNormDecoderBlock,
                      TransformerDecoder, TransformerDecoderBlock)
from .decoding import beam_search, greedy_decode, length_penalty
from .checkup import doctor
from .encoder import (PreNormEncoderBlock, TransformerEncoder,
                      TransformerEncoderBlock)
from .ffn import PositionWiseFFN
from .layouts import (FusedSelfAttention, PostNormMultiHeadAttention,
                      fused_from_separate, post_norm_from_separate,
                      separate_from_fused, transpose_output, transpose_qkv)
from .model import EncoderDecoder, Transformer, TransformerConfig
from .multihead import KVCache, MultiHeadAttention, merge_heads, split_heads
from .positional import PositionalEncoding, sinusoidal_encoding
from .heads import head_confidence
from .intervene import intervene
from .record import AttentionMaps, record_attention, record_gradient_norms

__version__ = "0.2.0"

__all__ = [
    "AddNorm", "AdditiveAttention", "AttentionMaps", "BlockCache",
    "DecoderCache", "DotProductAttention", "EncoderDecoder",
    "FusedSelfAttention", "KVCache", "MultiHeadAttention",
    "PositionWiseFFN", "PositionalEncoding", "PostNormMultiHeadAttention",
    "PreNormDecoderBlock", "PreNormEncoderBlock",
    "Transformer", "TransformerConfig", "TransformerDecoder",
    "TransformerDecoderBlock", "TransformerEncoder",
    "TransformerEncoderBlock", "attention_mask", "beam_search", "doctor",
    "fused_from_separate", "greedy_decode", "head_confidence",
    "intervene", "length_penalty", "masked_softmax", "merge_heads",
    "post_norm_from_separate", "record_attention", "record_gradient_norms",
    "scaled_dot_product_attention", "separate_from_fused",
    "sinusoidal_encoding", "split_heads", "transpose_output",
    "transpose_qkv",
]
