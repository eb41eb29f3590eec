"""Python client of ebzip, error-bounded compression of float arrays.

    import numpy as np
    import ebzip

    field = np.load('field.npy')                      # float32 or float64
    with ebzip.Client('localhost:50051') as client:
        archive = client.compress(field, rel=1e-4)    # bytes, as `ebzip compress`
        restored = client.decompress(archive)         # numpy array

The server is ebzipd (server/); the API is proto/ebzip/v1/ebzip.proto. The
generated modules live in ebzip.v1, next to this package in build/python.
"""

from ebzip.client import (Cancelled, Client, DataLoss, DeadlineExceeded,
                          Error, Internal, InvalidArgument, NotFound,
                          PermissionDenied, ProtocolError, ResourceExhausted,
                          ServingStatus, Unauthenticated, Unavailable,
                          Unimplemented, compress, decompress)

__all__ = [
    'Cancelled',
    'Client',
    'DataLoss',
    'DeadlineExceeded',
    'Error',
    'Internal',
    'InvalidArgument',
    'NotFound',
    'PermissionDenied',
    'ProtocolError',
    'ResourceExhausted',
    'ServingStatus',
    'Unauthenticated',
    'Unavailable',
    'Unimplemented',
    'compress',
    'decompress',
]
