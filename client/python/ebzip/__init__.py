"""ebzip: error-bounded compression of float32/float64 arrays.

    import numpy as np
    import ebzip

    field = np.load('field.npy')                    # float32 or float64
    archive = ebzip.compress(field, rel=1e-4)       # bytes, as `ebzip compress`
    restored = ebzip.decompress(archive)            # numpy array

runs the codec in this process (ebzip.local, the C++ CPU codec). The same
calls with server='host:50051', or an ebzip.Client, run on an ebzipd
(server/; its API is proto/ebzip/v1/ebzip.proto, whose generated modules
live in ebzip.v1). ebzip.numcodecs.Ebzip is the codec for Zarr, xarray and
Dask, registered with numcodecs as "ebzip" when this package is imported.
docs/python.md is the guide.
"""

from ebzip.api import compress, decompress
from ebzip.client import (DEFAULT_TIMEOUT, Cancelled, Client, DataLoss,
                          DeadlineExceeded, Error, FailedPrecondition, Internal,
                          InvalidArgument,
                          NotFound, PermissionDenied, ProtocolError,
                          ResourceExhausted, ServingStatus, Unauthenticated,
                          Unavailable, Unimplemented)
from ebzip.local import gpu_available, info
from ebzip.region import Archive, open  # pylint: disable=redefined-builtin
from ebzip.safety import (DominatedRangeWarning, EbzipWarning,
                          LargerArchiveWarning)

try:
    from ebzip._version import __version__
except ImportError:  # the source tree, not the build's copy
    __version__ = '0+unknown'

try:
    import numcodecs as _numcodecs
except ImportError:
    pass
else:
    from ebzip import numcodecs as _ebzip_numcodecs
    _numcodecs.register_codec(_ebzip_numcodecs.Ebzip)

__all__ = [
    'Archive',
    'Cancelled',
    'Client',
    'DEFAULT_TIMEOUT',
    'DataLoss',
    'DeadlineExceeded',
    'DominatedRangeWarning',
    'EbzipWarning',
    'Error',
    'FailedPrecondition',
    'Internal',
    'InvalidArgument',
    'LargerArchiveWarning',
    'NotFound',
    'PermissionDenied',
    'ProtocolError',
    'ResourceExhausted',
    'ServingStatus',
    'Unauthenticated',
    'Unavailable',
    'Unimplemented',
    'open',
    'compress',
    'decompress',
    'gpu_available',
    'info',
    '__version__',
]
