"""ebzip as an HDF5 filter, for h5py and any HDF5 program.

    import h5py
    import ebzip.hdf5
    with h5py.File('out.h5', 'w') as f:
        f.create_dataset('t', data=a, chunks=(1, 180, 360),
                         **ebzip.hdf5.Ebzip(rel=1e-4))

The filter is the plugin libH5Z_ebzip.so (hdf5_plugin/), which the build
puts in build/hdf5_plugin. HDF5 programs (h5dump, netCDF-C, ...) load it from
the directories in HDF5_PLUGIN_PATH; importing this module also adds
PLUGIN_PATH to h5py's plugin search path, as hdf5plugin does for its filters.

Each chunk is stored as the archive ebzip.compress makes of that chunk (an
array of the chunk's shape), so a chunk's bytes decode with ebzip.decompress
too. FILTER_ID is from the range HDF5 leaves for testing (256-511) and is not
registered with The HDF Group: files written with it name it, so it will
change when an id is registered (docs/python.md, HDF5).

The filter's cd_values (hdf5_plugin/cd_values.h has the layout): the layout
version, the dtype (set from the dataset), the bound mode and value, the fill
value, then the chunk shape (set from the dataset).
"""

from __future__ import annotations

import collections.abc
import math
import os
import struct
from typing import Any, Dict, Iterator, Optional, Tuple

from ebzip import client as _client
from ebzip import local as _local

FILTER_ID = 491
PLUGIN_NAME = 'libH5Z_ebzip.so'
CD_VALUES_VERSION = 1

_MODES = {'abs': 1, 'rel': 2}
_DTYPES = {1: 'float32', 2: 'float64'}
_FILL_FROM_DATASET, _FILL_GIVEN, _FILL_NONE = 0, 1, 2


def _words(value: float) -> Tuple[int, int]:
    """A double as two unsigned 32-bit words, low word first."""
    low, high = struct.unpack('<II', struct.pack('<d', value))
    return low, high


def _double(low: int, high: int) -> float:
    return struct.unpack('<d', struct.pack('<II', low, high))[0]


