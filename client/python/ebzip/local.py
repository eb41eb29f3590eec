"""The codec in this process: ebzip's CPU codec through the _ebzip extension.

The extension (client/python/codec_module.cc) is a thin binding of
codec/archive.h; this module gives it the remote client's arguments and
checks. Arrays are read and written where they lie (the buffer protocol; a
copy only for an array that is not C-contiguous little-endian, or a masked
array whose masked elements must be set to the fill value), the GIL is
released while the codec runs (threads compress in parallel), and the
archives are the bytes `ebzip compress` and ebzipd write for the same
options.

The GPU codec is not offered here: it works on device memory in batches on
a caller's stream (gpu/gpu_codec.h), which is the service's job; pass
server= to use an ebzipd with a GPU.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Dict, Optional, Sequence, Tuple

import grpc
import numpy as np

from ebzip import client as _client
from ebzip import masked as _masked
from ebzip import safety as _safety

try:
    from ebzip import _ebzip
    _IMPORT_ERROR: Optional[ImportError] = None
except ImportError as _e:  # pragma: no cover - depends on the build
    _ebzip = None
    _IMPORT_ERROR = _e

BytesLike = _client.BytesLike


def available() -> bool:
    """Whether the in-process codec was built and loads."""
    return _ebzip is not None


def _codec() -> Any:
    if _ebzip is None:
        raise ImportError(
            'ebzip: the in-process codec (ebzip._ebzip) is not built; install '
            'pybind11-dev and python3-dev and rebuild, or pass server= to use '
            f'an ebzipd ({_IMPORT_ERROR})')
    return _ebzip


def _error(e: Exception) -> _client.Error:
    """The extension's StatusError(code name, message) as the remote client's
    class for that code, so that local and remote failures are caught alike
    (a corrupt archive: ebzip.DataLoss)."""
    code_name, message = e.args
    code = getattr(grpc.StatusCode, code_name, grpc.StatusCode.UNKNOWN)
    cls = _client._ERROR_CLASSES.get(code, _client.Error)  # pylint: disable=protected-access
    return cls(code, message)


def _call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except _codec().StatusError as e:
        raise _error(e) from None


def bound_args(abs: Optional[float], rel: Optional[float]  # pylint: disable=redefined-builtin
               ) -> Tuple[str, float]:
    """('abs' or 'rel', value) from exactly one of abs= and rel=, checked."""
    if (abs is None) == (rel is None):
        raise ValueError('give exactly one of abs= or rel=')
    name, value = ('abs', abs) if abs is not None else ('rel', rel)
    v = _client._check_real(name, value)  # pylint: disable=protected-access
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f'{name} must be > 0 and finite, got {v!r}')
    return name, v


def _check_uint(name: str, value: Any, bits: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f'{name} must be an int, not {type(value).__name__}')
    if not 0 <= value < (1 << bits):
        raise ValueError(f'{name} must be in [0, 2**{bits}), got {value}')
    return int(value)


def compress(array: Any,
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
             gpu: bool = False) -> bytes:
    """Compresses an array in this process; arguments as Client.compress.

    gpu=True runs the GPU codec where this build has it and a GPU is
    visible (ebzip.gpu_available()), and the kernels take the options; the
    CPU codec otherwise. The archive is the same bytes either way.

    A numpy.ma masked array's mask becomes the fill value (ebzip.masked).
    Warns (ebzip.DominatedRangeWarning, ebzip.LargerArchiveWarning) per
    ebzip.safety.

    Returns:
        The archive, the bytes `ebzip compress` writes for these options.

    Raises:
        ValueError, TypeError: Bad arguments (the codec's message for those
            it checks itself).
        ebzip.Error: Any other codec failure, e.g. ResourceExhausted.
    """
    codec = _codec()
    mode, bound = bound_args(abs, rel)
    if fill_value is not None:
        fill_value = _client._check_real('fill_value', fill_value)  # pylint: disable=protected-access
        if not math.isfinite(fill_value):
            raise ValueError(f'fill_value must be finite, got {fill_value!r}')
    array, fill_value = _masked.unmask(array, fill_value)
    a = _client.as_wire_array(array)
    if interp_order not in (0, 1, 3):
        raise ValueError(f'interp_order must be 0 (chosen), 1 or 3, got {interp_order!r}')
    archive = _call(
        codec.compress, a, mode=mode, bound=bound, fill_value=fill_value,
        predictor=predictor, lossless=lossless, interp_order=interp_order,
        frame_elements=_check_uint('frame_elements', frame_elements, 64),
        radius=_check_uint('radius', radius, 32),
        chunk_symbols=_check_uint('chunk_symbols', chunk_symbols, 32),
        subsequence_bits=_check_uint('subsequence_bits', subsequence_bits, 32),
        chunk_group=_check_uint('chunk_group', chunk_group, 32),
        gap_array=None if gap_array is None else bool(gap_array),
        block=[_check_uint('block', b, 16) for b in block],
        gpu=bool(gpu))
    if mode == 'rel':
        _safety.warn_dominated_range(a, fill_value, bound,
                                     info(archive)['abs_bound'])
    _safety.warn_larger_archive(len(archive), a.nbytes, a)
    return archive


def info(data: BytesLike) -> Dict[str, Any]:
    """The archive's header, after its structure is validated.

    Returns:
        A dict: dtype ('float32'/'float64'), shape, version, bound_mode
        ('abs'/'rel'), bound_value (as given), abs_bound (what every value
        meets), fill_value (or None), frame_count, frame_rows (rows of
        dimension 0 per frame, the last frame may have fewer), metadata
        (JSON or '').

    Raises:
        ebzip.DataLoss: The archive is corrupt or truncated.
    """
    return _call(_codec().info, data)


def _check_out(out: Any, dtype: np.dtype, shape: Tuple[int, ...]) -> np.ndarray:
    if not isinstance(out, np.ndarray):
        raise TypeError(f'out must be a numpy array, not {type(out).__name__}')
    if out.shape != shape:
        raise ValueError(f'out has shape {out.shape}, the archive holds {shape}')
    if out.dtype != dtype:
        raise ValueError(f'out has dtype {out.dtype}, the archive holds {dtype}')
    if not out.flags.c_contiguous:
        raise ValueError('out must be C-contiguous')
    if not out.flags.writeable:
        raise ValueError('out must be writeable')
    return out


def decompress(data: BytesLike,
               *,
               out: Optional[np.ndarray] = None,
               masked: bool = False,
               max_output_bytes: Optional[int] = None,
               decoder: str = 'auto',
               gpu: bool = False) -> np.ndarray:
    """Decompresses an archive in this process.

    Args:
        data: The archive: bytes, bytearray, memoryview or any C-contiguous
            buffer (a numpy.memmap of a file: nothing is copied).
        out: A C-contiguous, writeable array of the archive's shape and
            dtype (native byte order) to decode into; None allocates one.
        masked: Return a numpy.ma array masked where the archive's fill
            value is (nothing masked when the archive has none).
        max_output_bytes: With out=None, the largest array to allocate; an
            archive describing more raises ResourceExhausted first. None:
            the machine's physical memory.
        decoder: The Huffman decoder: 'auto', 'chunk', 'gap' or 'selfsync'
            (the same array whichever).
        gpu: Decode on the GPU where possible, as compress(gpu=True); the
            same array either way.

    Returns:
        out, or a new array, of the archive's shape and dtype.

    Raises:
        ebzip.DataLoss: The archive is corrupt or truncated; out may then
            hold partial data.
        ebzip.ResourceExhausted: More than max_output_bytes.
        ValueError, TypeError: A bad out or argument.
    """
    codec = _codec()
    header = info(data)
    dtype = np.dtype(header['dtype'])
    shape = tuple(header['shape'])
    if out is None:
        limit = _client._check_max_output_bytes(max_output_bytes)  # pylint: disable=protected-access
        nbytes = math.prod(shape) * dtype.itemsize
        if nbytes > limit:
            raise _client.ResourceExhausted(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f'the archive holds a {dtype.name} {shape} array of {nbytes} '
                f'bytes, more than max_output_bytes={limit}; raise it to '
                f'accept')
        try:
            out = np.empty(shape, dtype)
        except (MemoryError, ValueError) as e:
            raise _client.ResourceExhausted(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f'cannot allocate an array of {nbytes} bytes: {e}') from None
    else:
        _check_out(out, dtype, shape)
    _call(codec.decompress_into, data, out, decoder=decoder, gpu=bool(gpu))
    if masked:
        return _masked.remask(out, header['fill_value'])
    return out


def gpu_available() -> bool:
    """Whether compress/decompress(gpu=True) can run on a GPU here: this
    build has the GPU codec and the process sees a GPU."""
    return bool(_codec().gpu_available())
