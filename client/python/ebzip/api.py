"""ebzip.compress and ebzip.decompress: in this process, or on an ebzipd.

Without server= the codec runs in this process (ebzip.local); with it the
call goes to that ebzipd (ebzip.Client). Both take the same arguments and
give the same archive bytes, which are also what `ebzip compress` writes.
Earlier releases took the server as the second positional argument; that
still works.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Union

import numpy as np

from ebzip import client as _client
from ebzip import local as _local

BytesLike = _client.BytesLike


def compress(array: Any,
             server: Optional[str] = None,
             *,
             abs: Optional[float] = None,  # pylint: disable=redefined-builtin
             rel: Optional[float] = None,
             fill_value: Optional[float] = None,
             predictor: str = 'auto',
             lossless: str = 'auto',
             interp_order: int = 0,
             frame_elements: int = 0,
             radius: int = 0,
             chunk_symbols: int = 0,
             subsequence_bits: int = 0,
             chunk_group: int = 0,
             gap_array: Optional[bool] = None,
             block: Sequence[int] = (),
             tls_ca: Optional[Union[str, os.PathLike, bytes]] = None,
             token: Optional[str] = None,
             timeout: Optional[float] = _client.DEFAULT_TIMEOUT,
             gpu: bool = False,
             **remote_options: Any) -> bytes:
    """Compresses a float32/float64 array of 1 to 4 dimensions.

    Args:
        array: A numpy array (any layout and byte order) or anything
            numpy.asarray accepts; a numpy.ma masked array's mask becomes the
            fill value (ebzip.masked.unmask).
        server: host:port of an ebzipd to compress on; None: in this process.
        abs, rel: Exactly one: the absolute bound, or the fraction of the
            range of the finite values that are not fill_value.
        fill_value: Values equal to it come back exactly and stay out of
            rel's range.
        predictor: 'auto', 'lorenzo' or 'interp'.
        lossless: 'auto', 'huffman', 'runs' or 'run-values'.
        interp_order, frame_elements, radius, chunk_symbols,
        subsequence_bits, chunk_group, gap_array, block: As Client.compress
            (0/None/empty: the command line's defaults).
        tls_ca, token, timeout: The connection's, with server= only
            (timeout: seconds, default 300; None: no deadline).
        gpu: In this process only: the GPU codec where a GPU is visible
            (ebzip.gpu_available()) and takes the options, else the CPU
            one; the same archive either way. A server picks its own.
        **remote_options: request_id=, priority= and streams= (how many
            calls at once the array is split over, Client(streams=)), with
            server= only.

    Returns:
        The archive: the bytes `ebzip compress` writes with these options.

    Raises:
        ValueError, TypeError: Bad arguments.
        ebzip.Error: The codec or the server failed (a subclass by code).

    Warns:
        ebzip.DominatedRangeWarning, ebzip.LargerArchiveWarning
        (ebzip.safety says when).
    """
    options = dict(abs=abs, rel=rel, fill_value=fill_value,
                   predictor=predictor, lossless=lossless,
                   interp_order=interp_order, frame_elements=frame_elements,
                   radius=radius, chunk_symbols=chunk_symbols,
                   subsequence_bits=subsequence_bits, chunk_group=chunk_group,
                   gap_array=gap_array, block=block)
    if server is None:
        extra = sorted(remote_options)
        if tls_ca is not None or token is not None:
            extra += ['tls_ca/token']
        if extra:
            raise TypeError(f'{", ".join(extra)}: only with server=')
        return _local.compress(array, **options, gpu=gpu)
    if gpu:
        raise TypeError('gpu=: only in this process (the server picks its own device)')
    with _client.Client(server, tls_ca=tls_ca, token=token,
                        timeout=timeout) as c:
        return c.compress(array, **options, **remote_options)


def decompress(data: BytesLike,
               server: Optional[str] = None,
               *,
               out: Optional[np.ndarray] = None,
               masked: bool = False,
               max_output_bytes: Optional[int] = None,
               tls_ca: Optional[Union[str, os.PathLike, bytes]] = None,
               token: Optional[str] = None,
               timeout: Optional[float] = _client.DEFAULT_TIMEOUT,
               streams: Optional[int] = None,
               gpu: bool = False
               ) -> np.ndarray:
    """Decompresses an archive into a numpy array of its shape and dtype.

    Args:
        data: The archive (bytes, bytearray, memoryview, numpy.memmap, ...).
        server: host:port of an ebzipd to decompress on; None: here.
        out: A C-contiguous writeable array of the archive's shape and
            dtype to fill (checked first); None: a new array.
        masked: Return a numpy.ma array masked where the archive's fill
            value is.
        max_output_bytes: The largest new array to accept (default: the
            machine's physical memory); a larger one raises
            ebzip.ResourceExhausted before anything is allocated.
        tls_ca, token, timeout: The connection's, with server= only.
        streams: With server= only: how many calls at once the archive is
            split over (Client(streams=)); None: automatic.
        gpu: Without server= only: decode on the GPU where possible, as
            compress(gpu=True); the same array either way.

    Raises:
        ebzip.DataLoss: A corrupt or truncated archive.
        ebzip.ResourceExhausted: Larger than max_output_bytes.
        ValueError, TypeError: A bad out or argument.
    """
    if server is None:
        if tls_ca is not None or token is not None or streams is not None:
            raise TypeError('tls_ca/token/streams: only with server=')
        return _local.decompress(data, out=out, masked=masked,
                                 max_output_bytes=max_output_bytes, gpu=gpu)
    if gpu:
        raise TypeError('gpu=: only in this process (the server picks its own device)')
    with _client.Client(server, tls_ca=tls_ca, token=token, timeout=timeout,
                        max_output_bytes=max_output_bytes) as c:
        return c.decompress(data, out=out, masked=masked, streams=streams)
