"""Host overhead per call from Python: tilec's launch path (in-memory kernel hit, validation,
launch) and whole API functions, next to a torch elementwise add on the same inputs.
Measured as wall time per call over many asynchronous calls of a tiny problem; the custom-op path
(torch.ops.tilec.*, what torch.compile's graphs call) next to the direct call, and the replay of a
CUDA graph that captured a call. The API rows run through argument plans (tilec._plan) from the
third call on; bench/host_overhead.py times every public function the same way, with and without
plans (on a CUDA machine, or over the runtime's stand-in driver without one)."""
import os
import sys
import time

_root = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(os.environ.get("TILEC_DIST", os.path.join(_root, "dist")), "python"))

import torch  # noqa: E402

import tilec  # noqa: E402
from tilec import _runtime  # noqa: E402


def per_call_us(fn, n=20000):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / n * 1e6


def main():
    x = torch.randn((1, 64, 64), device="cuda").bfloat16()
    out = torch.empty((1, 64, 64), device="cuda").bfloat16()
    y = torch.randn((1, 64, 64), device="cuda").bfloat16()
    tilec.transpose.batched_transpose(x)  # compile + load
    k = _runtime.kernel("batched_transpose", ("T=bf16", "BX=64", "BY=64", "SA=8"), x)
    s = _runtime.stream(x)
    res = {
        "torch.add (a + b)": per_call_us(lambda: torch.add(x, y)),
        "torch.add(out=)": per_call_us(lambda: torch.add(x, y, out=out)),
        "tilec kernel.launch (validation + launch)": per_call_us(lambda: k.launch(x, out, stream=s)),
        "tilec transpose.batched_transpose (whole API)": per_call_us(lambda: tilec.transpose.batched_transpose(x)),
    }
    xq = torch.randn((4, 256), device="cuda").bfloat16()
    tilec.quant.per_token_cast(xq, "e4m3", 128)
    res["tilec quant.per_token_cast (whole API)"] = per_call_us(lambda: tilec.quant.per_token_cast(xq, "e4m3", 128))
    # the same function through its torch custom op (the path torch.compile's graphs take)
    op, op_args = tilec.quant.per_token_cast.op, tilec.quant.per_token_cast.op_args(xq, "e4m3", 128)
    res["torch.ops.tilec.per_token_cast (custom op)"] = per_call_us(lambda: op(*op_args))
    idx = torch.randint(0, 64, (4, 8), device="cuda")
    tilec.moe.get_fused_mapping(idx, 64, 1024, 16)
    res["tilec moe.get_fused_mapping (fixed size)"] = per_call_us(lambda: tilec.moe.get_fused_mapping(idx, 64, 1024, 16))
    # the op path inside a compiled graph, replayed as a CUDA graph: the host cost of a replay
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        tilec.quant.per_token_cast(xq, "e4m3", 128)
    res["CUDA graph replay of per_token_cast"] = per_call_us(g.replay)
    for k2, v in res.items():
        print(f"{k2:50s} {v:7.2f} us/call")


if __name__ == "__main__":
    main()
