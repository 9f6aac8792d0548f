"""Heatmaps of attention weights and positional encodings, and loss
curves (matplotlib; each function returns its figure)."""

from __future__ import annotations

import io

import numpy as np


def _pyplot():
    import matplotlib.pyplot as plt

    return plt


def _as_numpy(x):
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy()
    return np.asarray(x)


def show_heatmaps(matrices, *, xlabel="Keys", ylabel="Queries", titles=None,
                  xticklabels=None, yticklabels=None, figsize=None,
                  cmap="Reds", vmin=0.0, vmax=None, colorbar=True):
    """A grid of heatmaps with one shared colour scale (d2l's
    ``show_heatmaps``, returning the figure).

    matrices: ``(rows, cols, Q, K)`` (tensor or array), or ``(n, Q, K)``
    for one row, or ``(Q, K)``.  titles: one per column (e.g.
    ``"Head 1"``), or ``None``.  xticklabels / yticklabels: token strings
    for the axes, or ``None`` for indices.
    """
    m = _as_numpy(matrices)
    if m.ndim == 2:
        m = m[None, None]
    elif m.ndim == 3:
        m = m[None]
    if m.ndim != 4:
        raise ValueError(f"matrices must have 2, 3 or 4 dimensions, "
                         f"got shape {m.shape}")
    rows, cols, Q, K = m.shape
    if titles is not None and (isinstance(titles, str)
                               or len(titles) < cols):
        raise ValueError(f"titles must be a list of {cols} (one per "
                         f"column), got {titles!r:.60}")
    for name, labels, n in [("xticklabels", xticklabels, K),
                            ("yticklabels", yticklabels, Q)]:
        if labels is not None and len(labels) != n:
            raise ValueError(f"{name} must have {n} labels, got "
                             f"{len(labels)}")
    plt = _pyplot()
    if figsize is None:
        figsize = (min(2.2 + 0.25 * K, 4.0) * cols + 0.8,
                   min(1.8 + 0.25 * Q, 4.0) * rows)
    fig, axes = plt.subplots(rows, cols, figsize=figsize, sharex=True,
                             sharey=True, squeeze=False)
    vmax = float(m.max()) if vmax is None else vmax
    image = None
    for i in range(rows):
        for j in range(cols):
            ax = axes[i, j]
            image = ax.imshow(m[i, j], cmap=cmap, vmin=vmin, vmax=vmax,
                              aspect="auto")
            if i == rows - 1:
                ax.set_xlabel(xlabel)
            if j == 0:
                ax.set_ylabel(ylabel)
            if titles is not None and i == 0:
                ax.set_title(titles[j])
            if xticklabels is not None:
                ax.set_xticks(range(K), xticklabels, rotation=90)
            if yticklabels is not None:
                ax.set_yticks(range(Q), yticklabels)
    if colorbar:
        fig.colorbar(image, ax=axes, shrink=0.8)
    return fig


def plot_positional_encoding(P, *, columns=(6, 7, 8, 9), figsize=(10, 3.2)):
    """Left: the encoding matrix ``P`` ``(positions, d)`` as a heatmap;
    right: selected columns as curves over the positions."""
    P = _as_numpy(P)
    if P.ndim != 2:
        raise ValueError(f"P must be (positions, d), got shape {P.shape}")
    outside = [c for c in columns if not -P.shape[1] <= c < P.shape[1]]
    if outside:
        raise ValueError(f"columns must be encoding dimensions 0 to "
                         f"{P.shape[1] - 1}, got {outside}")
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize)
    image = left.imshow(P, cmap="Blues", aspect="auto")
    left.set_xlabel("Encoding dimension")
    left.set_ylabel("Position")
    fig.colorbar(image, ax=left)
    for c in columns:
        right.plot(np.arange(P.shape[0]), P[:, c], label=f"col {c}")
    right.set_xlabel("Position")
    right.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    return fig


def plot_loss_curves(histories, *, figsize=(10, 3.6)):
    """Loss against training time for runs of
    :func:`~transformer_lib.translation.training.fit`.

    histories: ``{"label": History, ...}``.  Left: the training loss (the
    mean over each log interval); right: the validation loss after each
    epoch (or at the end of a time budget).  Both against seconds of
    training, so that runs of different speed compare at equal cost.
    """
    if not isinstance(histories, dict):
        raise TypeError(f"histories must be a dict {{label: History}}, "
                        f"e.g. {{'Transformer': history}}, got "
                        f"{type(histories).__name__}")
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=figsize, sharex=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for (label, h), colour in zip(histories.items(), colours):
        left.plot(h.seconds, h.train_loss, color=colour, linewidth=1,
                  label=label)
        if h.validation:
            right.plot([v.seconds for v in h.validation],
                       [v.loss for v in h.validation], "o-", color=colour,
                       label=label)
    left.set_title("training loss (label-smoothed)")
    right.set_title("validation loss")
    for ax in (left, right):
        ax.set_xlabel("seconds of training")
        ax.set_ylabel("cross-entropy per target token")
        if ax.lines:
            ax.legend()
    fig.tight_layout()
    return fig


def figure_to_png(fig, dpi: int = 80) -> bytes:
    """The PNG bytes of ``fig``; the figure is closed (so that notebooks
    do not show it twice)."""
    if not hasattr(fig, "savefig"):
        raise TypeError(f"expected a matplotlib figure, got "
                        f"{type(fig).__name__} (does the render function "
                        f"end with `return fig`?)")
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi, bbox_inches="tight")
    _pyplot().close(fig)
    return buffer.getvalue()


__all__ = ["figure_to_png", "plot_loss_curves", "plot_positional_encoding",
           "show_heatmaps"]
