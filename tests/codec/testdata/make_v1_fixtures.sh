#!/usr/bin/env bash
# How the version-1 fixtures here were made (v1_fixtures_test.cc reads them):
# with the CLI of commit 4c482bf, the last ebzip that wrote and read format
# version 1 only, from inputs this script generates (deterministic: Python's
# math and struct, no randomness), decompressed by that same ebzip to give
# the expected bytes. Kept for the record; rerunning it with an old ebzip
# must reproduce the committed files exactly.
#
#   git worktree add /tmp/v1old 4c482bf
#   cmake -S /tmp/v1old -B /tmp/v1old-build -G Ninja -DEBZIP_CUDA=OFF
#   ninja -C /tmp/v1old-build ebzip
#   tests/codec/testdata/make_v1_fixtures.sh /tmp/v1old-build/client/cli/ebzip
set -euo pipefail
old_ebzip=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 - "$work" <<'PY'
import math, struct, sys
work = sys.argv[1]

def field(n, a=0.05, b=0.11):
    return [10 * math.sin(a * i) + 3 * math.cos(b * i) for i in range(n)]

# f32 40x24: spikes (outliers), NaN, +-Inf, -0.0, a subnormal (verbatim),
# and runs of the fill value -9999 in every frame of 16 rows.
v = field(40 * 24)
for base in (0, 384, 768):
    v[base + 50] = 500.0
    v[base + 140] = -700.0
    v[base + 3] = float("nan")
    v[base + 77] = float("inf")
    v[base + 78] = float("-inf")
    v[base + 9] = -0.0
    v[base + 11] = 1e-40
    for k in range(6):
        v[base + 150 + k] = -9999.0
    v[base + 100] = -9999.0
open(f"{work}/a.raw", "wb").write(struct.pack("<960f", *v))

# f64 500, 1-D: a REL bound over a wide range, a NaN and an outlier.
w = [1e3 * math.sin(0.02 * i) + 0.5 * i for i in range(500)]
w[123] = float("nan")
w[321] = -1500.0
open(f"{work}/b.raw", "wb").write(struct.pack("<500d", *w))

# f32 4x8x8 with the CLI's defaults (radius 32768, chunks of 16384).
c = [math.sin(0.3 * i) * math.cos(0.07 * i) for i in range(256)]
open(f"{work}/c.raw", "wb").write(struct.pack("<256f", *c))
PY

"$old_ebzip" compress --quiet --type f32 --shape 40,24 --abs 0.01 --fill -9999 --radius 64 \
  --chunk_symbols 128 --subsequence_bits 64 --frame_elements 384 "$work/a.raw" \
  -o "$here/v1_f32_2d_fill.ebz"
"$old_ebzip" compress --quiet --type f64 --shape 500 --rel 1e-3 --fill none --gap_array=false \
  --radius 256 --chunk_symbols 64 --frame_elements 200 "$work/b.raw" \
  -o "$here/v1_f64_1d_rel_nogap.ebz"
"$old_ebzip" compress --quiet --type f32 --shape 4,8,8 --abs 0.01 --fill none "$work/c.raw" \
  -o "$here/v1_f32_3d_defaults.ebz"
for name in v1_f32_2d_fill v1_f64_1d_rel_nogap v1_f32_3d_defaults; do
  "$old_ebzip" decompress --quiet "$here/$name.ebz" -o "$here/$name.expected"
done
