"""Python client of the ebzip gRPC service (ebzipd).

The service streams in both directions, so that arrays of any size go through
in bounded memory on both ends: this module keeps that property on the client
side. Arrays are sent from a view of the caller's buffer, 1 MiB per message,
produced only as gRPC asks for the next message (gRPC Python waits for each
write to finish before pulling the next one), and decompressed arrays are
written straight into one preallocated numpy array. Peak client memory is
therefore the caller's array plus a few messages, even above 2 GiB.

Archives are the exact bytes `ebzip compress` writes (FORMAT.md), so what this
client returns can be written to a file and read by the command line, and the
other way round.

Every failure the server reports is raised as a subclass of `Error` that
carries the gRPC status code; `grpc.RpcError` never escapes. Arguments the
client can check by itself raise `ValueError` or `TypeError` before any call,
as a Python caller would expect of a bad argument.

Replies are checked before anything is allocated from them: a Decompress
header describing more than `max_output_bytes` (default: the machine's
physical memory) raises `ResourceExhausted`, and a reply that breaks the
API (a malformed header, more or fewer bytes than announced, a Compress
archive longer than any honest one, see max_archive_bytes) raises
`ProtocolError`, so that a broken or hostile server cannot make the client
run out of memory.
"""

from __future__ import annotations

import enum
import json
import math
import numbers
import operator
import os
import random
import sys
import threading
import time
from typing import (Any, Callable, Iterable, Iterator, Optional, Sequence,
                    Tuple, Type, TypeVar, Union)

import grpc
import numpy as np

from ebzip import masked as _masked
from ebzip import safety as _safety

# The in-process codec (client/python/codec_module.cc) plans the split of
# one array or archive over several calls and puts the parts back together;
# without it every array goes in one call.
try:
    from ebzip import _ebzip
except ImportError:  # pragma: no cover - depends on the build
    _ebzip = None

try:
    from ebzip.v1 import ebzip_pb2
    from ebzip.v1 import ebzip_pb2_grpc
except ImportError as _e:  # pragma: no cover - depends on the installation
    raise ImportError(
        'ebzip: the generated modules ebzip.v1.ebzip_pb2 and ebzip_pb2_grpc '
        'are missing; build the CMake target ebzip_python_client and set '
        'PYTHONPATH=build/python') from _e

# The service's own health checking protocol. Debian 12 ships python3-grpcio
# without grpc_health (it is a separate PyPI package, grpcio-health-checking,
# that Debian does not package), so Client.health() falls back to calling the
# method by name with a hand-encoded request; see _encode_health_request.
try:
    from grpc_health.v1 import health_pb2 as _health_pb2
    from grpc_health.v1 import health_pb2_grpc as _health_pb2_grpc
except ImportError:
    _health_pb2 = None
    _health_pb2_grpc = None

# Bytes per outgoing message. Small enough that a message is never near any
# default size limit (4 MiB on the server's receive side) and that the
# per-message copy into protobuf is cheap; large enough that per-message
# overhead is negligible against the codec's throughput.
MESSAGE_BYTES = 1 << 20

# The server sends decompressed data and archives in messages of its own
# choosing; gRPC's default receive limit (4 MiB) is below what a server may
# reasonably use, so the client accepts up to 64 MiB.
# Round robin over every address the target resolves to, skipping servers
# whose health is not SERVING. A call a draining server refuses (UNAVAILABLE,
# before any work) runs again on another, by Client._with_retries rather than
# a retryPolicy here: gRPC 1.51's retry code (Debian 12) can abort the client
# process when a retried streaming call races a pick that health checking
# holds back (client/remote/retry.h). Both methods are pure functions of
# their input, so running one again is safe.
SERVICE_CONFIG = json.dumps({
    'loadBalancingConfig': [{'round_robin': {}}],
    'healthCheckConfig': {'serviceName': ''},
})
RETRY_ATTEMPTS = 3
RETRY_INITIAL_BACKOFF = 0.05  # seconds, doubling up to RETRY_MAX_BACKOFF
RETRY_MAX_BACKOFF = 1.0
MAX_RECEIVE_MESSAGE_BYTES = 64 << 20

# Seconds a call may take, its retries included, unless the caller says
# otherwise (timeout=None: no deadline). Without one, a server that stalls
# (overloaded, or a connection that silently died) would hang the caller for
# ever; 300 s is far beyond what the codec needs for any array that fits a
# client's memory at the service's throughput.
DEFAULT_TIMEOUT = 300.0

_HEALTH_CHECK_METHOD = '/grpc.health.v1.Health/Check'

# Client(streams=): the calls one array or archive of several frames is
# split over, by whole frames, each on a connection of its own. A
# connection carries a few GB/s; several carry several times that.
# Automatic (0): one call per AUTO_STREAM_BYTES of array, at most
# MAX_AUTO_STREAMS; MAX_STREAMS at most when asked for. The same rule as
# the C++ client's (client/remote/remote_client.h).
AUTO_STREAM_BYTES = 128 << 20
MAX_AUTO_STREAMS = 8
MAX_STREAMS = 16

_DTYPE_TO_PROTO = {
    np.dtype('<f4'): ebzip_pb2.FLOAT32,
    np.dtype('<f8'): ebzip_pb2.FLOAT64,
}
_DTYPE_FROM_PROTO = {v: k for k, v in _DTYPE_TO_PROTO.items()}

BytesLike = Union[bytes, bytearray, memoryview]
_T = TypeVar('_T')


# ---------------------------------------------------------------------------
# Errors.


class Error(Exception):
    """A failed call to the ebzip service.

    Attributes:
        code: The gRPC status code the server (or gRPC itself, e.g. for an
            unreachable server or an expired deadline) ended the call with;
            None for a ProtocolError, which the client detects itself.
        message: The status message, meant for people.
    """

    def __init__(self, code: Optional[grpc.StatusCode], message: str):
        prefix = code.name if code is not None else 'PROTOCOL_ERROR'
        super().__init__(f'{prefix}: {message}')
        self.code = code
        self.message = message


class InvalidArgument(Error):
    """The request was malformed: bad bound, shape, dtype or byte count."""


class DataLoss(Error):
    """The archive is corrupt or truncated; nothing of it is returned."""


class ResourceExhausted(Error):
    """The server's queue or request size limit is full; retry later.

    Also raised by the client itself (with code RESOURCE_EXHAUSTED) for a
    Decompress reply larger than max_output_bytes, or one this process
    cannot allocate.
    """


class Unauthenticated(Error):
    """The bearer token is missing or wrong."""


class PermissionDenied(Error):
    """The caller is known but may not do this (or a remote_path through a
    symbolic link, or to something other than a regular file)."""


class Unavailable(Error):
    """The server cannot be reached, or is draining on shutdown."""


class DeadlineExceeded(Error):
    """The call's timeout ran out before the server answered."""


class Cancelled(Error):
    """The call was cancelled."""


class NotFound(Error):
    """E.g. a health check of a service the server does not know, or a
    remote_path with no file under the server's archive root."""


class FailedPrecondition(Error):
    """The server is not set up for this: a remote_path on a server without
    --archive_root, or options a server older than them ignored."""


class Unimplemented(Error):
    """The server does not offer this method (an older or other server)."""


class Internal(Error):
    """The server failed in a way that is its own fault."""


class ProtocolError(Error):
    """The server's answer broke the API's message order or contents.

    Raised by the client itself (code is None), e.g. for a Decompress stream
    that sends data before its header, a header that is no valid array, or
    more or fewer bytes than the header's shape; or a Compress stream whose
    archive is longer than max_archive_bytes allows.
    """

    def __init__(self, message: str):
        super().__init__(None, message)


_ERROR_CLASSES = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.DATA_LOSS: DataLoss,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNAUTHENTICATED: Unauthenticated,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
    grpc.StatusCode.CANCELLED: Cancelled,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.UNIMPLEMENTED: Unimplemented,
    grpc.StatusCode.INTERNAL: Internal,
}


