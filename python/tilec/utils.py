"""Integer helpers of the whole package (``tile_kernels.utils``): the one definition of ceil_div
and align."""


def ceil_div(x: int, y: int) -> int:
    """x / y rounded up, for x >= 0 and y > 0."""
    return (x + y - 1) // y


def align(x: int, y: int) -> int:
    """x rounded up to a multiple of y."""
    return ceil_div(x, y) * y


def is_power_of_two(x: int) -> bool:
    return x > 0 and (x & (x - 1)) == 0
