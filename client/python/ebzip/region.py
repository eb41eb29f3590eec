"""Reading part of an archive: ebzip.open(path_or_bytes)[3, :, 100:200].

An Archive validates the archive's structure once (ebzip.info) and answers
NumPy basic indexing (integers, slices with positive steps, Ellipsis) by
decoding only the frames the selection meets, in this process
(codec/region.h through the _ebzip extension): the values are exactly those
a full decode has there. A path is memory-mapped, so only the headers and
the frames a selection needs are read from disk.

With server= the same indexing runs on an ebzipd: each indexing operation
is one Decompress call with a region, so only the region's values cross
the network. The archive is the caller's (a path or bytes, sent with each
call) or, with remote_path=, a file under the server's --archive_root that
never leaves the server.
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

    def __init__(self, source: Union[str, os.PathLike, _client.BytesLike, None] = None, *,
                 server: Optional[str] = None,
                 remote_path: Optional[str] = None,
                 client: Optional[_client.Client] = None,
                 **client_options: Any):
        self._file = None
        self._map: Optional[mmap.mmap] = None
        self._client: Optional[_client.Client] = None
        self._own_client = False
        self._remote_path = remote_path
        if server is not None or client is not None or remote_path is not None:
            if client is None:
                if server is None:
                    raise TypeError('remote_path needs server= (or client=)')
                client = _client.Client(server, **client_options)
                self._own_client = True
            elif client_options:
                raise TypeError('client options go to the Client, not with client=')
            self._client = client
            if (source is None) == (remote_path is None):
                self.close()
                raise TypeError('give the archive (a path or bytes) or remote_path=, not both')
        elif source is None:
            raise TypeError('ebzip.open needs an archive: a path or bytes (or server= and '
                            'remote_path=)')
        if source is None:
            self._data: Any = None
            self._init_from_server()
            return
        if isinstance(source, (str, os.PathLike)):
            self._file = builtins.open(source, 'rb')  # pylint: disable=consider-using-with
            try:
                self._map = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file: let the codec say what is wrong
                self._map = None
            self._data: Any = self._map if self._map is not None else b''
        else:
            self._data = source
        if self._client is not None:
            try:
                self._init_from_info(_local.info(self._data))
            except ImportError:  # a remote-only installation: the server reads it
                self._init_from_server()
            return
        self._init_from_info(_local.info(self._data))

    def _init_from_info(self, info: Any) -> None:
        self.info = info
        self.shape: Tuple[int, ...] = tuple(int(d) for d in self.info['shape'])
        self.dtype = np.dtype('<f4' if self.info['dtype'] == 'float32' else '<f8')
        self.ndim = len(self.shape)
        self.bound = float(self.info['abs_bound'])
        self.fill_value = self.info['fill_value']
        self.metadata = self.info['metadata']

    def _init_from_server(self) -> None:
        """shape, dtype and bound from the server's header-only reply; the
        fill value and metadata are not in it (None and '')."""
        try:
            header = self._client.archive_header(
                None if self._remote_path is not None else self._data,
                remote_path=self._remote_path)
        except BaseException:
            self.close()
            raise
        whole = header.archive_array
        dtype = 'float32' if whole.dtype == _client.ebzip_pb2.FLOAT32 else 'float64'
        self._init_from_info({'shape': list(whole.shape), 'dtype': dtype,
                              'abs_bound': header.abs_error_bound, 'fill_value': None,
                              'metadata': ''})

    def __enter__(self) -> 'Archive':
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        self._data = None
        self._remote_path = None
        if self._client is not None and self._own_client:
            self._client.close()
        self._client = None
        if self._map is not None:
            self._map.close()
            self._map = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        where = '' if self._client is None else ', remote'
        return (f'ebzip.Archive(shape={self.shape}, dtype={self.dtype.name}, '
                f'bound={self.bound!r}{where})')

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
        if self._data is None and self._remote_path is None:
            raise ValueError('the archive is closed')
        if out is None:
            out = np.empty(count, dtype=self.dtype)
        elif (out.shape != tuple(count) or out.dtype != self.dtype or
              not out.flags.c_contiguous or not out.flags.writeable):
            raise ValueError(f'out must be a writable C-contiguous {self.dtype.name} array '
                             f'of shape {tuple(count)}')
        if self._client is not None:
            return self._client.decompress(
                self._data, out=out, region=(start, count, step),
                remote_path=self._remote_path)
        _local._call(  # pylint: disable=protected-access
            _local._codec().decompress_region_into, self._data, out, start, count, step)
        return out


def open(source: Union[str, os.PathLike, _client.BytesLike, None] = None,  # pylint: disable=redefined-builtin
         *, server: Optional[str] = None, remote_path: Optional[str] = None,
         client: Optional[_client.Client] = None, **client_options: Any) -> Archive:
    """Opens an archive for whole or partial reads: ebzip.open(path)[3, :, 100:200].

    source is a path or bytes-like, decoded in this process; with server=
    (an address; client_options such as tls_ca=, token=, timeout= go to its
    ebzip.Client) or client= (an open Client, left open), each read is a
    region request to that ebzipd, and remote_path= names an archive under
    the server's --archive_root instead of source."""
    return Archive(source, server=server, remote_path=remote_path, client=client,
                   **client_options)


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
