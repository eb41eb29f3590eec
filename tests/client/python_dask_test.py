#!/usr/bin/env python3
"""A Dask cluster of worker processes compressing a Zarr store in parallel.

Usage:
    python_dask_test.py [unittest args...]

with PYTHONPATH pointing at build/python. Run by ctest as python_dask_test.

A distributed.LocalCluster with two worker processes (one thread each, so
that it fits a 2-core machine) writes Levitus salinity and temperature,
opened lazily as dask arrays of 16 chunks each, to Zarr through
ebzip.numcodecs.Ebzip with the codec in each worker's process. The task
stream must show the chunks stored by both workers, and every chunk read
back from the store is checked against the file's values within its own
relative bound, in float64 (python_numcodecs_test's check_chunks).
"""

import os
import sys
import tempfile
import unittest
import warnings

import distributed
import numpy as np
import xarray as xr
import zarr

import ebzip
from ebzip.numcodecs import Ebzip
import python_client_test as pct
import python_numcodecs_test as pnt

LEVITUS = os.path.join(pct.DATA_DIR, 'levitus_climatology.cdf')
CHUNKS = {'ZAXLEVITR': 5, 'YAXLEVITR': 90, 'XAXLEVITR': 180}


def codec_in_process():
    """Run on each worker: whether it loaded the in-process codec."""
    return 'ebzip._ebzip' in sys.modules


class DaskClusterTest(unittest.TestCase):

    def test_local_cluster_writes_every_chunk_within_bound(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        path = os.path.join(tmp.name, 'levitus.zarr')
        with distributed.LocalCluster(
                n_workers=2, threads_per_worker=1, processes=True,
                dashboard_address=None, local_directory=tmp.name) as cluster, \
                distributed.Client(cluster) as client:
            ds = xr.open_dataset(LEVITUS, chunks=CHUNKS)
            self.assertGreater(ds.SALT.data.npartitions, 1)
            encoding = {v: {'compressor': Ebzip(rel=1e-4, fill_value=-1e10),
                            '_FillValue': -1e10} for v in ('SALT', 'TEMP')}
            with distributed.get_task_stream(client) as stream:
                with warnings.catch_warnings():
                    warnings.simplefilter('error', ebzip.EbzipWarning)
                    ds.to_zarr(path, encoding=encoding)
            # Zarr's chunks are encoded in dask's store-map tasks.
            workers = {t['worker'] for t in stream.data
                       if str(t['key']).startswith("('store-map")}
            self.assertEqual(len(workers), 2, f'stored by {workers}')
            pids = client.run(os.getpid)
            self.assertEqual(len(set(pids.values()) - {os.getpid()}), 2)
            self.assertEqual(set(client.run(codec_in_process).values()), {True})
        raw = xr.open_dataset(LEVITUS, mask_and_scale=False)
        store = zarr.open(path, mode='r')
        chunks = tuple(CHUNKS[d] for d in raw.SALT.dims)
        for var in ('SALT', 'TEMP'):
            with self.subTest(var=var):
                self.assertEqual(store[var].chunks, chunks)
                self.assertEqual(store[var].nchunks_initialized, 16)
                n = pnt.check_chunks(self, raw[var].values, store[var][:],
                                     chunks, rel=1e-4, fill=-1e10)
                self.assertEqual(n, 16)
        back = xr.open_zarr(path)
        for name in raw.coords:
            np.testing.assert_array_equal(back[name].values, raw[name].values)


if __name__ == '__main__':
    unittest.main(verbosity=2)
