"""The position-wise feed-forward network: the same two-layer MLP applied
at every position.

Vaswani et al. (2017), eq. (2):  FFN(x) = max(0, x W_1 + b_1) W_2 + b_2

GPT and BERT replace max(0, .) by the GELU (Hendrycks and Gimpel 2016),
x Phi(x), with Phi the standard normal's distribution function.
"""

from __future__ import annotations

from torch import nn

from .._checks import check_positive_int, check_tensor, size_or


ACTIVATIONS = {"relu": nn.ReLU, "gelu": nn.GELU}


class PositionWiseFFN(nn.Module):
    """``(..., num_inputs)`` -> ``(..., ffn_num_outputs)`` through
    ``ffn_num_hiddens`` ReLU units (``activation="gelu"``: GELU units).

    The argument order is d2l's; ``num_inputs`` (default:
    ``ffn_num_outputs``) replaces d2l's lazily sized first layer, so every
    weight has its shape at construction.
    """

    def __init__(self, ffn_num_hiddens: int, ffn_num_outputs: int,
                 num_inputs: int | None = None, bias: bool = True,
                 activation: str = "relu"):
        super().__init__()
        check_positive_int("ffn_num_hiddens", ffn_num_hiddens)
        check_positive_int("ffn_num_outputs", ffn_num_outputs)
        self.num_inputs = size_or("num_inputs", num_inputs, ffn_num_outputs)
        self.dense1 = nn.Linear(self.num_inputs, ffn_num_hiddens, bias=bias)
        if activation not in ACTIVATIONS:
            raise ValueError(f"activation must be one of "
                             f"{tuple(ACTIVATIONS)}, got {activation!r}")
        self.activation = ACTIVATIONS[activation]()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs, bias=bias)

    def forward(self, X):
        check_tensor("X", X, kind="float", last_dim=self.num_inputs)
        return self.dense2(self.activation(self.dense1(X)))
