// Command-line flags shared by the subcommands, and their translation into
// codec options. Flags are Abseil flags: `--name value` or `--name=value`.
#ifndef EBZIP_CLIENT_CLI_FLAGS_H_
#define EBZIP_CLIENT_CLI_FLAGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "codec/archive.h"
#include "codec/huffman_decoder.h"
#include "codec/types.h"

ABSL_DECLARE_FLAG(std::string, type);
ABSL_DECLARE_FLAG(std::string, shape);
ABSL_DECLARE_FLAG(std::optional<std::string>, abs);
ABSL_DECLARE_FLAG(std::optional<std::string>, rel);
ABSL_DECLARE_FLAG(std::string, fill);
ABSL_DECLARE_FLAG(std::string, o);
ABSL_DECLARE_FLAG(bool, gap_array);
ABSL_DECLARE_FLAG(uint64_t, frame_elements);
ABSL_DECLARE_FLAG(uint32_t, radius);
ABSL_DECLARE_FLAG(uint32_t, chunk_symbols);
ABSL_DECLARE_FLAG(uint32_t, subsequence_bits);
ABSL_DECLARE_FLAG(std::string, decoder);
ABSL_DECLARE_FLAG(bool, quiet);
ABSL_DECLARE_FLAG(std::string, max_output_bytes);

namespace ebzip::cli {

absl::StatusOr<DType> DTypeFromFlag();
absl::StatusOr<std::vector<uint64_t>> ShapeFromFlag();
absl::StatusOr<DecoderKind> DecoderFromFlag();

// --abs / --rel (exactly one), --fill, and the tuning flags. `file_fill` is
// the fill value a NetCDF/HDF5 variable declares; --fill auto takes it.
absl::StatusOr<CompressOptions> CompressOptionsFromFlags(std::optional<double> file_fill);

// --abs as a number, if given. Bounds are parsed here rather than by Abseil
// so a malformed one is a usage error (exit 2) with our message.
absl::StatusOr<std::optional<double>> AbsBoundFromFlag();

// --fill as a number, or nothing for "auto"/"none".
absl::StatusOr<std::optional<double>> ExplicitFillFromFlag();

// --max_output_bytes: the largest array decompress may write, a positive
// byte count; unset, the machine's physical memory (see decompress_command.cc
// for why).
absl::StatusOr<uint64_t> MaxOutputBytesFromFlag();

// RESOURCE_EXHAUSTED naming --max_output_bytes when `spec` is larger than
// `limit`; `source` says whose array it is (the archive's file name).
absl::Status CheckOutputSize(const std::string& source, const ArraySpec& spec, uint64_t limit);

std::string HumanBytes(uint64_t bytes);

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_FLAGS_H_
