"""What the fill mask costs, coded in different ways (bytes). Fill values are restored bit for
bit, so an archive must say where they are; v1 lists fill runs at 8 bytes each."""
import lzma

import numpy as np

from lossless import huff_size, zstd

IN_TOTALS = 'bitmap+zstd3'  # the coding added to every v2 candidate's whole-archive size


def _run_classes(flat):
    """Alternating run lengths (non-fill, fill, ...) as log2-class tokens + extra bits,
    Huffman-coded: the rle0 machinery reused, GPU-friendly."""
    f = flat.astype(np.int8)
    change = np.nonzero(np.diff(np.concatenate([[0], f, [1 - f[-1]]])))[0]
    ln = np.diff(np.concatenate([[0], change]))
    c = np.floor(np.log2(ln[ln > 0])).astype(int)
    bits, tb = huff_size(c)[:2]
    return int((bits + c.sum()) / 8 + tb)


def costs(fill):
    if not fill.any():
        return {}
    bitmap = np.packbits(fill).tobytes()
    # the mask often repeats along dim 0 (ocean_atlas: every month): XOR with the previous slab
    xor = np.diff(fill.astype(np.int8), axis=0, prepend=0) != 0
    runs = int(np.count_nonzero(np.diff(fill.ravel().astype(np.int8), prepend=0) == 1))
    return {'v1 runs (8 B/run)': 8 * runs,
            'bitmap+zstd3': zstd(bitmap, 3),
            'bitmap+zstd19': zstd(bitmap, 19),
            'bitmap+lzma': len(lzma.compress(bitmap)),
            'xor-slab bitmap+zstd3': zstd(np.packbits(xor).tobytes(), 3),
            'run classes+huff': _run_classes(fill.ravel()),
            'xor-slab run classes+huff': _run_classes(xor.ravel())}
