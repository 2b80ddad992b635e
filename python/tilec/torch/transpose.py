"""Reference transposes (spec quant-transpose.md §2.19, §2.20)."""
import torch


def transpose(x: torch.Tensor) -> torch.Tensor:
    return x.T.contiguous()


def batched_transpose(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(1, 2).contiguous()
