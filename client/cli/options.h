// What the flags mean: the codec's types and options, and the limits, from
// a command's parsed flags (flags.h). Every malformed value is
// INVALID_ARGUMENT naming the flag, so that it exits as a usage error (2).
#ifndef EBZIP_CLIENT_CLI_OPTIONS_H_
#define EBZIP_CLIENT_CLI_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/cli/flags.h"
#include "codec/archive.h"
#include "codec/huffman_decoder.h"
#include "codec/types.h"

namespace ebzip::cli {

absl::StatusOr<DType> DTypeFromFlags(const ParsedArgs& args);
absl::StatusOr<std::vector<uint64_t>> ShapeFromFlags(const ParsedArgs& args);
absl::StatusOr<DecoderKind> DecoderFromFlags(const ParsedArgs& args);

// --abs / --rel (exactly one), --fill, and the tuning flags. `file_fill` is
// the fill value a NetCDF/HDF5 variable declares; --fill auto takes it.
absl::StatusOr<CompressOptions> CompressOptionsFromFlags(const ParsedArgs& args,
                                                         std::optional<double> file_fill);

// --abs as a number, if given. Bounds are parsed here rather than by the
// codec so that a malformed one is a usage error with our message.
absl::StatusOr<std::optional<double>> AbsBoundFromFlags(const ParsedArgs& args);

// --fill as a number, or nothing for "auto"/"none".
absl::StatusOr<std::optional<double>> ExplicitFillFromFlags(const ParsedArgs& args);

// --max_output_bytes: the largest array decompress may write, a positive
// size (flags.h's ParseSize: 4G); unset, the machine's physical memory (see
// decompress_command.cc for why).
absl::StatusOr<uint64_t> MaxOutputBytesFromFlags(const ParsedArgs& args);

// RESOURCE_EXHAUSTED naming --max_output_bytes when `spec` is larger than
// `limit`; `source` says whose array it is (the archive's file name).
absl::Status CheckOutputSize(const std::string& source, const ArraySpec& spec, uint64_t limit);

std::string HumanBytes(uint64_t bytes);

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_OPTIONS_H_
