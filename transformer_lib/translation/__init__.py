"""The task the book trains the model on: English to French.

- :mod:`.download`    finding and verifying the fra-eng pairs
- :mod:`.data`        preprocessing, vocabularies, subsets, the grouped
                      split, batches
- :mod:`.subwords`    one byte-pair-encoding vocabulary for both languages
- :mod:`.training`    the loss, the learning-rate schedule, ``fit``,
                      precision
- :mod:`.distributed` several processes sharing every batch (torchrun,
                      DDP)
- :mod:`.checkpoint`  saving and loading trained models
- :mod:`.decoding`    greedy decoding and beam search
- :mod:`.bleu`        corpus BLEU, step by step and bootstrapped
- :mod:`.translate`   sentences in, translations and their BLEU out
- :mod:`.rnn`         a GRU encoder-decoder with additive attention, the
                      baseline the Transformer races
- :mod:`.recipes`     the named settings (data, model, training) the
                      chapters and the command line share
- :mod:`.reversal`    chapters 7 and 10's toy task: reverse the digits
- :mod:`.characters`  the English side as a stream of characters, for a
                      language model, and its n-gram baselines
- :mod:`.sampling`    greedy and sampled generation (temperature, top-k,
                      top-p), with a key/value cache

It uses :mod:`transformer_lib.model`, and nothing of the book's
instruments.
"""

from .bleu import (BleuSteps, bleu, bleu_from_counts, bleu_steps,
                   bootstrap_bleu, corpus_bleu, sentence_counts)
from .characters import (CharacterText, TextWindows, character_text,
                         distinct_ngrams, mean_interval, ngram_bits,
                         share_seen, window_bits)
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .data import (BASIC_MAX_TOKENS, BASIC_PREFIXES, SPECIAL_TOKENS, Batch,
                   BatchLoader, Split, TestGroup, Vocab, grouped_split,
                   load_pairs, preprocess, show_batch, tokenize)
from .decoding import (beam_search, gnmt_length_penalty, greedy_decode,
                       greedy_decode_uncached)
from .distributed import Ranks, finish_distributed, init_distributed
from .download import DataError, fra_eng_path, read_fra_eng
from .published import everyday_log, load_everyday
from .recipes import RECIPES, Recipe, in_pieces, trained_transformer
from .reversal import (DIGITS, ReversalResult, ReversalTask, exact_matches,
                       reversal_pairs, reversal_run)
from .rnn import GRUConfig, GRUSeq2Seq
from .sampling import Greedy, Sampler, Xorshift32, choose, generate
from .subwords import SubwordVocab
from .training import (EpochSnapshots, History, SmoothedCrossEntropy,
                       TrainConfig, autocast_dtype, evaluate_loss, fit,
                       learning_rate, make_optimizer, pick_device,
                       precision_name, seed_everything, sequence_loss,
                       train_step)
from .translate import (D2L_EXAMPLES, BleuScore, decode_ids, detokenize,
                        evaluate_bleu, held_out_bleu, mean_cross_attention,
                        score_d2l_examples, translate,
                        translate_with_attention)

__all__ = [
    "BASIC_MAX_TOKENS", "BASIC_PREFIXES", "Batch", "BatchLoader",
    "BleuScore", "BleuSteps", "CharacterText", "CheckpointError",
    "D2L_EXAMPLES", "DIGITS", "DataError", "EpochSnapshots", "GRUConfig",
    "GRUSeq2Seq", "Greedy", "History", "RECIPES", "Ranks", "Recipe",
    "ReversalResult", "ReversalTask", "SPECIAL_TOKENS", "Sampler",
    "SmoothedCrossEntropy", "Split", "SubwordVocab", "TestGroup",
    "TextWindows", "TrainConfig", "Vocab", "Xorshift32", "autocast_dtype",
    "beam_search", "bleu", "bleu_from_counts", "bleu_steps",
    "bootstrap_bleu", "character_text", "choose", "corpus_bleu",
    "decode_ids", "detokenize", "distinct_ngrams", "evaluate_bleu",
    "evaluate_loss", "everyday_log", "exact_matches", "finish_distributed",
    "fit", "fra_eng_path", "generate", "gnmt_length_penalty",
    "greedy_decode", "greedy_decode_uncached", "grouped_split",
    "held_out_bleu", "in_pieces", "init_distributed", "learning_rate",
    "load_checkpoint", "load_everyday", "load_pairs", "make_optimizer",
    "mean_cross_attention", "mean_interval", "ngram_bits", "pick_device",
    "precision_name", "preprocess", "read_fra_eng", "reversal_pairs",
    "reversal_run", "save_checkpoint", "score_d2l_examples",
    "seed_everything", "sentence_counts", "sequence_loss", "share_seen",
    "show_batch", "tokenize", "train_step", "trained_transformer",
    "translate", "translate_with_attention", "window_bits",
]
