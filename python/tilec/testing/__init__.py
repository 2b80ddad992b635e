"""Test helpers (``tile_kernels.testing``): ``numeric`` (exact comparison, relative difference,
rounding bias, byte counts), ``bench`` (parameter ids, timing summaries), ``generator`` (test
grids and inputs) and ``quant`` (clearing unused packed scale bytes, tilec's quantisation
generators). The names the tests use are also re-exported here."""
from . import bench, numeric, generator, quant
from .quant import clear_unused_sf
from .numeric import assert_close_to_exact, assert_equal, calc_diff, calc_diff_to_exact, check_bias, count_bytes
from .generator import generate_hidden_sizes, generate_num_tokens, generate_rand_float
from .quant import clamp_abs_ratio, expand_rows, generate_e5m6_inputs, generate_fused_mapping

__all__ = ["bench", "numeric", "generator", "quant", "clear_unused_sf", "assert_close_to_exact", "assert_equal", "calc_diff",
           "calc_diff_to_exact", "check_bias",
           "count_bytes", "generate_hidden_sizes", "generate_num_tokens", "generate_rand_float", "clamp_abs_ratio",
           "expand_rows", "generate_e5m6_inputs", "generate_fused_mapping"]
