"""The residual connection followed by layer normalisation ("Add & Norm",
post-norm).

Vaswani et al. (2017), sections 3.1 and 5.4: the output of each sub-layer
is LayerNorm(x + Dropout(Sublayer(x))).
"""

from __future__ import annotations

from torch import nn

from .._checks import check_probability, check_tensor


class AddNorm(nn.Module):
    """``AddNorm(X, Y) = LayerNorm(X + Dropout(Y))``: ``X`` is the
    sub-layer's input, ``Y`` its output.

    ``norm="batch"`` uses BatchNorm over the feature axis instead
    (statistics over the batch *and* every position, padding included):
    for the LayerNorm-vs-BatchNorm chapter.
    """

    def __init__(self, norm_shape, dropout: float = 0.0,
                 norm: str = "layer"):
        super().__init__()
        check_probability("dropout", dropout)
        if norm not in ("layer", "batch"):
            raise ValueError(f"norm must be 'layer' or 'batch', "
                             f"got {norm!r}")
        check_norm_shape(norm_shape, norm)
        self.norm = norm
        self.dropout = nn.Dropout(dropout)
        if norm == "layer":
            self.ln = nn.LayerNorm(norm_shape)
        else:
            self.bn = nn.BatchNorm1d(norm_shape)

    def forward(self, X, Y):
        """X, Y: ``(..., *norm_shape)``, one shape -> the same shape."""
        check_tensor("X", X, kind="float")
        check_tensor("Y", Y, kind="float")
        if X.shape != Y.shape:
            raise ValueError(
                f"X (the residual) and Y (the sub-layer output) must have "
                f"one shape, got {tuple(X.shape)} and {tuple(Y.shape)}")
        Z = self.dropout(Y) + X
        if self.norm == "layer":
            return self.ln(Z)
        # BatchNorm1d wants the features on axis 1: (B, d, T)
        return self.bn(Z.transpose(1, -1)).transpose(1, -1)


def check_norm_shape(norm_shape, norm: str) -> None:
    """The normalised features: d (a positive int), or for LayerNorm a
    tuple of positive ints, the last axes of X (BatchNorm normalises one
    feature axis, so it takes an int)."""
    shape = norm_shape if isinstance(norm_shape, (tuple, list)) else (
        norm_shape,)
    if norm == "batch" and len(shape) != 1:
        raise ValueError(f"norm_shape must be one int (the features) for "
                         f"norm='batch', got {norm_shape!r}")
    if not shape or not all(isinstance(n, int) and not isinstance(n, bool)
                            and n > 0 for n in shape):
        raise ValueError(f"norm_shape must be a positive int (d) or a "
                         f"tuple of them, got {norm_shape!r}")
