"""Warnings for compressions that succeed but are probably not what was meant.

Two cases, both raised with warnings.warn so that they can be turned into
errors (warnings.simplefilter('error', ebzip.EbzipWarning)) or silenced:

DominatedRangeWarning: a relative bound is relative to the range of the
finite values that are not the fill value. An undeclared fill (-1e10 on
land, -9999, 1e20) or a few wild values stretch that range, and every
ordinary value gets an error that is large against its own spread. The test
looks at a sample of SAMPLE_SIZE elements (chosen with a fixed seed, so the
same array always gives the same answer: SplitMix64 from 0, each output
modulo the size, which `ebzip compress` draws too, client/cli/safety.h, so
that both warn about the same arrays) against the exact range the codec
used (the archive's absolute bound divided by rel):

  1. a repeated extreme: the sample's minimum (or maximum) occurs at least
     twice and the range is more than REPEATED_RATIO (10) times the spread of
     the other sampled values, i.e. one value sits far off the rest;
  2. a few wild values: the range is more than TAIL_RATIO (1000) times the
     spread of the sample's middle 99.8 % (0.1 % cut at each end).

The spread of a set of values is max - min, or the largest magnitude when
they are all equal; nothing is reported when it is 0 (an all-zero sample
says nothing of the values it missed) or when the sample has fewer than two
values. The cost is a gather of SAMPLE_SIZE elements and a sort of them.

LargerArchiveWarning: the archive came out larger than the array (noise, a
bound far below the data's precision, or many NaNs, which are stored
verbatim: xarray writes missing values as NaN unless the variable's encoding
has a _FillValue); storing the array raw would be smaller.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import Optional

import numpy as np

SAMPLE_SIZE = 1 << 16
REPEATED_RATIO = 10.0
TAIL_RATIO = 1000.0
TAIL_FRACTION = 0.001
SMALL_INPUT_BYTES = 4096  # below, the archive's fixed overhead is the reason


class EbzipWarning(UserWarning):
    """Base class of ebzip's warnings."""


class DominatedRangeWarning(EbzipWarning):
    """A relative bound's range is dominated by values far off the rest."""


class LargerArchiveWarning(EbzipWarning):
    """The archive is larger than the array it holds."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _caller_stacklevel() -> int:
    """The stacklevel of the first frame outside this package.

    So that a warning points at the user's call, however deep inside ebzip
    (and numcodecs/zarr wrappers around it) it was raised.
    """
    level = 1
    frame = sys._getframe(1)  # pylint: disable=protected-access
    while frame is not None and os.path.dirname(
            os.path.abspath(frame.f_code.co_filename)) == _PACKAGE_DIR:
        frame = frame.f_back
        level += 1
    return level


def _spread(values: np.ndarray) -> float:
    if values.size == 0:
        return 0.0
    lo, hi = float(values[0]), float(values[-1])  # values are sorted
    return hi - lo if hi > lo else abs(hi)


def _sample_indices(n: int) -> np.ndarray:
    """SAMPLE_SIZE indices below n: SplitMix64 seeded with 0, modulo n.

    The command line's sample (client/cli/safety.cc) is the same. NumPy's
    uint64 array arithmetic wraps, as the generator needs.
    """
    z = np.arange(1, SAMPLE_SIZE + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z ^= z >> np.uint64(31)
    return z % np.uint64(n)


def _sample(array: np.ndarray, fill_value: Optional[float]) -> np.ndarray:
    """Up to SAMPLE_SIZE finite, non-fill elements as sorted float64."""
    flat = array.reshape(-1)
    if flat.size > SAMPLE_SIZE:
        flat = flat[_sample_indices(flat.size)]
    s = flat.astype(np.float64)
    keep = np.isfinite(s)
    if fill_value is not None:
        keep &= s != float(array.dtype.type(fill_value))
    s = s[keep]
    s.sort()
    return s


def dominated_range(array: np.ndarray, fill_value: Optional[float],
                    full_range: float) -> Optional[str]:
    """Why the range is dominated by a few values (the module's rule), or None.

    Args:
        array: The array that was compressed (C-contiguous float32/float64).
        fill_value: The fill value it was compressed with, or None.
        full_range: The range the relative bound resolved over.
    """
    if not full_range > 0 or not np.isfinite(full_range):
        return None
    s = _sample(array, fill_value)
    if s.size < 2:
        return None
    for value in (s[0], s[-1]):
        count = int(np.count_nonzero(s == value))
        if count < 2:
            continue
        rest = s[s != value]
        spread = _spread(rest)
        if spread > 0 and full_range > REPEATED_RATIO * spread:
            share = 100.0 * count / s.size
            return (f'the value {value:.7g} ({share:.3g} % of a sample) lies far '
                    f'off the rest, which spread over {spread:.4g} of the range '
                    f'{full_range:.4g} the relative bound is taken of; if it '
                    f'marks missing data, pass fill_value={value:.9g} (or a '
                    f'masked array)')
    cut = int(s.size * TAIL_FRACTION)
    middle = s[cut:s.size - cut] if cut else s
    spread = _spread(middle)
    if spread > 0 and full_range > TAIL_RATIO * spread:
        return (f'99.8 % of a sample spreads over {spread:.4g}, but the range '
                f'the relative bound is taken of is {full_range:.4g}: a few '
                f'values far off the rest set the bound; give them as '
                f'fill_value= or a mask, or use abs=')
    return None


def warn_dominated_range(array: np.ndarray, fill_value: Optional[float],
                         rel: float, abs_bound: float) -> None:
    """Warns per the module's rule after a compression with rel=."""
    reason = dominated_range(array, fill_value, abs_bound / rel)
    if reason is not None:
        warnings.warn(f'ebzip: rel={rel:g} gives every value an error of up '
                      f'to {abs_bound:.4g}: {reason}', DominatedRangeWarning,
                      stacklevel=_caller_stacklevel())


def warn_larger_archive(archive_bytes: int, input_bytes: int,
                        array: Optional[np.ndarray] = None) -> None:
    """Warns when an archive is larger than its input.

    With the array at hand (looked at only then), says how many of its
    elements are NaN or Inf: they are stored verbatim, which costs more than
    the element itself, and a finite fill value in their place (xarray's
    _FillValue with the same fill_value=) costs next to nothing.
    """
    if archive_bytes <= input_bytes:
        return
    hint = ('the data may be noise at this bound, or the bound far below its '
            'precision')
    if input_bytes < SMALL_INPUT_BYTES:
        hint = ('an archive carries some 400 bytes of headers and index, so '
                'compress larger arrays (or chunks)')
    elif array is not None:
        nonfinite = array.size - int(np.count_nonzero(np.isfinite(array)))
        if nonfinite * 100 >= array.size:
            hint = (f'{nonfinite} of its {array.size} values are NaN or Inf, '
                    f'each stored verbatim; mark missing data with a finite '
                    f'fill value and pass it as fill_value= instead')
    warnings.warn(f'ebzip: the archive ({archive_bytes} bytes) is larger than '
                  f'the array ({input_bytes} bytes): {hint}',
                  LargerArchiveWarning, stacklevel=_caller_stacklevel())
