"""Checkers for the exercises where the reader writes a piece of the
Transformer: call one on your function; it says "passed all N cases" or
names the first case that failed, in words.

    report = tl.exercises.check_masked_softmax(masked_softmax)
"""

from .attention import (check_attention_mask, check_masked_softmax,
                        check_merge_heads, check_multi_head_attention,
                        check_split_heads)
from .blocks import check_decoder_block
from .core import Case, Checker, Mismatch, Report
from .layers import check_layer_norm, check_sinusoidal_encoding
from .sampling import check_top_k_probabilities
from .training import (check_greedy_decode, check_sequence_loss,
                       check_train_epoch)
from .translation import (check_bpe_merges, check_clipped_precision,
                          check_corpus_bleu)

CHECKERS = [check_masked_softmax, check_attention_mask, check_split_heads,
            check_merge_heads, check_multi_head_attention,
            check_layer_norm, check_sinusoidal_encoding,
            check_decoder_block, check_sequence_loss, check_greedy_decode,
            check_train_epoch, check_clipped_precision,
            check_corpus_bleu, check_bpe_merges,
            check_top_k_probabilities]

__all__ = [
    "CHECKERS", "Case", "Checker", "Mismatch", "Report",
    "check_attention_mask", "check_bpe_merges", "check_clipped_precision",
    "check_corpus_bleu", "check_decoder_block", "check_greedy_decode",
    "check_layer_norm", "check_masked_softmax", "check_merge_heads",
    "check_multi_head_attention", "check_sequence_loss",
    "check_sinusoidal_encoding", "check_split_heads",
    "check_top_k_probabilities", "check_train_epoch",
]
