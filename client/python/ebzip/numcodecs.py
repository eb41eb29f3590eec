"""ebzip as a numcodecs codec, for Zarr, xarray and Dask.

    import ebzip, zarr                    # importing ebzip registers "ebzip"
    from ebzip.numcodecs import Ebzip
    z = zarr.open('out.zarr', mode='w', shape=a.shape, chunks=(1, 180, 360),
                  dtype=a.dtype, compressor=Ebzip(rel=1e-4))
    z[:] = a

Each chunk becomes one ebzip archive, compressed in this process or, with
server=, on that ebzipd. Decoding runs in this process whenever the
in-process codec is built (the archive is self-describing and decodes to the
same bytes anywhere, so a store written through a server reads back where the
server is out of reach); only without it does decoding go to the server.

The codec's configuration (stored in each array's .zarray) holds the bound,
fill value, predictor, lossless stage and server address; never the token or
the TLS root certificate, which come from the constructor or from the
EBZIP_TOKEN and EBZIP_TLS_CA environment variables of the process that runs
the codec (e.g. each Dask worker).

Chunks of 1 to 4 dimensions keep their shape (it is what the predictor works
along); a 0-d chunk is compressed as 1 element, and one of more than 4
dimensions with its leading dimensions merged. An F-ordered chunk is
compressed transposed, so that the decoded bytes come back in its order.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Optional

import numcodecs
import numcodecs.abc
import numcodecs.compat
import numpy as np

from ebzip import client as _client
from ebzip import local as _local


class Ebzip(numcodecs.abc.Codec):
    """numcodecs codec "ebzip": error-bounded lossy compression of floats.

    Args:
        rel, abs: Exactly one: the bound relative to each chunk's range of
            finite non-fill values, or absolute. For a bound that is the
            same over the whole array, use abs= (rel= is per chunk).
        fill_value: Values equal to it come back exactly and stay out of
            rel's range: give the variable's _FillValue/missing_value when
            its chunks hold it.
        server: host:port of an ebzipd to compress on; None: in process.
        predictor: 'auto', 'lorenzo' or 'interp'.
        lossless: 'auto', 'huffman', 'runs' or 'run-values'.
        tls_ca, token: For server=; default: the environment's EBZIP_TLS_CA
            (a PEM file) and EBZIP_TOKEN. Not part of the configuration.
        timeout: Seconds per remote call (default 300; None: no deadline).
    """

    codec_id = 'ebzip'

    def __init__(self,
                 rel: Optional[float] = None,
                 abs: Optional[float] = None,  # pylint: disable=redefined-builtin
                 fill_value: Optional[float] = None,
                 server: Optional[str] = None,
                 predictor: str = 'auto',
                 lossless: str = 'auto',
                 *,
                 tls_ca: Optional[str] = None,
                 token: Optional[str] = None,
                 timeout: Optional[float] = _client.DEFAULT_TIMEOUT):
        _local.bound_args(abs, rel)  # raises on a bad bound, here and now
        if predictor not in ('auto', 'lorenzo', 'interp'):
            raise ValueError(f"predictor must be 'auto', 'lorenzo' or 'interp', "
                             f'not {predictor!r}')
        if lossless not in ('auto', 'huffman', 'runs', 'run-values'):
            raise ValueError(f"lossless must be 'auto', 'huffman', 'runs' or 'run-values', "
                             f'not {lossless!r}')
        self.rel = None if rel is None else float(rel)
        self.abs = None if abs is None else float(abs)
        self.fill_value = None if fill_value is None else float(fill_value)
        self.server = server
        self.predictor = predictor
        self.lossless = lossless
        self._tls_ca = tls_ca
        self._token = token
        self._timeout = timeout
        self._client: Optional[_client.Client] = None
        self._client_pid = 0
        self._lock = threading.Lock()

    # Dask and multiprocessing pickle codecs to their workers: the channel
    # stays behind and each process opens its own on first use.
    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        state['_client'] = None
        state['_client_pid'] = 0
        del state['_lock']
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _remote(self) -> _client.Client:
        with self._lock:
            if self._client is None or self._client_pid != os.getpid():
                tls_ca = self._tls_ca or os.environ.get('EBZIP_TLS_CA') or None
                token = self._token or os.environ.get('EBZIP_TOKEN') or None
                self._client = _client.Client(self.server, tls_ca=tls_ca,
                                              token=token,
                                              timeout=self._timeout)
                self._client_pid = os.getpid()
            return self._client

    def encode(self, buf: Any) -> bytes:
        arr = numcodecs.compat.ensure_ndarray(buf)
        if arr.dtype.kind != 'f' or arr.dtype.itemsize not in (4, 8):
            raise TypeError(f'the ebzip codec encodes float32 and float64 '
                            f'arrays, not {arr.dtype}')
        if arr.dtype.byteorder == '>':
            # Decoding gives little-endian bytes, which the store would then
            # read as big-endian ones.
            raise TypeError(f'the ebzip codec encodes little-endian arrays; '
                            f'store this one as {arr.dtype.newbyteorder("<")}')
        if not arr.flags.c_contiguous and arr.flags.f_contiguous:
            arr = arr.T  # C-contiguous, the same bytes in the same order
        if arr.ndim == 0:
            arr = arr.reshape(1)
        elif arr.ndim > 4:
            arr = arr.reshape((-1,) + arr.shape[-3:])
        options = dict(rel=self.rel, abs=self.abs, fill_value=self.fill_value,
                       predictor=self.predictor, lossless=self.lossless)
        if self.server is None:
            return _local.compress(arr, **options)
        return self._remote().compress(arr, **options)

    def decode(self, buf: Any, out: Any = None) -> Any:
        data = numcodecs.compat.ensure_contiguous_ndarray(buf)
        if not _local.available() and self.server is not None:
            decoded = self._remote().decompress(data)
            return numcodecs.compat.ndarray_copy(decoded, out)
        if out is None:
            return _local.decompress(data)
        header = _local.info(data)
        # out is the chunk's memory in any shape and dtype of the right byte
        # count (zarr hands over a view of its own array): decode straight
        # into it, seen as the archive's array.
        flat = numcodecs.compat.ensure_contiguous_ndarray(out)
        dtype = np.dtype(header['dtype'])
        if flat.nbytes != int(np.prod(header['shape'])) * dtype.itemsize:
            raise ValueError(f'out holds {flat.nbytes} bytes, the archive a '
                             f'{dtype.name} {tuple(header["shape"])} array')
        _local.decompress(data, out=flat.view(dtype).reshape(header['shape']))
        return out