def _error_from_rpc(err: grpc.RpcError) -> Error:
    """Maps a gRPC failure to the Error subclass of its status code."""
    # Every RpcError gRPC raises from a call is also a grpc.Call; the getattr
    # guards keep a stray plain RpcError from turning into an AttributeError.
    code_fn = getattr(err, 'code', None)
    details_fn = getattr(err, 'details', None)
    code = code_fn() if callable(code_fn) else grpc.StatusCode.UNKNOWN
    details = details_fn() if callable(details_fn) else str(err)
    cls: Type[Error] = _ERROR_CLASSES.get(code, Error)
    return cls(code, details or '')


class ServingStatus(enum.IntEnum):
    """grpc.health.v1.HealthCheckResponse.ServingStatus, by value."""
    UNKNOWN = 0
    SERVING = 1
    NOT_SERVING = 2
    SERVICE_UNKNOWN = 3


# ---------------------------------------------------------------------------
# Argument checks and message construction, kept apart from the network so
# that they can be tested without a server.


def _check_real(name: str, value: Any) -> float:
    # bool is an int in Python; abs=True is far more likely a mistake than a
    # bound of 1.
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f'{name} must be a real number, not '
                        f'{type(value).__name__}')
    return float(value)


def error_bound(abs: Optional[float] = None,  # pylint: disable=redefined-builtin
                rel: Optional[float] = None) -> 'ebzip_pb2.ErrorBound':
    """Builds the ErrorBound message from exactly one of abs= and rel=.

    Checked here rather than left to the server so that a typo fails at once
    with a Python exception, not after streaming a large array.

    Raises:
        ValueError: Neither or both given, or a value that is not > 0 and
            finite.
        TypeError: A value that is not a real number.
    """
    if (abs is None) == (rel is None):
        raise ValueError('give exactly one of abs= or rel=')
    name, value = ('abs', abs) if abs is not None else ('rel', rel)
    v = _check_real(name, value)
    if not (math.isfinite(v) and v > 0):
        raise ValueError(f'{name} must be > 0 and finite, got {v!r}')
    mode = ebzip_pb2.ABS if abs is not None else ebzip_pb2.REL
    return ebzip_pb2.ErrorBound(mode=mode, value=v)


def as_wire_array(array: Any) -> np.ndarray:
    """Returns the array as the service wants its bytes: C order, little-endian.

    No copy is made when the array already is that (the usual case on x86 and
    ARM), which matters for arrays of many GiB.

    Raises:
        TypeError: The dtype is not float32 or float64.
        ValueError: Not 1 to 4 dimensions, or an empty dimension.
    """
    a = np.asarray(array)
    if a.dtype.kind != 'f' or a.dtype.itemsize not in (4, 8):
        raise TypeError(f'ebzip compresses float32 and float64 arrays, not '
                        f'{a.dtype}')
    if not 1 <= a.ndim <= 4:
        raise ValueError(f'ebzip compresses arrays of 1 to 4 dimensions, not '
                         f'{a.ndim} (shape {a.shape})')
    if a.size == 0:
        raise ValueError(f'every dimension must be >= 1, got shape {a.shape}')
    # ascontiguousarray returns its argument itself when both the order and
    # the (byte-order-equivalent) dtype already match.
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder('<'))


def compress_header(dtype: Any,
                    shape: Sequence[int],
                    *,
                    abs: Optional[float] = None,  # pylint: disable=redefined-builtin
                    rel: Optional[float] = None,
                    fill_value: Optional[float] = None,
                    frame_elements: int = 0,
                    gap_array: Optional[bool] = None,
                    radius: int = 0,
                    chunk_symbols: int = 0,
                    subsequence_bits: int = 0,
                    chunk_group: int = 0,
                    block: Sequence[int] = (),
                    predictor: str = 'auto',
                    lossless: str = 'auto',
                    interp_order: int = 0,
                    request_id: str = '',
                    priority: int = 0,
                    metadata: str = '') -> 'ebzip_pb2.CompressHeader':
    """Builds the CompressHeader message; see Client.compress for arguments.

    Unset options stay unset in the message (rather than being filled with
    this client's idea of the defaults) so that the server applies the
    command line's defaults and archives agree byte for byte with it.
    """
    dt = np.dtype(dtype).newbyteorder('<')
    if dt not in _DTYPE_TO_PROTO:
        raise TypeError(f'dtype must be float32 or float64, not {dt}')
    shape = tuple(int(d) for d in shape)
    if not 1 <= len(shape) <= 4 or min(shape) < 1:
        raise ValueError(f'shape must have 1 to 4 dimensions, each >= 1, '
                         f'got {shape}')
    options = ebzip_pb2.CompressOptions(frame_elements=frame_elements,
                                        radius=radius,
                                        chunk_symbols=chunk_symbols,
                                        subsequence_bits=subsequence_bits,
                                        chunk_group=chunk_group,
                                        block=[int(b) for b in block])
    predictors = {'auto': ebzip_pb2.PREDICTOR_AUTO, 'lorenzo': ebzip_pb2.LORENZO,
                  'interp': ebzip_pb2.INTERPOLATION}
    stages = {'auto': ebzip_pb2.LOSSLESS_AUTO, 'huffman': ebzip_pb2.HUFFMAN,
              'runs': ebzip_pb2.ZERO_RUNS, 'run-values': ebzip_pb2.RUN_VALUES}
    if predictor not in predictors:
        raise ValueError(f'predictor must be one of {sorted(predictors)}, got {predictor!r}')
    if lossless not in stages:
        raise ValueError(f'lossless must be one of {sorted(stages)}, got {lossless!r}')
    if interp_order not in (0, 1, 3):
        raise ValueError(f'interp_order must be 0 (chosen), 1 or 3, got {interp_order!r}')
    options.predictor = predictors[predictor]
    options.lossless = stages[lossless]
    options.interp_order = interp_order
    if gap_array is not None:
        options.gap_array = bool(gap_array)
    if fill_value is not None:
        fill = _check_real('fill_value', fill_value)
        if not math.isfinite(fill):
            # NaN and Inf always come back exactly anyway; the command line
            # refuses them as --fill too.
            raise ValueError(f'fill_value must be finite, got {fill!r}')
        options.fill_value = fill
    return ebzip_pb2.CompressHeader(
        array=ebzip_pb2.ArraySpec(dtype=_DTYPE_TO_PROTO[dt], shape=shape),
        error_bound=error_bound(abs=abs, rel=rel),
        options=options,
        request_id=request_id,
        priority=priority,
        metadata=metadata)


def _byte_view(obj: Any) -> memoryview:
    """A flat unsigned-byte view of any contiguous buffer, without a copy."""
    view = memoryview(obj)
    if not view.c_contiguous:
        raise ValueError('buffers must be C-contiguous')
    if view.format == 'B' and view.ndim == 1:
        return view
    return view.cast('B')


def _slices(view: memoryview) -> Iterator[bytes]:
    # bytes() copies one message's worth; protobuf accepts nothing else for a
    # bytes field, and the copy is what keeps memory bounded: the caller's
    # buffer is never duplicated as a whole.
    for start in range(0, len(view), MESSAGE_BYTES):
        yield bytes(view[start:start + MESSAGE_BYTES])


def compress_requests(header: 'ebzip_pb2.CompressHeader',
                      chunks: Iterable[Any]
                     ) -> Iterator['ebzip_pb2.CompressRequest']:
    """The Compress request stream: the header, then data of <= 1 MiB each.

    A generator, so that messages exist only while gRPC sends them.
    """
    yield ebzip_pb2.CompressRequest(header=header)
    for chunk in chunks:
        for piece in _slices(_byte_view(chunk)):
            yield ebzip_pb2.CompressRequest(data=piece)