def _find_plugin_dir() -> Optional[str]:
    """The directory holding the plugin: the build's hdf5_plugin beside
    python/ (this package lives in build/python/ebzip), else the first entry
    of HDF5_PLUGIN_PATH that has it."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.path.join(here, os.pardir, os.pardir, 'hdf5_plugin')]
    candidates += [d for d in os.environ.get('HDF5_PLUGIN_PATH', '').split(os.pathsep) if d]
    for d in candidates:
        if os.path.isfile(os.path.join(d, PLUGIN_NAME)):
            return os.path.normpath(d)
    return None


# The directory to put in HDF5_PLUGIN_PATH for programs other than this
# process (h5dump, ncdump, another interpreter); None where not found.
PLUGIN_PATH: Optional[str] = _find_plugin_dir()


def register() -> str:
    """Makes h5py's HDF5 library find the filter: adds PLUGIN_PATH to its
    plugin search path (once). Done on import when h5py and the plugin are
    there; call it to get an error that says why when they are not.

    Returns:
        PLUGIN_PATH.

    Raises:
        ImportError: h5py is not installed.
        FileNotFoundError: The plugin is neither in the build beside this
            package nor in HDF5_PLUGIN_PATH.
    """
    import h5py  # pylint: disable=import-outside-toplevel
    if PLUGIN_PATH is None:
        raise FileNotFoundError(
            f'{PLUGIN_NAME} is not in build/hdf5_plugin beside this package nor '
            f'in HDF5_PLUGIN_PATH; build the target ebzip_hdf5_plugin or set '
            f'HDF5_PLUGIN_PATH to its directory')
    path = PLUGIN_PATH.encode()
    if path not in [h5py.h5pl.get(i) for i in range(h5py.h5pl.size())]:
        h5py.h5pl.prepend(path)
    return PLUGIN_PATH


try:
    import h5py as _h5py
    _Base: Any = _h5py.filters.FilterRefBase
except ImportError:  # pragma: no cover - h5py is optional
    _h5py = None
    _Base = collections.abc.Mapping
else:
    if PLUGIN_PATH is not None:
        register()


class Ebzip(_Base):  # type: ignore[misc,valid-type]
    """The filter's arguments for h5py's create_dataset.

    Use it as keyword arguments, `create_dataset(..., **Ebzip(rel=1e-4))`,
    or as `compression=Ebzip(rel=1e-4)`: both give compression=FILTER_ID and
    compression_opts=the cd_values. The dataset must be chunked (h5py
    chooses chunks when none are given) and little-endian float32 or
    float64; HDF5 fails its creation otherwise.

    Args:
        rel, abs: Exactly one: the bound relative to each chunk's range of
            finite non-fill values, or absolute. rel= is per chunk; for one
            bound over the whole dataset use abs=.
        fill_value: Values equal to it come back exactly and stay out of
            rel's range. None: the dataset's fill value when it has one
            (h5py's fillvalue=, netCDF's _FillValue), else no fill value.
    """

    filter_id = FILTER_ID

    def __init__(self,
                 rel: Optional[float] = None,
                 abs: Optional[float] = None,  # pylint: disable=redefined-builtin
                 fill_value: Optional[float] = None):
        mode, bound = _local.bound_args(abs, rel)
        if fill_value is None:
            fill: Tuple[int, int, int] = (_FILL_FROM_DATASET, 0, 0)
        else:
            value = _client._check_real('fill_value', fill_value)  # pylint: disable=protected-access
            if not math.isfinite(value):
                raise ValueError(f'fill_value must be finite, got {value!r}')
            fill = (_FILL_GIVEN,) + _words(value)
        self.rel = bound if mode == 'rel' else None
        self.abs = bound if mode == 'abs' else None
        self.fill_value = None if fill_value is None else float(fill_value)
        self.filter_options = ((CD_VALUES_VERSION, 0, _MODES[mode]) + _words(bound)
                               + fill)

    if _h5py is None:  # the Mapping h5py's FilterRefBase would give
        def _kwargs(self) -> Dict[str, Any]:
            return {'compression': self.filter_id,
                    'compression_opts': self.filter_options}

        def __getitem__(self, key: str) -> Any:
            return self._kwargs()[key]

        def __iter__(self) -> Iterator[str]:
            return iter(self._kwargs())

        def __len__(self) -> int:
            return 2

    @property
    def filter_spec(self) -> str:
        """The filter in netCDF-C's syntax, "ID,cd_value,...": for
        `nccopy -F VARIABLE,SPEC` and a CDL `_Filter` attribute (ncgen)."""
        return ','.join(str(v) for v in (self.filter_id,) + self.filter_options)

    def __repr__(self) -> str:
        bound = f'rel={self.rel!r}' if self.rel is not None else f'abs={self.abs!r}'
        return f'Ebzip({bound}, fill_value={self.fill_value!r})'


def describe(dataset_or_cd_values: Any) -> Dict[str, Any]:
    """What a dataset's filter parameters say.

    Args:
        dataset_or_cd_values: An h5py Dataset written with the filter (h5py's
            compression_opts is None for filters it does not know), or the
            filter's cd_values.

    Returns:
        A dict: dtype ('float32'/'float64', or None before HDF5 completed
        them), mode ('abs'/'rel'), bound, fill_value (None: none; 'dataset'
        before HDF5 resolved it), chunks (a tuple, or None).

    Raises:
        ValueError: Not cd_values of this filter's layout.
    """
    cd_values = dataset_or_cd_values
    if hasattr(cd_values, 'id') and hasattr(cd_values.id, 'get_create_plist'):
        found = cd_values.id.get_create_plist().get_filter_by_id(FILTER_ID)
        if found is None:
            raise ValueError(f'{dataset_or_cd_values.name} does not use the ebzip filter')
        cd_values = found[1]
    cd = tuple(int(v) for v in cd_values)
    if len(cd) < 8 or cd[0] != CD_VALUES_VERSION or cd[2] not in (1, 2):
        raise ValueError(f'not ebzip filter cd_values of layout {CD_VALUES_VERSION}: {cd}')
    fill: Any = {_FILL_FROM_DATASET: 'dataset', _FILL_NONE: None}.get(cd[5])
    if cd[5] == _FILL_GIVEN:
        fill = _double(cd[6], cd[7])
    chunks = None
    if len(cd) > 8:
        if len(cd) != 9 + cd[8]:
            raise ValueError(f'cd_values {cd} do not hold a chunk shape of rank {cd[8]}')
        chunks = cd[9:]
    return {'dtype': _DTYPES.get(cd[1]), 'mode': 'rel' if cd[2] == 2 else 'abs',
            'bound': _double(cd[3], cd[4]), 'fill_value': fill, 'chunks': chunks}
