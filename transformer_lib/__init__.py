"""transformer_lib: the one tested Transformer implementation behind the book.

One concept per module:

- :mod:`.attention`   masked softmax, scaled dot-product and additive attention
- :mod:`.multihead`   multi-head attention (separate W_q/W_k/W_v, fused qkv, and the post-norm
                      layout with residual + LayerNorm inside), key/value cache
- :mod:`.ffn`         the position-wise feed-forward network
- :mod:`.addnorm`     residual connection + LayerNorm
- :mod:`.positional`  sinusoidal positional encoding
- :mod:`.stack`       embeddings + positional encoding + N blocks, shared by encoder and decoder
- :mod:`.encoder`, :mod:`.decoder`, :mod:`.model`   the encoder-decoder Transformer
- :mod:`.decoding`    greedy decoding (with or without the cache) and beam search
- :mod:`.rnn`         the GRU encoder-decoder with additive attention, for comparison

The translator pipeline: :mod:`.download` (finding and verifying the fra-eng pairs),
:mod:`.data` (preprocessing, vocabularies, subsets, grouped split, batches), :mod:`.training`,
:mod:`.checkpoint`, :mod:`.bleu`, :mod:`.translate`, :mod:`.recipes` and the command line
(``python -m transformer_lib``, :mod:`.cli`).
"""

from .addnorm import AddNorm
from .attention import (AdditiveAttention, DotProductAttention, attention_mask, masked_softmax,
                        scaled_dot_product_attention)
from .decoder import DecoderCache, TransformerDecoder, TransformerDecoderBlock
from .decoding import beam_search, greedy_decode
from .encoder import TransformerEncoder, TransformerEncoderBlock
from .ffn import PositionWiseFFN
from .model import EncoderDecoder, Transformer, TransformerConfig
from .multihead import (FusedSelfAttention, KVCache, MultiHeadAttention, PostNormMultiHeadAttention,
                        fused_from_separate, merge_heads, post_norm_from_separate, separate_from_fused,
                        split_heads, transpose_output, transpose_qkv)
from .positional import PositionalEncoding, sinusoidal_encoding

__version__ = "0.1.0"

__all__ = [
    "AddNorm", "AdditiveAttention", "DecoderCache", "DotProductAttention", "EncoderDecoder",
    "FusedSelfAttention", "KVCache", "MultiHeadAttention", "PositionWiseFFN",
    "PositionalEncoding", "PostNormMultiHeadAttention", "Transformer", "TransformerConfig", "TransformerDecoder",
    "TransformerDecoderBlock", "TransformerEncoder", "TransformerEncoderBlock",
    "attention_mask", "beam_search", "fused_from_separate", "greedy_decode", "masked_softmax", "merge_heads",
    "post_norm_from_separate", "scaled_dot_product_attention", "separate_from_fused", "sinusoidal_encoding", "split_heads",
    "transpose_output", "transpose_qkv",
]
