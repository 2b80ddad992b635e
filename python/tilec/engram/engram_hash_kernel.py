"""The n-gram hashes of Engram's embedding lookups (spec moe-engram-mhc.md §2.1)."""
import torch

from .. import _runtime
from .._ops import kernel_op
from .common import check_shape, check_tensor


@kernel_op(returns="tensor")
def engram_hash(ngram_token_ids: torch.Tensor, multipliers: torch.Tensor, vocab_sizes: torch.Tensor,
                offsets: torch.Tensor) -> torch.Tensor:
    """int32 (L, T, (M - 1) * B) embedding rows, bit-exact: for layer l and token t,
    h = XOR over n < M of int64(ngram_token_ids[t, n]) * multipliers[l, n] (64-bit products
    wrapping around); after each n >= 1, table j of n-gram order n + 1 gets
    floormod(h, vocab_sizes[l, n - 1, j]) (in [0, vocab), as Python's %) + offsets[l, c],
    c = (n - 1) * B + j. ngram_token_ids int32 (T, M), M >= 2; multipliers int64 (L, M);
    vocab_sizes int32 (L, M - 1, B), positive; offsets int32 (L, (M - 1) * B) (make_offsets).
    All contiguous."""
    fn = "engram_hash"
    check_tensor(fn, "ngram_token_ids", ngram_token_ids, (torch.int32,), 2)
    T, M = ngram_token_ids.shape
    if M < 2:
        raise ValueError(f"{fn}: ngram_token_ids must have at least 2 columns (max_ngram_size >= 2), got {M}")
    check_tensor(fn, "multipliers", multipliers, (torch.int64,), 2)
    L = multipliers.shape[0]
    check_shape(fn, "multipliers", multipliers, (L, M), "(num_ngram_layers, max_ngram_size)")
    if L > 65535:
        raise ValueError(f"{fn}: at most 65535 layers, got {L}")
    check_tensor(fn, "vocab_sizes", vocab_sizes, (torch.int32,), 3)
    B = vocab_sizes.shape[2]
    check_shape(fn, "vocab_sizes", vocab_sizes, (L, M - 1, B),
                "(num_ngram_layers, max_ngram_size - 1, num_embed_table_per_ngram)", "multipliers")
    if B == 0:
        raise ValueError(f"{fn}: vocab_sizes must have at least one table per n-gram order")
    check_tensor(fn, "offsets", offsets, (torch.int32,), 2)
    check_shape(fn, "offsets", offsets, (L, (M - 1) * B),
                "(num_ngram_layers, (max_ngram_size - 1) * num_embed_table_per_ngram)")
    out = torch.empty((L, T, (M - 1) * B), dtype=torch.int32, device=ngram_token_ids.device)
    if T == 0 or L == 0:
        return out
    _runtime.kernel("engram_hash", (f"MN={M}", f"B={B}"), ngram_token_ids).launch(
        ngram_token_ids, multipliers, vocab_sizes, offsets, out, stream=_runtime.stream(ngram_token_ids))
    return out
