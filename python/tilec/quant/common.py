"""Scale-factor layouts shared by the quantisation functions (spec quant-transpose.md §1.4)."""
import torch


def ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def align(a: int, b: int) -> int:
    return ceil_div(a, b) * b


def get_sf_shape(num_rows: int, hidden: int, block_size):
    """(sf rows, sf columns) of a (num_rows, hidden) tensor quantised in blocks of block_size."""
    bm, bn = block_size
    return ceil_div(num_rows, bm), ceil_div(hidden, bn)


def alloc_scaling_factors(nm: int, nk: int, use_tma_aligned_col_major_sf: bool, use_packed_ue8m0: bool, device):
    """The sf tensor in the layout of §1.4: row-major f32 (nm, nk); TMA-aligned column-major f32
    (strides (1, align(nm, 4))); or packed UE8M0, int32 (nm, cdiv(nk, 4)) column-major.
    Returns (sf view, storage): the storage is what kernels write through."""
    if use_packed_ue8m0:
        store = torch.empty((ceil_div(nk, 4), align(nm, 4)), dtype=torch.int32, device=device)
        return store[:, :nm].T, store
    if use_tma_aligned_col_major_sf:
        store = torch.empty((nk, align(nm, 4)), dtype=torch.float32, device=device)
        return store[:, :nm].T, store
    sf = torch.empty((nm, nk), dtype=torch.float32, device=device)
    return sf, sf


def check_layout_flags(use_tma_aligned_col_major_sf: bool, round_sf: bool, use_packed_ue8m0: bool, fn: str):
    if use_packed_ue8m0 and not use_tma_aligned_col_major_sf:
        raise ValueError(f"{fn}: use_packed_ue8m0 needs use_tma_aligned_col_major_sf=True (packed scales are column-major)")
    if use_packed_ue8m0 and not round_sf:
        raise ValueError(f"{fn}: use_packed_ue8m0 needs round_sf=True (UE8M0 holds powers of two only)")
