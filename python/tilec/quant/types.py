"""Type aliases of the quantisation API (``tile_kernels.quant.types``)."""
from typing import Tuple

import torch

QuantTensor = Tuple[torch.Tensor, torch.Tensor]  # (data, sf)
