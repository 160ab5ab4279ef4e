"""fp32 Linear layers whose output for a token depends on that token alone.

A BLAS matrix product may sum a row's products in another order when the number of rows changes:
with MKL, ``nn.Linear`` on 1 to 11 rows rounds differently from the same rows among more, so a
question's score moved with the size of its batch (and the classifier head, which sees one row per
question, moved with the batch size itself). Here every product runs on blocks of exactly
``ROW_BLOCK`` rows (the token rows, padded with zeros): the library always sees the same shape, so
it runs the same kernel with the same summation order, and a row's result cannot depend on the other
rows of its block. Attention, layer norm and activations already work within one question, given
batches of equal-length questions (no padding).
"""

from __future__ import annotations

import torch

ROW_BLOCK = 256  # rows per matrix product: large enough to run near the machine's fp32 peak


class FixedRowsLinear(torch.nn.Module):
    """``y = x W^T + b``, computed on zero-padded blocks of exactly ``ROW_BLOCK`` rows."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        self.weight = linear.weight
        self.bias = linear.bias if linear.bias is not None else torch.nn.Parameter(
            torch.zeros(linear.out_features), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(-1, x.shape[-1])
        count = rows.shape[0]
        padded_count = -(-count // ROW_BLOCK) * ROW_BLOCK
        padded = rows.new_zeros((padded_count, rows.shape[1]))
        padded[:count] = rows
        out = rows.new_empty((padded_count, self.weight.shape[0]))
        weight_t = self.weight.t()
        for start in range(0, padded_count, ROW_BLOCK):
            torch.addmm(self.bias, padded[start:start + ROW_BLOCK], weight_t, out=out[start:start + ROW_BLOCK])
        return out[:count].reshape(*x.shape[:-1], out.shape[-1])


def fixed_row_linears(model: torch.nn.Module) -> torch.nn.Module:
    """Replace every ``nn.Linear`` in ``model`` by a :class:`FixedRowsLinear` (in place); returns ``model``."""
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, torch.nn.Linear):
                setattr(parent, name, FixedRowsLinear(child))
    return model
