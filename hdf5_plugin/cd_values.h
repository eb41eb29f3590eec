// The filter's client data (cd_values): what an ebzip-filtered dataset
// stores in its HDF5 filter pipeline message, and so what every chunk is
// compressed and checked with. No HDF5 here: the layout alone, so that the
// Python side (client/python/ebzip/hdf5.py) and tests can agree with it.
//
// Layout, version 1 (unsigned 32-bit words; a double is its IEEE-754 bits,
// low word first):
//
//   [0]     layout version: 1
//   [1]     dtype: 1 float32, 2 float64 (codec/types.h); 0 from the user,
//           set from the dataset's datatype by set_local
//   [2]     bound mode: 1 ABS, 2 REL (codec/types.h)
//   [3..4]  bound value (double)
//   [5]     fill: 0 the dataset's fill value if one is set (resolved by
//           set_local to 1 or 2), 1 the value in [6..7], 2 none
//   [6..7]  fill value (double); 0 unless [5] is 1
//   [8]     chunk rank (set_local)
//   [9..]   chunk dimensions, slowest first (set_local)
//
// A user gives words [0..7] (kUserWords); set_local replaces [1], resolves
// [5] and appends the chunk shape, ignoring any words beyond [7] that a
// dataset's copy carried (h5repack, nccopy), since the new dataset's type
// and chunks decide them.
#ifndef EBZIP_HDF5_PLUGIN_CD_VALUES_H_
#define EBZIP_HDF5_PLUGIN_CD_VALUES_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "codec/types.h"

namespace ebzip::hdf5 {

// Not registered with The HDF Group: from the range HDF5 sets aside for
// testing (256-511). Must change once an id is registered (docs/python.md).
inline constexpr int kFilterId = 491;

inline constexpr uint32_t kLayoutVersion = 1;
inline constexpr size_t kUserWords = 8;
inline constexpr uint32_t kFillFromDataset = 0;
inline constexpr uint32_t kFillGiven = 1;
inline constexpr uint32_t kFillNone = 2;

// What a chunk is compressed with: the parsed, complete cd_values.
struct FilterParams {
  DType dtype = DType::kFloat32;
  BoundMode mode = BoundMode::kAbs;
  double bound = 0;
  std::optional<double> fill_value;
  std::vector<uint64_t> chunk;  // HDF5's chunk dimensions

  uint64_t chunk_elements() const;
  // The array each chunk is compressed as: the chunk's shape, leading
  // dimensions merged down to the codec's four (as ebzip.numcodecs does).
  ArraySpec ChunkSpec() const;
};

// The user's words [0..7], checked (version, bound mode, a positive finite
// bound, the fill flag and a finite fill value); the dtype and chunk are
// left for set_local.
struct UserParams {
  BoundMode mode = BoundMode::kAbs;
  double bound = 0;
  uint32_t fill_flag = kFillFromDataset;
  double fill_value = 0;
};
absl::StatusOr<UserParams> ParseUserWords(absl::Span<const unsigned int> cd);

// set_local's result: the complete cd_values for a dataset of `dtype`
// chunked as `chunk`, whose own fill value (an HDF5 user-defined one, which
// is netCDF's _FillValue) is `dataset_fill` when set. A non-finite dataset
// fill is no fill: NaN and infinities come back bit for bit anyway.
absl::StatusOr<std::vector<unsigned int>> CompleteWords(const UserParams& user, DType dtype,
                                                        absl::Span<const uint64_t> chunk,
                                                        std::optional<double> dataset_fill);

// The filter's reading of complete cd_values; INVALID_ARGUMENT for any
// word that is not what CompleteWords writes.
absl::StatusOr<FilterParams> ParseWords(absl::Span<const unsigned int> cd);

}  // namespace ebzip::hdf5

#endif  // EBZIP_HDF5_PLUGIN_CD_VALUES_H_
