"""Runs a first tilec kernel and says where it ran: tilec.quant.per_token_cast of a bf16 tensor, on
the GPU when torch sees one, else on the CPU emulator, checked byte for byte against the PyTorch
reference. scripts/setup.sh runs it last, after putting dist/python on the path of the python3 on PATH.
"""
import time

import torch

import tilec
from tilec import _runtime


def main():
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(64, 256, dtype=torch.bfloat16, device=dev)
    t0 = time.perf_counter()
    q, sf = tilec.quant.per_token_cast(x, "e4m3", 128)
    if dev == "cuda":
        torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    ref, ref_sf = tilec.torch.cast(x, "e4m3", (1, 128))
    tilec.testing.assert_equal(q, ref)
    tilec.testing.assert_equal(sf, ref_sf)
    stats = _runtime.runtime(x.get_device()).stats()
    source = ("the ahead-of-time fatbin" if stats["aot_hits"] else "the disk cache" if stats["disk_hits"]
              else "compiled just now")
    where = f"the GPU ({torch.cuda.get_device_name()})" if dev == "cuda" else "the CPU emulator"
    print(f"first kernel: tilec.quant.per_token_cast ran on {where}: bf16 {tuple(x.shape)} -> {q.dtype} "
          f"with scales {tuple(sf.shape)}, equal to the reference; kernel {source}, first call {ms:.1f} ms")


if __name__ == "__main__":
    main()
