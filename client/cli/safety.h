// Warnings for compressions that succeed but are probably not what was
// meant: the rule of the Python package's ebzip/safety.py, which documents
// it, here for `ebzip compress`, so that both interfaces warn about the same
// arrays. The sample is the same too (SampleIndices), so they agree on every
// array, not only on clear cases.
//
// Here rather than in codec/: only the command line warns this way (ebzipd
// answers with the archive's numbers, the Python package has its NumPy
// version, which also serves its remote-only use without the codec), and
// the codec's job is the archive, not advice about its input.
#ifndef EBZIP_CLIENT_CLI_SAFETY_H_
#define EBZIP_CLIENT_CLI_SAFETY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "codec/types.h"

namespace ebzip::cli {

inline constexpr uint64_t kSafetySampleSize = uint64_t{1} << 16;
inline constexpr double kRepeatedRatio = 10.0;
inline constexpr double kTailRatio = 1000.0;
inline constexpr double kTailFraction = 0.001;
inline constexpr uint64_t kSmallInputBytes = 4096;  // below: headers make the archive larger

// The elements looked at: all of them up to kSafetySampleSize, else
// kSafetySampleSize indices (with repeats) from SplitMix64 seeded with 0,
// each output modulo n. ebzip/safety.py draws the same ones.
std::vector<uint64_t> SampleIndices(uint64_t n);

// Why a relative bound over `full_range` (the archive's absolute bound
// divided by --rel) is dominated by a few values, or nothing: a sampled
// extreme that occurs at least twice while the range is more than
// kRepeatedRatio times the spread of the other sampled values (an
// undeclared fill), or a range more than kTailRatio times the spread of the
// sample's middle 99.8 %. Non-finite and fill elements are not sampled.
std::optional<std::string> DominatedRange(const ArraySpec& spec, absl::Span<const uint8_t> data,
                                          std::optional<double> fill_value, double full_range);

// Why an archive of `archive_bytes` for `data` is larger than the input, or
// nothing when it is not.
std::optional<std::string> LargerArchive(uint64_t archive_bytes, const ArraySpec& spec,
                                         absl::Span<const uint8_t> data);

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_SAFETY_H_