def decompress_requests(
        data: Any,
        options: Optional['ebzip_pb2.DecompressOptions'] = None
) -> Iterator['ebzip_pb2.DecompressRequest']:
    """The Decompress request stream: the archive in messages of <= 1 MiB,
    the first of them with options when given (alone when there is no
    archive: a remote_path)."""
    first = True
    for piece in _slices(_byte_view(data)):
        if first and options is not None:
            yield ebzip_pb2.DecompressRequest(archive=piece, options=options)
        else:
            yield ebzip_pb2.DecompressRequest(archive=piece)
        first = False
    if first and options is not None:
        yield ebzip_pb2.DecompressRequest(options=options)


RegionLike = Tuple[Sequence[int], ...]


def decompress_options(region: Optional[RegionLike] = None,
                       remote_path: Optional[str] = None,
                       header_only: bool = False
                       ) -> Optional['ebzip_pb2.DecompressOptions']:
    """The DecompressOptions message, or None when nothing is asked.

    region is (start, count) or (start, count, step), one entry per
    dimension each (codec/region.h's hyperslab: indices start + i * step,
    0 <= i < count); the server checks it against the archive's shape.
    """
    if region is None and not remote_path and not header_only:
        return None
    options = ebzip_pb2.DecompressOptions(header_only=bool(header_only))
    if remote_path:
        if not isinstance(remote_path, str):
            raise TypeError(f'remote_path must be a str, not {type(remote_path).__name__}')
        options.archive_path = remote_path
    if region is not None:
        if header_only:
            raise ValueError('header_only takes no region')
        if not isinstance(region, (tuple, list)) or len(region) not in (2, 3):
            raise ValueError('region must be (start, count) or (start, count, step)')
        parts = [[operator.index(v) for v in part] for part in region]
        if not 1 <= len(parts[0]) <= 4 or any(len(p) != len(parts[0]) for p in parts):
            raise ValueError(f'region: start, count and step need one entry per dimension '
                             f'(1 to 4), got {region!r}')
        if any(v < 0 for p in parts for v in p):
            raise ValueError(f'region: indices are non-negative, got {region!r}')
        if len(parts) == 3 and any(v < 1 for v in parts[2]):
            raise ValueError(f'region: steps are at least 1, got {parts[2]}')
        options.region.start.extend(parts[0])
        options.region.count.extend(parts[1])
        if len(parts) == 3:
            options.region.step.extend(parts[2])
    return options


def physical_memory_bytes() -> int:
    """The machine's physical memory in bytes; the default max_output_bytes.

    sys.maxsize where the system does not say (os.sysconf is POSIX only).
    """
    try:
        pages = os.sysconf('SC_PHYS_PAGES')
        page_size = os.sysconf('SC_PAGE_SIZE')
    except (AttributeError, ValueError, OSError):
        return sys.maxsize
    if pages <= 0 or page_size <= 0:
        return sys.maxsize
    return pages * page_size


def _check_max_output_bytes(value: Any) -> int:
    """max_output_bytes as given, or the default for None."""
    if value is None:
        return physical_memory_bytes()
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f'max_output_bytes must be an int, not '
                        f'{type(value).__name__}')
    if value < 1:
        raise ValueError(f'max_output_bytes must be >= 1, got {value}')
    return int(value)


