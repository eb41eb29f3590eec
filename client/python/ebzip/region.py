"""Reading part of an archive: ebzip.open(path_or_bytes)[3, :, 100:200].

An Archive validates the archive's structure once (ebzip.info) and answers
NumPy basic indexing (integers, slices with positive steps, Ellipsis) by
decoding only the frames the selection meets, in this process
(codec/region.h through the _ebzip extension): the values are exactly those
a full decode has there. A path is memory-mapped, so only the headers and
the frames a selection needs are read from disk.
"""

from __future__ import annotations

import builtins
import mmap
import operator
import os
from typing import Any, List, Optional, Tuple, Union

import numpy as np

from ebzip import client as _client
from ebzip import local as _local

Key = Union[int, slice, type(Ellipsis), Tuple[Any, ...]]


class Archive:
    """An archive opened for reading, whole or in parts.

    Attributes: shape, dtype (numpy), ndim, bound (the absolute bound every
    value is within), fill_value (None when the archive has none), metadata
    (the metadata block's JSON text, '' when none), info (the header as
    ebzip.info returns it).
    """

    def __init__(self, source: Union[str, os.PathLike, _client.BytesLike]):
        self._file = None
        self._map: Optional[mmap.mmap] = None
        if isinstance(source, (str, os.PathLike)):
            self._file = builtins.open(source, 'rb')  # pylint: disable=consider-using-with
            try:
                self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file: let the codec say what is wrong
                self._map = None
            self._data: Any = self._map if self._map is not None else b''
        else:
            self._data = source
        self.info = _local.info(self._data)
        self.shape: Tuple[int, ...] = tuple(int(d) for d in self.info['shape'])
        self.dtype = np.dtype('<f4' if self.info['dtype'] == 'float32' else '<f8')
        self.ndim = len(self.shape)
        self.bound = float(self.info['abs_bound'])
        self.fill_value = self.info['fill_value']
        self.metadata = self.info['metadata']

    def __enter__(self) -> 'Archive':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._data = None
        if self._map is not None:
            self._map.close()
            self._map = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return (f'ebzip.Archive(shape={self.shape}, dtype={self.dtype.name}, '
                f'bound={self.bound!r})')

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self[...]
        return out if dtype is None else out.astype(dtype)

    def read(self, out: Optional[np.ndarray] = None) -> np.ndarray:
        """The whole array (as ebzip.decompress), into out when given."""
        return self._region([0] * self.ndim, list(self.shape), [1] * self.ndim, out)

    def __getitem__(self, key: Key) -> np.ndarray:
        start, count, step, keep = _normalize(key, self.shape)
        values = self._region(start, count, step, None)
        # Integer indices drop their dimension, as NumPy's do.
        return values.reshape([c for c, k in zip(count, keep) if k])

    def _region(self, start: List[int], count: List[int], step: List[int],
                out: Optional[np.ndarray]) -> np.ndarray:
        if self._data is None:
            raise ValueError('the archive is closed')
        if out is None:
            out = np.empty(count, dtype=self.dtype)
        elif (out.shape != tuple(count) or out.dtype != self.dtype or
              not out.flags.c_contiguous or not out.flags.writeable):
            raise ValueError(f'out must be a writable C-contiguous {self.dtype.name} array '
                             f'of shape {tuple(count)}')
        _local._call(  # pylint: disable=protected-access
            _local._codec().decompress_region_into, self._data, out, start, count, step)
        return out


def open(source: Union[str, os.PathLike, _client.BytesLike]  # pylint: disable=redefined-builtin
         ) -> Archive:
    """Opens an archive (a path, or bytes-like) for whole or partial reads:
    ebzip.open(path)[3, :, 100:200]."""
    return Archive(source)


def _normalize(key: Key, shape: Tuple[int, ...]
               ) -> Tuple[List[int], List[int], List[int], List[bool]]:
    """(start, count, step, keep) per dimension from NumPy basic indexing:
    integers (negative from the end), slices (steps >= 1; bounds clipped as
    NumPy clips them) and one Ellipsis; fewer items than dimensions select
    the rest whole. IndexError for an integer out of range, ValueError for
    what codec/region.h cannot decode (steps < 1, arrays, None)."""
    items = key if isinstance(key, tuple) else (key,)
    if sum(1 for k in items if k is Ellipsis) > 1:
        raise IndexError('an index can only have a single ellipsis')
    explicit = sum(1 for k in items if k is not Ellipsis)
    if explicit > len(shape):
        raise IndexError(f'too many indices: the archive has {len(shape)} dimensions')
    expanded: List[Any] = []
    for k in items:
        if k is Ellipsis:
            expanded.extend([slice(None)] * (len(shape) - explicit))
        else:
            expanded.append(k)
    expanded.extend([slice(None)] * (len(shape) - len(expanded)))
    start, count, step, keep = [], [], [], []
    for d, (k, extent) in enumerate(zip(expanded, shape)):
        if isinstance(k, slice):
            first, stop, stride = k.indices(extent)
            if stride < 1:
                raise ValueError(f'dimension {d}: ebzip regions take steps of 1 or more, '
                                 f'not {stride}')
            n = max(0, (stop - first + stride - 1) // stride)
            start.append(first if n else 0)
            count.append(n)
            step.append(stride)
            keep.append(True)
            continue
        try:
            i = operator.index(k)
        except TypeError:
            raise ValueError(f'dimension {d}: ebzip regions take integers, slices and '
                             f'Ellipsis, not {type(k).__name__}') from None
        if not -extent <= i < extent:
            raise IndexError(f'index {i} is out of bounds for dimension {d} with size {extent}')
        start.append(i + extent if i < 0 else i)
        count.append(1)
        step.append(1)
        keep.append(False)
    return start, count, step, keep
