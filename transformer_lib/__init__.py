"""transformer_lib: the one tested Transformer implementation behind the
book, in three layers, each using only the ones before it:

- :mod:`.model`        the Transformer itself: attention, heads, FFN,
                       Add & Norm, positions, the blocks, the stacks, the
                       encoder-decoder (and hooks that record or switch its
                       attention)
- :mod:`.translation`  the task: data, training, decoding, BLEU,
                       checkpoints, the GRU baseline, the named recipes
- :mod:`.instruments`  the book's: listings, figures, widgets, the
                       attention view, head switches, the in-browser
                       translator, ``doctor()``

and the command line over all three (``python -m transformer_lib``,
:mod:`.cli`).  The model's names are here too: ``tl.MultiHeadAttention``
is ``tl.model.MultiHeadAttention``.
"""

from . import instruments, model, translation
from .instruments import exercises
from .instruments.checkup import doctor
from .model import (AddNorm, AdditiveAttention, AttentionMaps, BlockCache,
                    DecoderCache, DotProductAttention, EncoderDecoder,
                    FusedSelfAttention, KVCache, MultiHeadAttention,
                    PositionalEncoding, PositionWiseFFN,
                    PostNormMultiHeadAttention, PreNormDecoderBlock,
                    PreNormEncoderBlock, Transformer, TransformerConfig,
                    TransformerDecoder, TransformerDecoderBlock,
                    TransformerEncoder, TransformerEncoderBlock,
                    attention_mask, fused_from_separate, intervene,
                    masked_softmax, merge_heads, post_norm_from_separate,
                    record_attention, record_gradient_norms,
                    scaled_dot_product_attention, separate_from_fused,
                    sinusoidal_encoding, split_heads, transpose_output,
                    transpose_qkv)
from .instruments.heads import head_confidence
from .translation.decoding import (beam_search, gnmt_length_penalty,
                                   greedy_decode)

__version__ = "0.6.0"

__all__ = [
    "AddNorm", "AdditiveAttention", "AttentionMaps", "BlockCache",
    "DecoderCache", "DotProductAttention", "EncoderDecoder",
    "FusedSelfAttention", "KVCache", "MultiHeadAttention",
    "PositionWiseFFN", "PositionalEncoding", "PostNormMultiHeadAttention",
    "PreNormDecoderBlock", "PreNormEncoderBlock",
    "Transformer", "TransformerConfig", "TransformerDecoder",
    "TransformerDecoderBlock", "TransformerEncoder",
    "TransformerEncoderBlock", "attention_mask", "beam_search", "doctor",
    "exercises",
    "fused_from_separate", "gnmt_length_penalty", "greedy_decode",
    "head_confidence", "instruments", "intervene", "masked_softmax",
    "merge_heads", "model", "post_norm_from_separate", "record_attention",
    "record_gradient_norms", "scaled_dot_product_attention",
    "separate_from_fused", "sinusoidal_encoding", "split_heads",
    "translation", "transpose_output", "transpose_qkv",
]