def max_archive_bytes(header: 'ebzip_pb2.CompressHeader') -> int:
    """The most bytes an honest archive of header's array can take.

    FORMAT.md's section sizes, each at its worst, plus 1 MiB: about 2 to 3
    times the array (every element verbatim or an outlier, beside its
    codeword). A Compress reply longer than this is a ProtocolError, so a
    broken or hostile server cannot make the client buffer without end. The
    same bound as the C++ client's MaxArchiveBytes.
    """
    shape = list(header.array.shape)
    if not shape:
        return 1 << 20
    n = math.prod(shape)
    row = math.prod(shape[1:])
    if row == 0:
        return 1 << 20
    options = header.options
    # Unset (0) options are the server's defaults, the command line's.
    frame_elements = min(options.frame_elements or (1 << 24), (1 << 32) - 1)
    chunk_symbols = options.chunk_symbols or 16384
    radius = options.radius or 32768
    # The planner cuts max(1, frame_elements // row) rows rounded down to
    # the Lorenzo block b but at least b: whatever b is, at least half of
    # that + 1 (or the whole first dimension).
    rows_at_least = max(1, (max(1, frame_elements // row) + 1) // 2)
    frames = -(-shape[0] // rows_at_least)
    chunks = n // chunk_symbols + frames
    element_bytes = 4 if header.array.dtype == ebzip_pb2.FLOAT32 else 8
    return (96 + 16 + 16  # file header, the frame index's own 16, trailer
            # per frame: header, index entry, section padding
            + frames * (256 + 16 + 7 * 7 + 4)
            # code lengths: <= 1.5 bytes a symbol, <= 5 per used symbol
            + min(frames * (3 * radius + 4), 5 * n + 4 * frames)
            # per chunk: group offset, length, gap rounding, word padding
            + chunks * 17
            # per element: a 24-bit codeword, a gap byte per 32 bits, one
            # outlier, verbatim or fill-run entry
            + n * (3 + 1 + max(8, 4 + element_bytes))
            + (1 << 20))


def _encode_health_request(service: str) -> bytes:
    """grpc.health.v1.HealthCheckRequest{service} in protobuf wire format.

    Its one field is `string service = 1`: tag 0x0a, a varint length, UTF-8.
    Hand-encoding it avoids building a message class from descriptors at run
    time just for this, when grpc_health is not installed.
    """
    raw = service.encode('utf-8')
    if not raw:
        return b''  # proto3 leaves default values out
    out = bytearray(b'\x0a')
    n = len(raw)
    while n >= 0x80:
        out.append((n & 0x7f) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out + raw)


def _read_varint(buf: bytes, pos: int) -> Tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ProtocolError('truncated varint in health check response')
        b = buf[pos]
        pos += 1
        result |= (b & 0x7f) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift >= 64:
            raise ProtocolError('overlong varint in health check response')


def _parse_health_response(buf: bytes) -> int:
    """The `status` (field 1, varint) of a HealthCheckResponse, by hand.

    Fields other than 1 are skipped by wire type, as protobuf itself would,
    so that a newer server adding fields does not break this parser. An
    absent field 1 is proto3's default, UNKNOWN (0).
    """
    status = 0
    pos = 0
    while pos < len(buf):
        key, pos = _read_varint(buf, pos)
        field, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _read_varint(buf, pos)
            if field == 1:
                status = value
        elif wire_type == 1:
            pos += 8
        elif wire_type == 2:
            length, pos = _read_varint(buf, pos)
            pos += length
        elif wire_type == 5:
            pos += 4
        else:
            raise ProtocolError(
                f'unexpected wire type {wire_type} in health check response')
        if pos > len(buf):
            raise ProtocolError('truncated health check response')
    return status


# ---------------------------------------------------------------------------
# Splitting one call into several (Client(streams=)). The archive format and
# its rules live in the codec (codec/archive_parts.h, through _ebzip): this
# module only cuts buffers at the offsets the codec gives and runs calls.


def _check_streams(streams: Any) -> int:
    if isinstance(streams, bool) or not isinstance(streams, numbers.Integral):
        raise TypeError(f'streams must be an int, not {type(streams).__name__}')
    if not 0 <= streams <= MAX_STREAMS:
        raise ValueError(f'streams must be 0 (automatic) to {MAX_STREAMS}, got {streams}')
    return int(streams)


def _parts_for(streams: int, nbytes: int, frames: int) -> int:
    """How many calls an array of nbytes in frames frames is split over."""
    if _ebzip is None or streams == 1 or frames < 2:
        return 1
    wanted = (streams if streams > 0
              else min(MAX_AUTO_STREAMS, max(1, nbytes // AUTO_STREAM_BYTES)))
    return min(wanted, frames)


_PREDICTOR_NAMES = {ebzip_pb2.PREDICTOR_AUTO: 'auto', ebzip_pb2.LORENZO: 'lorenzo',
                    ebzip_pb2.INTERPOLATION: 'interp'}
_LOSSLESS_NAMES = {ebzip_pb2.LOSSLESS_AUTO: 'auto', ebzip_pb2.HUFFMAN: 'huffman',
                   ebzip_pb2.ZERO_RUNS: 'runs', ebzip_pb2.RUN_VALUES: 'run-values'}


def _plan(header: 'ebzip_pb2.CompressHeader',
          value_range: Optional[Tuple[bool, float, float]] = None) -> Any:
    """The codec's plan of the archive the server writes for header: the
    options read back from the message itself, so that the plan is the
    server's. Raises ValueError, TypeError or _ebzip.StatusError for
    options the codec refuses."""
    o = header.options
    return _ebzip.plan(
        _DTYPE_FROM_PROTO[header.array.dtype].name, list(header.array.shape),
        mode='abs' if header.error_bound.mode == ebzip_pb2.ABS else 'rel',
        bound=header.error_bound.value,
        fill_value=o.fill_value if o.HasField('fill_value') else None,
        predictor=_PREDICTOR_NAMES[o.predictor], lossless=_LOSSLESS_NAMES[o.lossless],
        interp_order=o.interp_order, frame_elements=o.frame_elements, radius=o.radius,
        chunk_symbols=o.chunk_symbols, subsequence_bits=o.subsequence_bits,
        chunk_group=o.chunk_group,
        gap_array=o.gap_array if o.HasField('gap_array') else None,
        block=list(o.block), metadata=header.metadata, value_range=value_range)


def _send_range(a: np.ndarray, header: 'ebzip_pb2.CompressHeader') -> None:
    """Puts a's range in header for a relative bound over several frames.

    The server then compresses the array frame by frame as its bytes
    arrive (within its --stream_frames) instead of holding all of it to
    find the range first, which --max_request_bytes may refuse; the archive
    is the same, quantized against the same range. Nothing without the
    in-process codec, for one frame, or for options it refuses (the
    server's to refuse then).
    """
    if _ebzip is None or header.error_bound.mode != ebzip_pb2.REL:
        return
    try:
        if _plan(header).frame_count < 2:
            return
    except (ValueError, TypeError, _ebzip.StatusError):
        return
    o = header.options
    r = o.value_range
    r.any, r.min, r.max = _ebzip.value_range(
        a, fill_value=o.fill_value if o.HasField('fill_value') else None)


def _codec_error(e: Exception) -> Error:
    """_ebzip.StatusError(code name, message) as the Error of that code."""
    code_name, message = e.args
    code = getattr(grpc.StatusCode, code_name, grpc.StatusCode.UNKNOWN)
    return _ERROR_CLASSES.get(code, Error)(code, message)


class _PartGroup:
    """The calls of one split call: the first failure cancels the others.

    Each part's call is tracked while it runs, so that a failing part (or
    an interrupted caller) can cancel the calls in flight at once rather
    than let them run to their end.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: set = set()
        self._first_error: Optional[BaseException] = None
        self.failed = False

    def track(self, call: Any) -> None:
        with self._lock:
            self._calls.add(call)
            cancel = self.failed
        if cancel:
            call.cancel()

    def untrack(self, call: Any) -> None:
        with self._lock:
            self._calls.discard(call)

    def check(self) -> None:
        """Raises Cancelled once another part has failed."""
        if self.failed:
            raise Cancelled(grpc.StatusCode.CANCELLED, 'another part of the call failed')

    def fail(self, error: BaseException) -> None:
        with self._lock:
            if self.failed:
                return
            self.failed = True
            self._first_error = error
            calls = list(self._calls)
        for call in calls:
            call.cancel()

    def run(self, parts: Sequence[Callable[[], _T]]) -> list:
        """Runs each part on a thread of its own; their results in order,
        or the first part's failure (not the cancellations it caused)."""
        results: list = [None] * len(parts)

        def run_one(i: int) -> None:
            try:
                results[i] = parts[i]()
            except BaseException as e:  # pylint: disable=broad-except
                self.fail(e)

        threads = [threading.Thread(target=run_one, args=(i,), daemon=True,
                                    name=f'ebzip-part-{i}')
                   for i in range(len(parts))]
        for t in threads:
            t.start()
        try:
            for t in threads:
                t.join()
        except BaseException as e:  # e.g. KeyboardInterrupt: stop the parts
            self.fail(e)
            for t in threads:
                t.join()
            raise
        if self._first_error is not None:
            raise self._first_error
        return results


# ---------------------------------------------------------------------------
# The client.


def _read_ca(tls_ca: Union[str, os.PathLike, bytes]) -> bytes:
    if isinstance(tls_ca, (bytes, bytearray)):
        return bytes(tls_ca)
    with open(tls_ca, 'rb') as f:
        return f.read()


class Client:
    """A connection to one ebzipd server.

    One Client holds one gRPC channel; it is safe to share between threads
    and cheaper to reuse than to recreate, since the channel keeps its
    connection (and TLS session) open. Use it as a context manager, or call
    close(), to release the channel.
    """

    def __init__(self,
                 target: str,
                 tls_ca: Optional[Union[str, os.PathLike, bytes]] = None,
                 token: Optional[str] = None,
                 timeout: Optional[float] = DEFAULT_TIMEOUT,
                 max_output_bytes: Optional[int] = None,
                 streams: int = 0):
        """Opens a channel to target (host:port); nothing is sent yet.

        Args:
            target: The server's address, e.g. "localhost:50051".
            tls_ca: PEM root certificate(s) the server's certificate must
                chain to, as bytes or a file path; turns TLS on. Without it
                the channel is plaintext.
            token: Bearer token sent as `authorization: Bearer <token>` with
                every call. It is sent as plain metadata rather than as gRPC
                call credentials because gRPC refuses call credentials on
                plaintext channels, and a server behind a TLS-terminating
                proxy, or on localhost, still needs it.
            timeout: Deadline in seconds for each call, its retries
                included (DeadlineExceeded once it passes); default
                DEFAULT_TIMEOUT (300 s); None waits forever.
            max_output_bytes: The largest array decompress() may return;
                a reply describing more raises ResourceExhausted before
                anything is allocated. None: the machine's physical memory.
            streams: How many calls one array (compress) or uploaded
                archive (decompress) of several frames is split over, by
                whole frames, each on a connection of its own, at once; the
                archive and the array are the same as one call's. 0
                (automatic): one per 128 MiB of array, at most 8; 1: always
                one call; at most MAX_STREAMS. Needs the in-process codec
                (ebzip._ebzip); without it every call is one call.

        Raises:
            ValueError, TypeError: A bad max_output_bytes or streams.
        """
        self._max_output_bytes = _check_max_output_bytes(max_output_bytes)
        self._streams = _check_streams(streams)
        options = [('grpc.max_receive_message_length',
                    MAX_RECEIVE_MESSAGE_BYTES),
                   # dns:///headless-service:50051 spreads over every replica.
                   ('grpc.service_config', SERVICE_CONFIG),
                   # _with_retries instead (SERVICE_CONFIG says why).
                   ('grpc.enable_retries', 0)]
        creds = None
        if tls_ca is not None:
            creds = grpc.ssl_channel_credentials(
                root_certificates=_read_ca(tls_ca))
        self._target = target
        self._credentials = creds
        self._channel_options = options
        self._channel = self._open_channel(options)
        self._stub = ebzip_pb2_grpc.CompressorStub(self._channel)
        # A split call's parts after the first, one channel each, opened on
        # first use; part 0 takes _stub.
        self._part_lock = threading.Lock()
        self._part_channels: list = []
        self._part_stubs: list = []
        self._timeout = timeout
        self._auth: Tuple[Tuple[str, str], ...] = ()
        if token is not None:
            self._auth = (('authorization', f'Bearer {token}'),)

    def __enter__(self) -> 'Client':
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> None:
        """Closes the channel; calls in flight are cancelled."""
        self._channel.close()
        with self._part_lock:
            for channel in self._part_channels:
                channel.close()
            self._part_channels = []
            self._part_stubs = []

    def _open_channel(self, options: Sequence[Tuple[str, Any]]) -> grpc.Channel:
        if self._credentials is not None:
            return grpc.secure_channel(self._target, self._credentials, options)
        return grpc.insecure_channel(self._target, options)

    def _stubs(self, parts: int) -> list:
        """A stub for each of `parts` calls at once, each on a connection of
        its own: channels of one process share connections (gRPC's global
        subchannel pool) unless they have a pool of their own."""
        with self._part_lock:
            while len(self._part_stubs) < parts - 1:
                channel = self._open_channel(
                    list(self._channel_options) + [('grpc.use_local_subchannel_pool', 1)])
                self._part_channels.append(channel)
                self._part_stubs.append(ebzip_pb2_grpc.CompressorStub(channel))
            return [self._stub] + self._part_stubs[:parts - 1]

    def _metadata(self, *extra: Tuple[str, str]) -> Tuple[Tuple[str, str], ...]:
        return self._auth + tuple(extra)

    def _deadline(self) -> Optional[float]:
        """When a call, all of its attempts together, must have ended."""
        return None if self._timeout is None else time.monotonic() + self._timeout

    def _with_retries(self, attempt: Callable[[Optional[float]], _T],
                      replayable: bool = True,
                      deadline: Optional[float] = None,
                      group: Optional[_PartGroup] = None) -> _T:
        """Runs attempt(timeout) again while it raises Unavailable.

        Nothing of a reply reaches the caller before the call has ended, so
        any UNAVAILABLE attempt (a draining server's refusal, a refused or
        broken connection) may run again, as long as its request can be sent
        again, attempts remain and the next would start before the deadline.
        The backoff varies by ±20 % so that clients refused together do not
        come back together. The parts of a split call share the deadline
        and stop retrying once another part failed.
        """
        if deadline is None:
            deadline = self._deadline()
        backoff = RETRY_INITIAL_BACKOFF
        for n in range(1, RETRY_ATTEMPTS + 1):
            if group is not None:
                group.check()
            timeout = (None if deadline is None
                       else max(0.0, deadline - time.monotonic()))
            try:
                return attempt(timeout)
            except Unavailable:
                wait = backoff * random.uniform(0.8, 1.2)
                if (not replayable or n == RETRY_ATTEMPTS or
                        (deadline is not None
                         and time.monotonic() + wait >= deadline)):
                    raise
            time.sleep(wait)
            backoff = min(2 * backoff, RETRY_MAX_BACKOFF)
        raise AssertionError('unreachable')  # pragma: no cover

    # -- Compress ----------------------------------------------------------

    def compress(self,
                 array: Any,
                 *,
                 abs: Optional[float] = None,  # pylint: disable=redefined-builtin
                 rel: Optional[float] = None,
                 fill_value: Optional[float] = None,
                 frame_elements: int = 0,
                 gap_array: Optional[bool] = None,
                 request_id: str = '',
                 priority: int = 0,
                 radius: int = 0,
                 chunk_symbols: int = 0,
                 subsequence_bits: int = 0,
                 chunk_group: int = 0,
                 block: Sequence[int] = (),
                 predictor: str = 'auto',
                 lossless: str = 'auto',
                 interp_order: int = 0,
                 metadata: str = '',
                 streams: Optional[int] = None) -> bytes:
        """Compresses a float32 or float64 array of 1 to 4 dimensions.

        Args:
            array: Anything numpy.asarray turns into a float32/float64
                array, in any byte order or memory layout (a copy is made
                only when it is not C-contiguous little-endian). A
                numpy.ma masked array's mask becomes the fill value
                (ebzip.masked.unmask), never dropped.
            abs: Absolute bound: |x - y| <= abs for every finite x.
            rel: Relative bound: |x - y| <= rel * (max - min) over the finite
                values that are not fill_value. Exactly one of abs and rel.
            fill_value: Values bit-equal to this one (after narrowing to the
                array's dtype) come back exactly and are left out of rel's
                range, e.g. -1e34 or a NetCDF _FillValue.
            frame_elements: Target elements per frame; 0: server default.
            gap_array: Whether to store a gap array; None: server default.
            request_id: Echoed in the server's logs and errors.
            priority: Higher goes first among queued requests.
            radius: Quantization radius; 0: server default.
            chunk_symbols: Huffman chunk length; 0: server default.
            subsequence_bits: Gap-array granularity; 0: server default.
            chunk_group: Chunks per chunk-index group; 0: server default.
            block: Lorenzo block edge per dimension; empty: server default.
            predictor: 'auto' (each frame picks the smaller), 'lorenzo' or
                'interp' (FORMAT.md §15.9).
            lossless: 'auto', 'huffman', 'runs' (Huffman with zero-run
                tokens) or 'run-values' (with run-value tokens too); 'lorenzo'
                with 'huffman' writes format version 1.
            interp_order: Interpolation order, 1 or 3; 0: chosen per frame.
            The eight before metadata change the archive's bytes and speed,
            never the bound; the defaults are the command line's.
            metadata: A JSON object describing the variable, stored in the
                archive's metadata block as `ebzip compress file.nc:VAR`
                stores it (at most 1 MiB; '' for none).
            streams: This call's Client(streams=); None: the client's. The
                parts of a split call each send their rows with the whole
                array's value range (a relative bound is scanned here), and
                their archives are put together into the one-call archive.

        Returns:
            The archive: the bytes `ebzip compress` would write to a file.

        Raises:
            ValueError, TypeError: Bad arguments, before any call.
            Error: The server refused or failed (a subclass by status code).
        """
        archive, _ = self.compress_with_summary(
            array, abs=abs, rel=rel, fill_value=fill_value,
            frame_elements=frame_elements, gap_array=gap_array,
            request_id=request_id, priority=priority, radius=radius,
            chunk_symbols=chunk_symbols, subsequence_bits=subsequence_bits,
            chunk_group=chunk_group, block=block, predictor=predictor,
            lossless=lossless, interp_order=interp_order, metadata=metadata,
            streams=streams)
        return archive

    def compress_with_summary(
            self, array: Any, **kwargs: Any
    ) -> Tuple[bytes, 'ebzip_pb2.CompressSummary']:
        """Like compress(), and also returns the server's CompressSummary.

        The summary holds what a caller cannot recompute cheaply: the
        absolute bound a relative one resolved to, outlier and verbatim
        counts, and where the time went (queue_seconds, compute_seconds).
        """
        streams = kwargs.pop('streams', None)
        streams = self._streams if streams is None else _check_streams(streams)
        # A masked array's mask becomes the fill value (ebzip.masked).
        fill_value = kwargs.get('fill_value')
        if fill_value is not None:
            _check_real('fill_value', fill_value)
        array, kwargs['fill_value'] = _masked.unmask(array, fill_value)
        a = as_wire_array(array)
        header = compress_header(a.dtype, a.shape, **kwargs)
        # A flat byte view of the caller's memory: slices of it are the only
        # copies made, one message at a time.
        view = a.reshape(-1).view(np.uint8)
        split = self._compress_in_parts(a, view, header, streams)
        if split is not None:
            archive, summary = split
        else:
            _send_range(a, header)
            archive, summary = self._with_retries(
                lambda timeout: self._compress(header, [view], timeout))
        if header.error_bound.mode == ebzip_pb2.REL:
            _safety.warn_dominated_range(
                a, kwargs['fill_value'], header.error_bound.value,
                summary.abs_error_bound)
        _safety.warn_larger_archive(len(archive), a.nbytes, a)
        return archive, summary

    def compress_chunks(self,
                        dtype: Any,
                        shape: Sequence[int],
                        chunks: Iterable[BytesLike],
                        **kwargs: Any) -> Tuple[bytes, 'ebzip_pb2.CompressSummary']:
        """Compresses an array given as raw little-endian bytes, in pieces.

        For arrays that are not in memory as one buffer, e.g. read from a
        raw file piece by piece. The pieces may have any size (they are
        re-cut into messages of at most 1 MiB) and are consumed lazily; their
        total must be prod(shape) * itemsize, which the server checks
        (InvalidArgument otherwise). Keyword arguments are compress()'s.
        A call a server refuses runs again only when chunks is a list or a
        tuple: an iterator's pieces can be read once.

        Returns:
            (archive, summary), as compress_with_summary().
        """
        header = compress_header(dtype, shape, **kwargs)
        archive, summary = self._with_retries(
            lambda timeout: self._compress(header, chunks, timeout),
            replayable=isinstance(chunks, (list, tuple)))
        _safety.warn_larger_archive(
            len(archive), math.prod(header.array.shape) *
            np.dtype(dtype).itemsize)
        return archive, summary

    def _compress_in_parts(self, a: np.ndarray, view: np.ndarray,
                           header: 'ebzip_pb2.CompressHeader', streams: int
                           ) -> Optional[Tuple[bytes, 'ebzip_pb2.CompressSummary']]:
        """The array compressed in parts of whole frames, one call each, at
        once; None when it goes in one call (one frame, streams=1, no
        in-process codec, or options the codec refuses: the server's to
        refuse then, as usual)."""
        if _ebzip is None:
            return None
        try:
            plan = _plan(header)
        except (ValueError, TypeError, _ebzip.StatusError):
            return None
        parts = _parts_for(streams, a.nbytes, plan.frame_count)
        if parts < 2:
            return None
        # Every part is quantized against the whole array's range.
        value_range = None
        if header.error_bound.mode == ebzip_pb2.REL:
            o = header.options
            value_range = _ebzip.value_range(
                a, fill_value=o.fill_value if o.HasField('fill_value') else None)
        try:
            plan = _plan(header, value_range)
        except _ebzip.StatusError as e:
            raise _codec_error(e) from None
        ranges = _ebzip.split_frames(plan.frame_count, parts)
        stubs = self._stubs(len(ranges))
        deadline = self._deadline()
        group = _PartGroup()

        def part(i: int) -> Callable[[], Tuple[bytes, 'ebzip_pb2.CompressSummary']]:
            shape, offset = plan.part(*ranges[i])
            part_header = ebzip_pb2.CompressHeader()
            part_header.CopyFrom(header)
            del part_header.array.shape[:]
            part_header.array.shape.extend(shape)
            if value_range is not None:
                r = part_header.options.value_range
                r.any, r.min, r.max = value_range
            rows = view[offset:offset + math.prod(shape) * a.itemsize]
            return lambda: self._with_retries(
                lambda timeout: self._compress(part_header, [rows], timeout,
                                               stub=stubs[i], group=group),
                deadline=deadline, group=group)

        results = group.run([part(i) for i in range(len(ranges))])
        try:
            archive = plan.assemble([r[0] for r in results])
        except _ebzip.StatusError as e:
            raise ProtocolError(f'Compress: a part archive does not fit the others: '
                                f'{e.args[-1]}') from None
        except MemoryError:
            raise ResourceExhausted(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                'out of memory putting the parts\' archives together') from None
        summary = ebzip_pb2.CompressSummary(
            input_bytes=a.nbytes, archive_bytes=len(archive),
            abs_error_bound=plan.abs_bound)
        backends = []
        for _, p in results:
            summary.outliers += p.outliers
            summary.verbatim += p.verbatim
            summary.frames += p.frames
            summary.fill_runs += p.fill_runs
            summary.compute_seconds += p.compute_seconds
            summary.queue_seconds = max(summary.queue_seconds, p.queue_seconds)
            summary.request_id = summary.request_id or p.request_id
            if p.backend not in backends:
                backends.append(p.backend)
        summary.backend = ','.join(backends)
        return archive, summary

    def _compress(self, header: 'ebzip_pb2.CompressHeader',
                  chunks: Iterable[Any], timeout: Optional[float],
                  stub: Optional[Any] = None, group: Optional[_PartGroup] = None
                  ) -> Tuple[bytes, 'ebzip_pb2.CompressSummary']:
        # gRPC runs the request iterator on its own thread and turns an
        # exception there (say, an OSError from a file the chunks are read
        # from) into a bare CANCELLED; keep it to raise it as itself.
        failures = []

        def requests() -> Iterator['ebzip_pb2.CompressRequest']:
            try:
                yield from compress_requests(header, chunks)
            except Exception as e:  # pylint: disable=broad-except
                failures.append(e)
                raise

        call = (stub or self._stub).Compress(requests(), timeout=timeout,
                                             metadata=self._metadata())
        if group is not None:
            group.track(call)
        parts = []
        received = 0
        limit = max_archive_bytes(header)
        summary = None
        try:
            for response in call:
                kind = response.WhichOneof('msg')
                if kind == 'archive' and summary is None:
                    received += len(response.archive)
                    if received > limit:
                        raise ProtocolError(
                            f'Compress: more than {limit} archive bytes, more '
                            f'than any archive of this array can take')
                    parts.append(response.archive)
                elif kind == 'summary' and summary is None:
                    summary = response.summary
                else:
                    raise ProtocolError(
                        f'Compress: unexpected {kind or "empty"} message'
                        + (' after the summary' if summary is not None else ''))
        except grpc.RpcError as e:
            if failures:
                raise failures[0] from None
            raise _error_from_rpc(e) from e
        finally:
            call.cancel()  # a no-op once the call has ended normally
            if group is not None:
                group.untrack(call)
        if summary is None:
            raise ProtocolError('Compress: the stream ended without a summary')
        try:
            archive = b''.join(parts)
        except MemoryError:
            raise ResourceExhausted(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f'out of memory joining {received} archive bytes') from None
        if summary.archive_bytes and summary.archive_bytes != len(archive):
            raise ProtocolError(
                f'Compress: received {len(archive)} archive bytes, the '
                f'summary says {summary.archive_bytes}')
        return archive, summary

    # -- Decompress --------------------------------------------------------

    def decompress(self, data: Optional[BytesLike] = None, *,
                   out: Optional[np.ndarray] = None,
                   masked: bool = False, request_id: str = '',
                   priority: int = 0,
                   max_output_bytes: Optional[int] = None,
                   region: Optional[RegionLike] = None,
                   remote_path: Optional[str] = None,
                   streams: Optional[int] = None) -> np.ndarray:
        """Decompresses an archive, or a region of it, into a numpy array.

        Args:
            data: The archive (bytes, bytearray, memoryview, or any
                contiguous buffer such as a numpy.memmap of a file); None
                with remote_path.
            out: A C-contiguous writeable array of the archive's shape and
                dtype that the reply is written into as it arrives; None: a
                new array.
            masked: Return a numpy.ma array masked where the archive's fill
                value is (read from the archive's header here, which needs
                the in-process extension).
            request_id: Sent as `ebzip-request-id` metadata, for the logs.
            priority: Sent as `ebzip-priority` metadata when not 0.
            max_output_bytes: The largest array to accept from this call;
                None: the client's.
            region: Only these values: (start, count) or (start, count,
                step), one entry per dimension each; the result has shape
                count (0 allowed) and holds exactly what the same slice of
                a full decode holds. The server decodes only the frames the
                region meets and sends the region alone. ebzip.open gives
                NumPy slicing on top of this.
            remote_path: An archive on the server, relative to its
                --archive_root, instead of data (docs/operations.md).
            streams: This call's Client(streams=); None: the client's. An
                uploaded archive decoded whole may be split into part
                archives of whole frames, whose rows each call writes
                straight into its place in the result; a region or a
                remote_path is always one call.

        Returns:
            out, or a C-contiguous little-endian float32 or float64 array of
            the archive's shape (or the region's).

        Raises:
            DataLoss: The archive is corrupt or truncated.
            ResourceExhausted: The array is larger than max_output_bytes or
                than this process can allocate (or the server is full).
            InvalidArgument: A region that does not fit the array, or a
                malformed remote_path.
            NotFound, PermissionDenied, FailedPrecondition: remote_path
                names no file, a symbolic link or no regular file, or the
                server has no --archive_root.
            ProtocolError: The server's reply broke the API.
            ValueError, TypeError: A bad out, or one that does not fit the
                archive's array.
            Error: Any other failure (a subclass by status code).
        """
        if out is not None:
            _check_out(out)
        if masked and data is None:
            raise ValueError('masked=True reads the fill value from the archive\'s bytes: '
                             'pass data, not remote_path')
        array, _ = self.decompress_with_header(
            data, request_id=request_id, priority=priority,
            max_output_bytes=max_output_bytes, out=out, region=region,
            remote_path=remote_path, streams=streams)
        if masked:
            # Imported here: ebzip.local builds on this module.
            from ebzip import local  # pylint: disable=import-outside-toplevel
            return _masked.remask(array, local.info(data)['fill_value'])
        return array

    def decompress_with_header(
            self, data: Optional[BytesLike] = None, *, request_id: str = '',
            priority: int = 0,
            max_output_bytes: Optional[int] = None,
            out: Optional[np.ndarray] = None,
            region: Optional[RegionLike] = None,
            remote_path: Optional[str] = None,
            streams: Optional[int] = None
    ) -> Tuple[np.ndarray, 'ebzip_pb2.DecompressHeader']:
        """Like decompress(), and also returns the DecompressHeader.

        The header carries the absolute bound the archive was written with
        (and, with region or remote_path, the whole array in archive_array).
        A split call's header is the whole array's, with the backends of its
        parts' servers in backend (comma-separated when they differ).
        """
        limit = (self._max_output_bytes if max_output_bytes is None
                 else _check_max_output_bytes(max_output_bytes))
        streams = self._streams if streams is None else _check_streams(streams)
        return self._decompress_call(data, request_id, priority, limit, out,
                                     decompress_options(region, remote_path), streams)

    def archive_header(self, data: Optional[BytesLike] = None, *,
                       remote_path: Optional[str] = None, request_id: str = '',
                       priority: int = 0) -> 'ebzip_pb2.DecompressHeader':
        """What an archive holds, validated by the server, without its values:
        header.array is the whole array's dtype and shape, abs_error_bound
        its bound. For archives on the server (remote_path) the client
        cannot read itself."""
        _, header = self._decompress_call(
            data, request_id, priority, self._max_output_bytes, None,
            decompress_options(None, remote_path, header_only=True))
        return header

    def _decompress_call(self, data: Optional[BytesLike], request_id: str, priority: int,
                         limit: int, out: Optional[np.ndarray],
                         options: Optional['ebzip_pb2.DecompressOptions'],
                         streams: int = 1
                         ) -> Tuple[np.ndarray, 'ebzip_pb2.DecompressHeader']:
        extra = []
        if request_id:
            extra.append(('ebzip-request-id', request_id))
        if priority:
            extra.append(('ebzip-priority', str(int(priority))))
        if options is not None and options.archive_path:
            if data is not None:
                raise ValueError('remote_path names the archive: pass no data')
            data = b''
        elif data is None:
            raise TypeError('decompress needs the archive (data) or a remote_path')
        view = _byte_view(data)  # before the call: a bad buffer raises here
        if options is None:
            split = self._decompress_in_parts(view, extra, limit, out, streams)
            if split is not None:
                return split
        return self._with_retries(
            lambda timeout: self._decompress(view, extra, timeout, limit, out, options))

    def _decompress_in_parts(self, view: memoryview, extra: Sequence[Tuple[str, str]],
                             limit: int, dest: Optional[np.ndarray], streams: int
                             ) -> Optional[Tuple[np.ndarray, 'ebzip_pb2.DecompressHeader']]:
        """The archive decoded in part archives of whole frames, one call
        each, at once, each writing its rows into the result; None when it
        goes in one call (one frame, streams=1, no in-process codec, or an
        archive the codec cannot read: the server's to refuse, as usual)."""
        if _ebzip is None:
            return None
        try:
            info = _ebzip.info(view)
        except (ValueError, _ebzip.StatusError):
            return None
        dtype = np.dtype(info['dtype']).newbyteorder('<')
        shape = tuple(info['shape'])
        nbytes = math.prod(shape) * dtype.itemsize
        parts = _parts_for(streams, nbytes, info['frame_count'])
        if parts < 2:
            return None
        spec = ebzip_pb2.ArraySpec(dtype=_DTYPE_TO_PROTO[dtype], shape=shape)
        out = _empty_for(spec, limit) if dest is None else _fit_out(dest, spec)
        ranges = _ebzip.split_frames(info['frame_count'], parts)
        stubs = self._stubs(len(ranges))
        deadline = self._deadline()
        group = _PartGroup()
        frame_rows = info['frame_rows']

        def part(i: int) -> Callable[[], 'ebzip_pb2.DecompressHeader']:
            first, count = ranges[i]
            rows = out[first * frame_rows:(first + count) * frame_rows]

            def check(h: 'ebzip_pb2.DecompressHeader') -> None:
                if (h.array.dtype != spec.dtype or tuple(h.array.shape) != rows.shape
                        or h.abs_error_bound != info['abs_bound']):
                    raise ProtocolError(
                        f'Decompress: part {i} answered with another array '
                        f'({tuple(h.array.shape)}, bound {h.abs_error_bound})')

            def run() -> 'ebzip_pb2.DecompressHeader':
                try:
                    archive = memoryview(_ebzip.part_archive(view, first, count))
                except _ebzip.StatusError as e:
                    raise _codec_error(e) from None
                return self._with_retries(
                    lambda timeout: self._decompress(archive, extra, timeout, limit, rows,
                                                     stub=stubs[i], group=group,
                                                     check=check)[1],
                    deadline=deadline, group=group)
            return run

        headers = group.run([part(i) for i in range(len(ranges))])
        backends = []
        for h in headers:
            if h.backend not in backends:
                backends.append(h.backend)
        header = ebzip_pb2.DecompressHeader(
            array=spec, abs_error_bound=info['abs_bound'],
            request_id=headers[0].request_id, backend=','.join(backends))
        return out, header

    def _decompress(self, view: memoryview, extra: Sequence[Tuple[str, str]],
                    timeout: Optional[float], max_output_bytes: int,
                    dest: Optional[np.ndarray] = None,
                    options: Optional['ebzip_pb2.DecompressOptions'] = None,
                    stub: Optional[Any] = None, group: Optional[_PartGroup] = None,
                    check: Optional[Callable[['ebzip_pb2.DecompressHeader'], None]] = None
                    ) -> Tuple[np.ndarray, 'ebzip_pb2.DecompressHeader']:
        call = (stub or self._stub).Decompress(decompress_requests(view, options),
                                               timeout=timeout,
                                               metadata=self._metadata(*extra))
        if group is not None:
            group.track(call)
        header = None
        out = None
        out_bytes = None  # flat uint8 view of out, filled in order
        filled = 0
        try:
            for response in call:
                kind = response.WhichOneof('msg')
                if kind == 'header' and header is None:
                    header = response.header
                    if check is not None:
                        check(header)
                    if options is not None:
                        _check_options_reply(header, options)
                    if options is not None and options.header_only:
                        out = np.empty(0, np.uint8)
                    else:
                        out = (_empty_for(header.array, max_output_bytes,
                                          allow_empty=options is not None)
                               if dest is None else _fit_out(dest, header.array))
                    out_bytes = out.reshape(-1).view(np.uint8)
                elif kind == 'data' and header is not None:
                    chunk = response.data
                    end = filled + len(chunk)
                    if end > out_bytes.size:
                        raise ProtocolError(
                            f'Decompress: more data than the header\'s '
                            f'{out_bytes.size} bytes')
                    out_bytes[filled:end] = np.frombuffer(chunk, np.uint8)
                    filled = end
                else:
                    raise ProtocolError(
                        f'Decompress: unexpected {kind or "empty"} message'
                        + (' before the header' if header is None else ''))
        except grpc.RpcError as e:
            raise _error_from_rpc(e) from e
        finally:
            call.cancel()
            if group is not None:
                group.untrack(call)
        if header is None:
            raise ProtocolError('Decompress: the stream ended without a header')
        if filled != out_bytes.size:
            raise ProtocolError(
                f'Decompress: received {filled} of {out_bytes.size} bytes')
        if options is not None and options.header_only:
            return None, header
        return out, header

    # -- Server information ------------------------------------------------

    def server_info(self) -> 'ebzip_pb2.ServerInfo':
        """The server's version, devices, backend and limits."""
        try:
            return self._stub.GetServerInfo(ebzip_pb2.GetServerInfoRequest(),
                                            timeout=self._timeout,
                                            metadata=self._metadata())
        except grpc.RpcError as e:
            raise _error_from_rpc(e) from e

    def health(self, service: str = '',
               timeout: Optional[float] = None) -> ServingStatus:
        """The grpc.health.v1 status of service ('' is the whole server).

        Args:
            service: The service name, e.g. "ebzip.v1.Compressor".
            timeout: Overrides the client's timeout, e.g. to poll a server
                that is starting.

        Returns:
            The status; a draining server answers NOT_SERVING.

        Raises:
            NotFound: The server does not know service.
            Unavailable: The server cannot be reached.
        """
        timeout = self._timeout if timeout is None else timeout
        try:
            if _health_pb2_grpc is not None:
                stub = _health_pb2_grpc.HealthStub(self._channel)
                status = stub.Check(
                    _health_pb2.HealthCheckRequest(service=service),
                    timeout=timeout, metadata=self._metadata()).status
            else:
                # No grpc_health: call the method by name. With no
                # deserializer gRPC hands back the raw bytes, which are
                # parsed outside the call so that a malformed answer is a
                # ProtocolError rather than gRPC's generic INTERNAL.
                check = self._channel.unary_unary(
                    _HEALTH_CHECK_METHOD,
                    request_serializer=_encode_health_request,
                    response_deserializer=None)
                status = _parse_health_response(
                    check(service, timeout=timeout,
                          metadata=self._metadata()))
        except grpc.RpcError as e:
            raise _error_from_rpc(e) from e
        try:
            return ServingStatus(status)
        except ValueError:
            raise ProtocolError(f'unknown health status {status}') from None


def _check_out(out: Any) -> None:
    """What decompress(out=) needs before the call: a writeable C array."""
    if not isinstance(out, np.ndarray):
        raise TypeError(f'out must be a numpy array, not {type(out).__name__}')
    if not out.flags.c_contiguous:
        raise ValueError('out must be C-contiguous')
    if not out.flags.writeable:
        raise ValueError('out must be writeable')


def _fit_out(out: np.ndarray, spec: 'ebzip_pb2.ArraySpec') -> np.ndarray:
    """out, once the reply's header says which array the archive holds."""
    dtype = _DTYPE_FROM_PROTO.get(spec.dtype)
    shape = tuple(spec.shape)
    if dtype is None:
        raise ProtocolError(f'Decompress: unknown dtype {spec.dtype}')
    if out.shape != shape or out.dtype != dtype:
        raise ValueError(f'out is a {out.dtype} {out.shape} array, the archive '
                         f'holds {dtype} {shape}')
    return out


def _check_options_reply(header: 'ebzip_pb2.DecompressHeader',
                         options: 'ebzip_pb2.DecompressOptions') -> None:
    """A reply to a request with options: from a server that understood
    them (archive_array set), with the array asked for."""
    if not header.HasField('archive_array'):
        raise FailedPrecondition(
            grpc.StatusCode.FAILED_PRECONDITION,
            'the server ignored the request\'s options (region, remote_path, '
            'header only): it predates them')
    whole = header.archive_array
    if header.array.dtype != whole.dtype:
        raise ProtocolError('Decompress: the reply\'s dtype is not the archive\'s')
    want = (list(options.region.count) if options.HasField('region')
            else list(whole.shape))
    if list(header.array.shape) != want:
        raise ProtocolError(f'Decompress: the reply\'s shape {list(header.array.shape)} '
                            f'is not the one asked for, {want}')


def _empty_for(spec: 'ebzip_pb2.ArraySpec',
               max_output_bytes: int, allow_empty: bool = False) -> np.ndarray:
    """The output array a DecompressHeader announces, checked first.

    Raises:
        ProtocolError: No valid array: an unknown dtype, not 1 to 4
            dimensions each >= 1, or a byte count beyond 64 bits (what the
            API allows).
        ResourceExhausted: More than max_output_bytes, or more than this
            process can allocate; never numpy's MemoryError.
    """
    dtype = _DTYPE_FROM_PROTO.get(spec.dtype)
    shape = tuple(spec.shape)
    if dtype is None:
        raise ProtocolError(f'Decompress: unknown dtype {spec.dtype}')
    if not 1 <= len(shape) <= 4 or min(shape) < (0 if allow_empty else 1):
        raise ProtocolError(f'Decompress: bad shape {shape}')
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes >= 1 << 64:
        raise ProtocolError(f'Decompress: shape {shape} of {dtype} is more '
                            f'than 2**64 bytes')
    if nbytes > max_output_bytes:
        raise ResourceExhausted(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f"the server's reply describes an array of {nbytes} bytes "
            f'({dtype.name} {shape}), more than max_output_bytes='
            f'{max_output_bytes}; raise it to accept')
    try:
        return np.empty(shape, dtype)
    except (MemoryError, ValueError) as e:  # ValueError: beyond numpy's sizes
        raise ResourceExhausted(
            grpc.StatusCode.RESOURCE_EXHAUSTED,
            f'cannot allocate an array of {nbytes} bytes ({dtype.name} '
            f'{shape}): {e}') from None


# ---------------------------------------------------------------------------
# One-call conveniences.


def compress(array: Any,
             server: str,
             *,
             abs: Optional[float] = None,  # pylint: disable=redefined-builtin
             rel: Optional[float] = None,
             tls_ca: Optional[Union[str, os.PathLike, bytes]] = None,
             token: Optional[str] = None,
             timeout: Optional[float] = DEFAULT_TIMEOUT,
             **options: Any) -> bytes:
    """Compresses array on server in one call; see Client.compress.

    Opens and closes a channel each time: for many calls, keep a Client.
    """
    with Client(server, tls_ca=tls_ca, token=token, timeout=timeout) as c:
        return c.compress(array, abs=abs, rel=rel, **options)


def decompress(data: BytesLike,
               server: str,
               *,
               tls_ca: Optional[Union[str, os.PathLike, bytes]] = None,
               token: Optional[str] = None,
               timeout: Optional[float] = DEFAULT_TIMEOUT,
               max_output_bytes: Optional[int] = None) -> np.ndarray:
    """Decompresses an archive on server in one call; see Client.decompress."""
    with Client(server, tls_ca=tls_ca, token=token, timeout=timeout,
                max_output_bytes=max_output_bytes) as c:
        return c.decompress(data)
