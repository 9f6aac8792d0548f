"""The residual connection followed by layer normalisation ("Add & Norm", post-norm).

Vaswani et al. (2017), section 5.4 and 3.1: the output of each sub-layer is
LayerNorm(x + Dropout(Sublayer(x))).
"""

from __future__ import annotations

from torch import nn

from ._checks import check_probability, check_tensor


class AddNorm(nn.Module):
    """``AddNorm(X, Y) = LayerNorm(X + Dropout(Y))``; ``X`` is the sub-layer's input, ``Y`` its output."""

    def __init__(self, norm_shape, dropout: float = 0.0):
        super().__init__()
        check_probability("dropout", dropout)
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X, Y):
        """X, Y: ``(..., *norm_shape)`` of one shape -> the same shape."""
        check_tensor("X", X, kind="float")
        check_tensor("Y", Y, kind="float")
        if X.shape != Y.shape:
            raise ValueError(
                f"X (the residual) and Y (the sub-layer output) must have one shape, got "
                f"{tuple(X.shape)} and {tuple(Y.shape)}"
            )
        return self.ln(self.dropout(Y) + X)
