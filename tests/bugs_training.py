"""Planted bugs for chapter 7's checkers (sequence_loss, greedy_decode,
train_epoch): each a copy of a right answer with one mistake, marked
``# BUG``."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from planted_bugs import PlantedBug
from transformer_lib.instruments.exercises.training import (
    check_greedy_decode, check_sequence_loss, check_train_epoch)
from transformer_lib.translation.decoding import greedy_decode_uncached
from transformer_lib.translation.training import (learning_rate,
                                                  sequence_loss)


# --- sequence_loss ----------------------------------------------------------

def loss_solution(logits, labels, pad_id, label_smoothing):
    # the notebook's solution (my_sequence_loss)
    log_p = logits.float().log_softmax(dim=-1)               # (B, T, V)
    nll = -log_p.gather(-1, labels[..., None]).squeeze(-1)   # (B, T)
    uniform = -log_p.mean(dim=-1)                  # against eps / V each
    per_token = (1 - label_smoothing) * nll + label_smoothing * uniform
    real = labels != pad_id                                  # (B, T)
    return (per_token * real).sum() / real.sum()


def torch_cross_entropy(logits, labels, pad_id, label_smoothing):
    V = logits.shape[-1]
    return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1),
                           ignore_index=pad_id,
                           label_smoothing=label_smoothing)


def loss_softmax_over_time(logits, labels, pad_id, label_smoothing):
    log_p = logits.float().log_softmax(dim=1)  # BUG: over T, not over V
    nll = -log_p.gather(-1, labels[..., None]).squeeze(-1)
    uniform = -log_p.mean(dim=-1)
    per_token = (1 - label_smoothing) * nll + label_smoothing * uniform
    real = labels != pad_id
    return (per_token * real).sum() / real.sum()


def loss_paper_smoothing_always(logits, labels, pad_id, label_smoothing):
    label_smoothing = 0.1  # BUG: the paper's value, whatever was asked
    log_p = logits.float().log_softmax(dim=-1)
    nll = -log_p.gather(-1, labels[..., None]).squeeze(-1)
    uniform = -log_p.mean(dim=-1)
    per_token = (1 - label_smoothing) * nll + label_smoothing * uniform
    real = labels != pad_id
    return (per_token * real).sum() / real.sum()


def loss_padding_in_count(logits, labels, pad_id, label_smoothing):
    log_p = logits.float().log_softmax(dim=-1)
    nll = -log_p.gather(-1, labels[..., None]).squeeze(-1)
    uniform = -log_p.mean(dim=-1)
    per_token = (1 - label_smoothing) * nll + label_smoothing * uniform
    real = labels != pad_id
    return (per_token * real).sum() / labels.numel()  # BUG: counts padding


def loss_padding_in_sum(logits, labels, pad_id, label_smoothing):
    log_p = logits.float().log_softmax(dim=-1)
    nll = -log_p.gather(-1, labels[..., None]).squeeze(-1)
    uniform = -log_p.mean(dim=-1)
    per_token = (1 - label_smoothing) * nll + label_smoothing * uniform
    real = labels != pad_id
    return per_token.sum() / real.sum()  # BUG: padding's losses summed too


def loss_smoothing_off_the_label(logits, labels, pad_id, label_smoothing):
    V = logits.shape[-1]
    log_p = logits.float().log_softmax(dim=-1)
    log_p_y = log_p.gather(-1, labels[..., None]).squeeze(-1)
    nll = -log_p_y
    # BUG: eps / (V - 1) on every other token, none on the label
    others = -(log_p.sum(dim=-1) - log_p_y) / (V - 1)
    per_token = (1 - label_smoothing) * nll + label_smoothing * others
    real = labels != pad_id
    return (per_token * real).sum() / real.sum()


def loss_label_keeps_one(logits, labels, pad_id, label_smoothing):
    log_p = logits.float().log_softmax(dim=-1)
    nll = -log_p.gather(-1, labels[..., None]).squeeze(-1)
    uniform = -log_p.mean(dim=-1)
    per_token = nll + label_smoothing * uniform  # BUG: no (1 - eps)
    real = labels != pad_id
    return (per_token * real).sum() / real.sum()


def loss_length_at_first_pad(logits, labels, pad_id, label_smoothing):
    log_p = logits.float().log_softmax(dim=-1)
    nll = -log_p.gather(-1, labels[..., None]).squeeze(-1)
    uniform = -log_p.mean(dim=-1)
    per_token = (1 - label_smoothing) * nll + label_smoothing * uniform
    # BUG: a row's length where its first <pad> is: 0 when it has none
    lengths = (labels == pad_id).int().argmax(dim=1)           # (B,)
    real = torch.arange(labels.shape[1]) < lengths[:, None]
    return (per_token * real).sum() / real.sum()


def loss_mean_of_sentence_means(logits, labels, pad_id, label_smoothing):
    log_p = logits.float().log_softmax(dim=-1)
    nll = -log_p.gather(-1, labels[..., None]).squeeze(-1)
    uniform = -log_p.mean(dim=-1)
    per_token = (1 - label_smoothing) * nll + label_smoothing * uniform
    real = labels != pad_id
    # BUG: each sentence's mean, then the mean over the sentences
    return ((per_token * real).sum(dim=1) / real.sum(dim=1)).mean()


def loss_mean_of_nonempty_sentence_means(logits, labels, pad_id,
                                         label_smoothing):
    log_p = logits.float().log_softmax(dim=-1)
    nll = -log_p.gather(-1, labels[..., None]).squeeze(-1)
    uniform = -log_p.mean(dim=-1)
    per_token = (1 - label_smoothing) * nll + label_smoothing * uniform
    real = labels != pad_id
    counts = real.sum(dim=1)                                   # (B,)
    # BUG: the mean over the sentences (those with a real token) of each
    # sentence's mean, not the mean over the tokens
    means = (per_token * real).sum(dim=1) / counts.clamp(min=1)
    return means[counts > 0].mean()


def loss_pad_is_zero(logits, labels, pad_id, label_smoothing):
    log_p = logits.float().log_softmax(dim=-1)
    nll = -log_p.gather(-1, labels[..., None]).squeeze(-1)
    uniform = -log_p.mean(dim=-1)
    per_token = (1 - label_smoothing) * nll + label_smoothing * uniform
    real = labels != 0  # BUG: <pad> taken to be id 0, not pad_id
    return (per_token * real).sum() / real.sum()


def loss_log_of_softmax(logits, labels, pad_id, label_smoothing):
    log_p = logits.float().softmax(dim=-1).log()  # BUG: underflows to -inf
    nll = -log_p.gather(-1, labels[..., None]).squeeze(-1)
    uniform = -log_p.mean(dim=-1)
    per_token = (1 - label_smoothing) * nll + label_smoothing * uniform
    real = labels != pad_id
    return (per_token * real).sum() / real.sum()


def loss_without_gradient(logits, labels, pad_id, label_smoothing):
    with torch.no_grad():  # BUG: training needs the gradient
        log_p = logits.float().log_softmax(dim=-1)
        nll = -log_p.gather(-1, labels[..., None]).squeeze(-1)
        uniform = -log_p.mean(dim=-1)
        per_token = (1 - label_smoothing) * nll + label_smoothing * uniform
        real = labels != pad_id
        return (per_token * real).sum() / real.sum()


# --- greedy_decode --------------------------------------------------------

@torch.no_grad()
def greedy_solution(model, src, src_valid_lens, bos_id, eos_id, pad_id,
                    max_len):
    # the notebook's solution
    was_training = model.training
    model.eval()                                     # no dropout
    B = src.shape[0]
    tgt = torch.full((B, 1), bos_id, dtype=torch.long,
                     device=src.device)                     # (B, 1)
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)
    for _ in range(max_len):
        logits = model.logits(src, tgt, src_valid_lens)[:, -1]  # (B, V)
        logits[:, [bos_id, pad_id]] = float("-inf")  # never written
        token = logits.argmax(dim=-1).masked_fill(finished, eos_id)
        finished |= token == eos_id
        tgt = torch.cat([tgt, token[:, None]], dim=1)
        if finished.all():
            break
    model.train(was_training)
    return tgt[:, 1:]                          # (B, n), without <bos>


@torch.no_grad()
def greedy_no_stop(model, src, src_valid_lens, bos_id, eos_id, pad_id,
                   max_len):
    model.eval()
    B = src.shape[0]
    tgt = torch.full((B, 1), bos_id, dtype=torch.long)
    finished = torch.zeros(B, dtype=torch.bool)
    for _ in range(max_len):  # BUG: always max_len steps, never stops
        logits = model.logits(src, tgt, src_valid_lens)[:, -1]
        logits[:, [bos_id, pad_id]] = float("-inf")
        token = logits.argmax(dim=-1).masked_fill(finished, eos_id)
        finished |= token == eos_id
        tgt = torch.cat([tgt, token[:, None]], dim=1)
    return tgt[:, 1:]


@torch.no_grad()
def greedy_keeps_bos(model, src, src_valid_lens, bos_id, eos_id, pad_id,
                     max_len):
    model.eval()
    B = src.shape[0]
    tgt = torch.full((B, 1), bos_id, dtype=torch.long)
    finished = torch.zeros(B, dtype=torch.bool)
    for _ in range(max_len):
        logits = model.logits(src, tgt, src_valid_lens)[:, -1]
        logits[:, [bos_id, pad_id]] = float("-inf")
        token = logits.argmax(dim=-1).masked_fill(finished, eos_id)
        finished |= token == eos_id
        tgt = torch.cat([tgt, token[:, None]], dim=1)
        if finished.all():
            break
    return tgt  # BUG: with the leading <bos>


@torch.no_grad()
def greedy_first_position(model, src, src_valid_lens, bos_id, eos_id,
                          pad_id, max_len):
    model.eval()
    B = src.shape[0]
    tgt = torch.full((B, 1), bos_id, dtype=torch.long)
    finished = torch.zeros(B, dtype=torch.bool)
    for _ in range(max_len):
        # BUG: the first position's logits, not the newest's
        logits = model.logits(src, tgt, src_valid_lens)[:, 0]
        logits[:, [bos_id, pad_id]] = float("-inf")
        token = logits.argmax(dim=-1).masked_fill(finished, eos_id)
        finished |= token == eos_id
        tgt = torch.cat([tgt, token[:, None]], dim=1)
        if finished.all():
            break
    return tgt[:, 1:]


@torch.no_grad()
def greedy_stops_at_first_end(model, src, src_valid_lens, bos_id, eos_id,
                              pad_id, max_len):
    model.eval()
    B = src.shape[0]
    tgt = torch.full((B, 1), bos_id, dtype=torch.long)
    finished = torch.zeros(B, dtype=torch.bool)
    for _ in range(max_len):
        logits = model.logits(src, tgt, src_valid_lens)[:, -1]
        logits[:, [bos_id, pad_id]] = float("-inf")
        token = logits.argmax(dim=-1).masked_fill(finished, eos_id)
        finished |= token == eos_id
        tgt = torch.cat([tgt, token[:, None]], dim=1)
        if finished.any():  # BUG: stops when the first row ends
            break
    return tgt[:, 1:]


@torch.no_grad()
def greedy_writes_after_eos(model, src, src_valid_lens, bos_id, eos_id,
                            pad_id, max_len):
    model.eval()
    B = src.shape[0]
    tgt = torch.full((B, 1), bos_id, dtype=torch.long)
    finished = torch.zeros(B, dtype=torch.bool)
    for _ in range(max_len):
        logits = model.logits(src, tgt, src_valid_lens)[:, -1]
        logits[:, [bos_id, pad_id]] = float("-inf")
        token = logits.argmax(dim=-1)  # BUG: ended rows go on writing
        finished |= token == eos_id
        tgt = torch.cat([tgt, token[:, None]], dim=1)
        if finished.all():
            break
    return tgt[:, 1:]


@torch.no_grad()
def greedy_one_step_short(model, src, src_valid_lens, bos_id, eos_id,
                          pad_id, max_len):
    model.eval()
    B = src.shape[0]
    tgt = torch.full((B, 1), bos_id, dtype=torch.long)
    finished = torch.zeros(B, dtype=torch.bool)
    # BUG: max_len - 1 steps (as if the <bos> were one of them)
    for _ in range(max_len - 1):
        logits = model.logits(src, tgt, src_valid_lens)[:, -1]
        logits[:, [bos_id, pad_id]] = float("-inf")
        token = logits.argmax(dim=-1).masked_fill(finished, eos_id)
        finished |= token == eos_id
        tgt = torch.cat([tgt, token[:, None]], dim=1)
        if finished.all():
            break
    return tgt[:, 1:]


@torch.no_grad()
def greedy_may_write_bos(model, src, src_valid_lens, bos_id, eos_id,
                         pad_id, max_len):
    model.eval()
    B = src.shape[0]
    tgt = torch.full((B, 1), bos_id, dtype=torch.long)
    finished = torch.zeros(B, dtype=torch.bool)
    for _ in range(max_len):
        logits = model.logits(src, tgt, src_valid_lens)[:, -1]
        logits[:, pad_id] = float("-inf")  # BUG: <bos> may be chosen
        token = logits.argmax(dim=-1).masked_fill(finished, eos_id)
        finished |= token == eos_id
        tgt = torch.cat([tgt, token[:, None]], dim=1)
        if finished.all():
            break
    return tgt[:, 1:]


@torch.no_grad()
def greedy_may_write_pad(model, src, src_valid_lens, bos_id, eos_id,
                         pad_id, max_len):
    model.eval()
    B = src.shape[0]
    tgt = torch.full((B, 1), bos_id, dtype=torch.long)
    finished = torch.zeros(B, dtype=torch.bool)
    for _ in range(max_len):
        logits = model.logits(src, tgt, src_valid_lens)[:, -1]
        logits[:, bos_id] = float("-inf")  # BUG: <pad> may be chosen
        token = logits.argmax(dim=-1).masked_fill(finished, eos_id)
        finished |= token == eos_id
        tgt = torch.cat([tgt, token[:, None]], dim=1)
        if finished.all():
            break
    return tgt[:, 1:]


@torch.no_grad()
def greedy_with_dropout(model, src, src_valid_lens, bos_id, eos_id,
                        pad_id, max_len):
    # BUG: no model.eval(): dropout stays on while decoding
    B = src.shape[0]
    tgt = torch.full((B, 1), bos_id, dtype=torch.long)
    finished = torch.zeros(B, dtype=torch.bool)
    for _ in range(max_len):
        logits = model.logits(src, tgt, src_valid_lens)[:, -1]
        logits[:, [bos_id, pad_id]] = float("-inf")
        token = logits.argmax(dim=-1).masked_fill(finished, eos_id)
        finished |= token == eos_id
        tgt = torch.cat([tgt, token[:, None]], dim=1)
        if finished.all():
            break
    return tgt[:, 1:]


@torch.no_grad()
def greedy_without_lengths(model, src, src_valid_lens, bos_id, eos_id,
                           pad_id, max_len):
    model.eval()
    B = src.shape[0]
    tgt = torch.full((B, 1), bos_id, dtype=torch.long)
    finished = torch.zeros(B, dtype=torch.bool)
    for _ in range(max_len):
        # BUG: no src_valid_lens: the sources' padding is attended to
        logits = model.logits(src, tgt)[:, -1]
        logits[:, [bos_id, pad_id]] = float("-inf")
        token = logits.argmax(dim=-1).masked_fill(finished, eos_id)
        finished |= token == eos_id
        tgt = torch.cat([tgt, token[:, None]], dim=1)
        if finished.all():
            break
    return tgt[:, 1:]


# --- train_epoch ----------------------------------------------------------

def epoch_solution(model, loader, optimizer, config, epoch, total_steps):
    # the notebook's solution, my_train_epoch (chapter 7's train_epoch,
    # the device read from the model)
    device = next(model.parameters()).device
    model.train()                                   # dropout on
    loader.set_epoch(epoch)                         # a new shuffle
    for i, batch in enumerate(loader):
        batch = batch.to(device)
        step = epoch * len(loader) + i              # from 0
        for group in optimizer.param_groups:        # the schedule
            group["lr"] = learning_rate(config, step, step / total_steps)
        logits = model.logits(batch.src, batch.tgt_in,
                              batch.src_valid_lens)       # (B, T, V)
        loss = sequence_loss(logits, batch.tgt_out,
                             label_smoothing=config.label_smoothing)
        optimizer.zero_grad()
        loss.backward()                             # the gradients
        torch.nn.utils.clip_grad_norm_(model.parameters(),
                                       config.clip_norm)
        optimizer.step()                            # AdamW, at lr


def epoch_with_torch_loss(model, loader, optimizer, config, epoch,
                          total_steps):
    model.train()
    loader.set_epoch(epoch)
    for i, batch in enumerate(loader):
        step = epoch * len(loader) + i
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step, step / total_steps)
        logits = model.logits(batch.src, batch.tgt_in, batch.src_valid_lens)
        loss = F.cross_entropy(logits.flatten(0, 1),
                               batch.tgt_out.flatten(), ignore_index=0,
                               label_smoothing=config.label_smoothing)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        optimizer.step()


def epoch_no_zero_grad(model, loader, optimizer, config, epoch,
                       total_steps):
    model.train()
    loader.set_epoch(epoch)
    for i, batch in enumerate(loader):
        step = epoch * len(loader) + i
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step, step / total_steps)
        logits = model.logits(batch.src, batch.tgt_in, batch.src_valid_lens)
        loss = sequence_loss(logits, batch.tgt_out,
                             label_smoothing=config.label_smoothing)
        # BUG: no optimizer.zero_grad(): the gradients add up
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        optimizer.step()


def epoch_no_clipping(model, loader, optimizer, config, epoch,
                      total_steps):
    model.train()
    loader.set_epoch(epoch)
    for i, batch in enumerate(loader):
        step = epoch * len(loader) + i
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step, step / total_steps)
        logits = model.logits(batch.src, batch.tgt_in, batch.src_valid_lens)
        loss = sequence_loss(logits, batch.tgt_out,
                             label_smoothing=config.label_smoothing)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()  # BUG: no clip_grad_norm_ before it


def epoch_no_set_epoch(model, loader, optimizer, config, epoch,
                       total_steps):
    model.train()
    # BUG: no loader.set_epoch(epoch): every epoch in the first's order
    for i, batch in enumerate(loader):
        step = epoch * len(loader) + i
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step, step / total_steps)
        logits = model.logits(batch.src, batch.tgt_in, batch.src_valid_lens)
        loss = sequence_loss(logits, batch.tgt_out,
                             label_smoothing=config.label_smoothing)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        optimizer.step()


def epoch_steps_restart(model, loader, optimizer, config, epoch,
                        total_steps):
    model.train()
    loader.set_epoch(epoch)
    for i, batch in enumerate(loader):
        step = i  # BUG: the epochs before this one not counted
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step, step / total_steps)
        logits = model.logits(batch.src, batch.tgt_in, batch.src_valid_lens)
        loss = sequence_loss(logits, batch.tgt_out,
                             label_smoothing=config.label_smoothing)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        optimizer.step()


def epoch_steps_from_one(model, loader, optimizer, config, epoch,
                         total_steps):
    model.train()
    loader.set_epoch(epoch)
    for i, batch in enumerate(loader):
        step = epoch * len(loader) + i + 1  # BUG: learning_rate counts from 0
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step, step / total_steps)
        logits = model.logits(batch.src, batch.tgt_in, batch.src_valid_lens)
        loss = sequence_loss(logits, batch.tgt_out,
                             label_smoothing=config.label_smoothing)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        optimizer.step()


def epoch_left_in_eval_mode(model, loader, optimizer, config, epoch,
                            total_steps):
    # BUG: no model.train(): a model handed over in eval mode trains
    # without dropout
    loader.set_epoch(epoch)
    for i, batch in enumerate(loader):
        step = epoch * len(loader) + i
        for group in optimizer.param_groups:
            group["lr"] = learning_rate(config, step, step / total_steps)
        logits = model.logits(batch.src, batch.tgt_in, batch.src_valid_lens)
        loss = sequence_loss(logits, batch.tgt_out,
                             label_smoothing=config.label_smoothing)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), config.clip_norm)
        optimizer.step()


CORRECT = [
    (check_sequence_loss, sequence_loss, "the library's sequence_loss"),
    (check_sequence_loss, torch_cross_entropy,
     "torch's F.cross_entropy with ignore_index and label_smoothing"),
    (check_sequence_loss, loss_solution, "the notebook's solution"),
    (check_greedy_decode, greedy_decode_uncached,
     "the library's greedy_decode_uncached"),
    (check_greedy_decode, greedy_solution, "the notebook's solution"),
    (check_train_epoch, epoch_solution,
     "chapter 7's train_epoch (the notebook's solution)"),
    (check_train_epoch, epoch_with_torch_loss,
     "a loop with F.cross_entropy's loss"),
]

_LOSS = check_sequence_loss
BUGS = [
    PlantedBug("log_softmax over the time axis", _LOSS,
               loss_softmax_over_time,
               case="no smoothing, every row ending in padding"),
    PlantedBug("smooths with 0.1 whatever label_smoothing is", _LOSS,
               loss_paper_smoothing_always,
               case="no smoothing, every row ending in padding", alone=True),
    PlantedBug("padding counted in the mean", _LOSS, loss_padding_in_count,
               case="no smoothing, every row ending in padding"),
    PlantedBug("padding's losses in the sum", _LOSS, loss_padding_in_sum,
               case="no smoothing, every row ending in padding"),
    PlantedBug("smoothing eps/(V-1) off the label", _LOSS,
               loss_smoothing_off_the_label,
               case="label smoothing 0.1, no padding"),
    PlantedBug("(1 - eps) missing on the label", _LOSS,
               loss_label_keeps_one,
               case="label smoothing 0.1, no padding"),
    PlantedBug("a row's length at its first <pad>", _LOSS,
               loss_length_at_first_pad,
               case="label smoothing 0.1, no padding", alone=True),
    PlantedBug("mean of the sentences' means", _LOSS,
               loss_mean_of_sentence_means,
               case="rows with different numbers of real tokens"),
    PlantedBug("mean of the non-empty sentences' means", _LOSS,
               loss_mean_of_nonempty_sentence_means,
               case="rows with different numbers of real tokens", alone=True),
    PlantedBug("<pad> taken to be 0", _LOSS, loss_pad_is_zero,
               case="padding with another id (pad_id=5)", alone=True),
    PlantedBug("log of softmax", _LOSS, loss_log_of_softmax,
               case="large logits, around 100 (a confident model)", alone=True),
    PlantedBug("no gradient", _LOSS, loss_without_gradient,
               case="the gradient with respect to the logits", alone=True),
]

_GREEDY = check_greedy_decode
_SAME_STEP = "every row ends at the same step"
_DIFFERENT_STEPS = "rows that end at different steps, the last at max_len"
_TRANSFORMER = ("a small random Transformer handed over in training mode, "
                "no row ending")
BUGS += [
    PlantedBug("does not stop at <eos>", _GREEDY, greedy_no_stop,
               case=_SAME_STEP, alone=True),
    PlantedBug("returns the leading <bos>", _GREEDY, greedy_keeps_bos,
               case=_SAME_STEP),
    PlantedBug("reads logits[:, 0]", _GREEDY, greedy_first_position,
               case=_SAME_STEP),
    PlantedBug("stops when the first row ends", _GREEDY,
               greedy_stops_at_first_end, case=_DIFFERENT_STEPS, alone=True),
    PlantedBug("writes tokens after a row's <eos>", _GREEDY,
               greedy_writes_after_eos, case=_DIFFERENT_STEPS, alone=True),
    PlantedBug("max_len - 1 steps", _GREEDY, greedy_one_step_short,
               case=_DIFFERENT_STEPS),
    PlantedBug("may write <bos>", _GREEDY, greedy_may_write_bos,
               case="a step where <bos> has the largest logit"),
    PlantedBug("may write <pad>", _GREEDY, greedy_may_write_pad,
               case="a step where <pad> has the largest logit", alone=True),
    PlantedBug("decodes with dropout on", _GREEDY, greedy_with_dropout,
               case=_TRANSFORMER, alone=True),
    PlantedBug("no src_valid_lens", _GREEDY, greedy_without_lengths,
               case=_TRANSFORMER, alone=True),
]

_EPOCH = check_train_epoch
_CLIPPED = "one epoch, the gradients clipped to norm 0.5"
BUGS += [
    PlantedBug("no zero_grad", _EPOCH, epoch_no_zero_grad, case=_CLIPPED),
    PlantedBug("no clipping", _EPOCH, epoch_no_clipping, case=_CLIPPED, alone=True),
    PlantedBug("learning rate of the step after", _EPOCH,
               epoch_steps_from_one, case=_CLIPPED),
    PlantedBug("model left in eval mode", _EPOCH, epoch_left_in_eval_mode,
               case="one epoch of a model handed over in eval mode "
                    "(with dropout)", alone=True),
    PlantedBug("no set_epoch", _EPOCH, epoch_no_set_epoch,
               case="two epochs at a constant rate (a new order of the "
                    "batches)", alone=True),
    PlantedBug("steps counted from 0 in every epoch", _EPOCH,
               epoch_steps_restart,
               case="two epochs of a warm-up and decay, the batches in "
                    "one order", alone=True),
]
