"""Masked arrays (numpy.ma) in, masked arrays out: the mask is the fill value.

netCDF4-python returns masked arrays by default, and numpy.asarray() of one
silently drops the mask, leaving whatever the masked elements hold (often a
-1e10 or 1e20 fill) to be compressed as data: a relative bound then resolves
over that fill. Every compress entry point, local or remote, goes through
unmask() first, so that the mask becomes the archive's fill value (restored
bit for bit, left out of the range) or an error says how to give one.
"""

from __future__ import annotations

import math
from typing import Any, Optional, Tuple

import numpy as np


def _narrow(dtype: np.dtype, value: float, what: str) -> float:
    """value as dtype holds it, as a Python float; finite or ValueError."""
    with np.errstate(over='ignore'):
        narrowed = dtype.type(value)
    if not math.isfinite(float(narrowed)):
        raise ValueError(f'{what} {value!r} is not a finite {dtype.name} value')
    return float(narrowed)


def unmask(array: Any, fill_value: Optional[float]) -> Tuple[Any, Optional[float]]:
    """The array to compress and its fill value.

    Anything but a float numpy.ma.MaskedArray with masked elements comes back
    as it is (a MaskedArray without masked elements as its data). For one
    with masked elements, the fill value is fill_value if given, else the
    array's own fill_value; it must be finite in the array's dtype and occur
    nowhere among the unmasked elements (which would come back masked). The
    masked elements are set to it, in a copy unless they already hold it.

    Raises:
        ValueError: No usable fill value; the message says how to pass one.
    """
    if not isinstance(array, np.ma.MaskedArray):
        return array, fill_value
    data = np.ma.getdata(array)
    mask = np.ma.getmask(array)
    if data.dtype.kind != 'f' or mask is np.ma.nomask or not mask.any():
        return data, fill_value  # a non-float dtype is refused further on
    mask = np.broadcast_to(mask, data.shape)
    explicit = fill_value is not None
    candidate = fill_value if explicit else array.fill_value
    source = 'fill_value=' if explicit else "the masked array's fill_value"
    how = ('pass fill_value= a finite value that does not occur in the data, '
           'e.g. fill_value=-1e30, or set the masked array\'s fill_value')
    try:
        fill = _narrow(data.dtype, float(candidate), source)
    except (TypeError, ValueError) as e:
        raise ValueError(f'ebzip stores masked elements as a fill value, but '
                         f'{e}; {how}') from None
    hits = (data == data.dtype.type(fill)) & ~mask
    if hits.any():
        raise ValueError(
            f'ebzip stores masked elements as a fill value, but {source} '
            f'{fill!r} also occurs in {int(hits.sum())} unmasked elements, '
            f'which would come back masked; {how}')
    del hits
    held = data[mask]
    if held.size and np.all(held == data.dtype.type(fill)):
        return data, fill  # masked elements already hold the fill: no copy
    return np.where(mask, data.dtype.type(fill), data), fill


def remask(array: np.ndarray, fill_value: Optional[float]) -> np.ma.MaskedArray:
    """array as a masked array whose mask is where it holds fill_value.

    Compared bit for bit, as the codec restores fill values; without a fill
    value nothing is masked.
    """
    if fill_value is None:
        return np.ma.MaskedArray(array, mask=np.zeros(array.shape, bool))
    bits = array.dtype.str.replace('f', 'u')
    fill_bits = np.array([fill_value], array.dtype).view(bits)[0]
    mask = array.view(bits) == fill_bits
    return np.ma.MaskedArray(array, mask=mask, fill_value=fill_value)
