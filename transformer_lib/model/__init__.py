"""The Transformer itself, one concept per module, in reading order:

- :mod:`.attention`   masked softmax, scaled dot-product and additive
                      attention
- :mod:`.multihead`   multi-head attention and its key/value cache
- :mod:`.ffn`         the position-wise feed-forward network
- :mod:`.addnorm`     residual connection + LayerNorm
- :mod:`.positional`  sinusoidal positional encoding, rotary positions
- :mod:`.stack`       embeddings + positional encoding + N blocks
- :mod:`.encoder`, :mod:`.decoder`: the blocks and their stacks,
                      post-norm (the paper) or pre-norm (``norm_first``)
- :mod:`.transformer` the encoder-decoder and its configuration
- :mod:`.decoder_only` the decoder-only layout (GPT's): causal blocks over
                      one sequence, source and answer
- :mod:`.language_model` a language model on one stream of text, in the
                      2017 block's layout or a GPT block's (pre-norm,
                      RMSNorm, GELU, rotary positions, tied embeddings)
- :mod:`.layouts`     the same attention in other code bases' layouts:
                      d2l's, ViT's fused qkv, jadore801120's post-norm
- :mod:`.record`      hooks that record its attention weights and its
                      blocks' gradient norms
- :mod:`.intervene`   hooks that switch heads off or hide source words

Nothing here knows about data, training or the book.
"""

from .addnorm import AddNorm
from .attention import (AdditiveAttention, DotProductAttention,
                        attention_mask, masked_softmax,
                        scaled_dot_product_attention, softmax_with_mask)
from .decoder_only import (CausalBlock, CausalStack, DecoderOnlyConfig,
                           DecoderOnlyTransformer, PreNormCausalBlock,
                           join_source_and_target)
from .decoder import (BlockCache, DecoderCache, PreNormDecoderBlock,
                      TransformerDecoder, TransformerDecoderBlock)
from .encoder import (PreNormEncoderBlock, TransformerEncoder,
                      TransformerEncoderBlock)
from .ffn import PositionWiseFFN
from .language_model import (GPT_CHANGES, LanguageModel,
                             LanguageModelBlock, LanguageModelConfig,
                             PreNormLanguageModelBlock, RMSNorm)
from .intervene import LayerIntervention, intervene
from .layouts import (FusedSelfAttention, PostNormMultiHeadAttention,
                      fused_from_separate, post_norm_from_separate,
                      separate_from_fused, transpose_output, transpose_qkv)
from .multihead import (KVCache, MultiHeadAttention,
                        RotaryMultiHeadAttention, merge_heads, split_heads)
from .positional import (PositionalEncoding, RotaryEmbedding,
                         sinusoidal_encoding)
from .record import (AttentionMaps, GradientNorms, record_attention,
                     record_gradient_norms)
from .stack import EmbeddedBlockStack
from .transformer import (EncoderDecoder, Transformer, TransformerConfig,
                          count_parameters, training_mode)

__all__ = [
    "AddNorm", "AdditiveAttention", "AttentionMaps", "BlockCache",
    "CausalBlock", "CausalStack", "DecoderCache", "DecoderOnlyConfig",
    "DecoderOnlyTransformer", "DotProductAttention", "EmbeddedBlockStack",
    "EncoderDecoder", "FusedSelfAttention", "GPT_CHANGES",
    "GradientNorms", "KVCache", "LanguageModel", "LanguageModelBlock",
    "LanguageModelConfig", "LayerIntervention", "MultiHeadAttention",
    "PositionWiseFFN", "PositionalEncoding", "PostNormMultiHeadAttention",
    "PreNormCausalBlock", "PreNormDecoderBlock", "PreNormEncoderBlock",
    "PreNormLanguageModelBlock", "RMSNorm", "RotaryEmbedding",
    "RotaryMultiHeadAttention", "Transformer",
    "TransformerConfig", "TransformerDecoder", "TransformerDecoderBlock",
    "TransformerEncoder", "TransformerEncoderBlock", "attention_mask",
    "count_parameters", "fused_from_separate", "intervene",
    "join_source_and_target",
    "masked_softmax", "merge_heads", "post_norm_from_separate",
    "record_attention", "record_gradient_norms",
    "scaled_dot_product_attention", "separate_from_fused",
    "sinusoidal_encoding", "softmax_with_mask", "split_heads",
    "training_mode", "transpose_output", "transpose_qkv",
]
