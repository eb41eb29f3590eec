// From the API's messages to the codec's types, with every check a client
// deserves a clear INVALID_ARGUMENT for (docs/design.md §4): unknown dtype, empty
// shape, zero dimension, bound <= 0 or NaN, unknown mode, bad options.
#ifndef EBZIP_SERVER_REQUEST_PARSING_H_
#define EBZIP_SERVER_REQUEST_PARSING_H_

#include "absl/status/statusor.h"
#include "codec/archive.h"
#include "codec/types.h"
#include "ebzip/v1/ebzip.pb.h"

namespace ebzip::server {

struct CompressRequestSpec {
  ArraySpec spec;
  CompressOptions options;
};

absl::StatusOr<CompressRequestSpec> ParseCompressHeader(const v1::CompressHeader& header);

// INVALID_ARGUMENT for options the codec takes but the service does not,
// because they multiply a request's work or archive (limits.h): frames,
// chunks or subsequences smaller than their minimum, too many frames.
absl::Status CheckOptionLimits(const CompressRequestSpec& request, const ArchivePlan& plan,
                               uint64_t min_frame_elements);

v1::ArraySpec ToProto(const ArraySpec& spec);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_REQUEST_PARSING_H_
