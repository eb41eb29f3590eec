// Decompress's options (ebzip.proto's DecompressOptions): a region of the
// array instead of all of it, an archive named by a path under
// --archive_root instead of uploaded, or the header alone. DecompressCall
// (decompress_call.cc) holds one DecompressChoice when the first message
// carries options and asks it at each step; the works it makes are decoded
// here, on the CPU codec (cpu_codec.cc hands them over), or by the GPU
// backend (whole frames, codec/region_plan.h).
//
// A request with options is always buffered: the archive (uploaded, or read
// from its file: for a region only the frames it meets) is held whole within
// --max_request_bytes and the budget, priced at its file header as
// decompress_call.cc prices an upload, and validated (ReadArchiveInfo:
// DATA_LOSS) before anything is queued. A region is decoded frame by frame
// (codec/region.h): only the frames it meets.
#ifndef EBZIP_SERVER_REGION_CALL_H_
#define EBZIP_SERVER_REGION_CALL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "codec/format.h"
#include "codec/region.h"
#include "ebzip/v1/ebzip.pb.h"
#include "server/call_env.h"
#include "server/work.h"

namespace ebzip::server {

class DecompressChoice {
 public:
  // INVALID_ARGUMENT for options that are malformed whatever the archive (a
  // region with ragged or zero steps, a region with header_only);
  // FAILED_PRECONDITION for an archive_path on a server without
  // --archive_root.
  static absl::StatusOr<DecompressChoice> Parse(const v1::DecompressOptions& options,
                                                const CallLimits& limits);

  bool by_path() const { return !path_.empty(); }
  // Whether the reply is something other than the whole array (a region or
  // the header alone).
  bool partial() const { return region_.has_value() || header_only_; }

  // By path: opens the file under the root (ArchiveRoot::OpenFile's
  // statuses), checks its file header as an upload's (CheckFileHeader), and
  // reads into `work`'s input, held in the budget and within
  // --max_request_bytes: the whole file, or for a region or the header
  // alone only its index, frame headers and the frames needed (the first
  // for the header alone), as an archive of their own; Apply and Describe
  // then speak of the whole array.
  absl::Status ReadArchive(CallEnv& env, Work& work);

  // What the file header says the reply will cost, against the limits:
  // frames, --max_output_bytes for what is sent (the region's bytes, none
  // for the header alone, else the array), and the budget for the archive
  // (`archive_bytes`, 0 while unknown) and the decoding. INVALID_ARGUMENT
  // for a region that does not fit the array.
  absl::Status CheckFileHeader(CallEnv& env, const format::FileHeader& h,
                               uint64_t archive_bytes) const;

  // Once `work` holds the archive (or the part ReadArchive read) and its
  // info: sets its region, in the rows of what was read.
  absl::Status Apply(Work& work) const;

  // The reply header of a finished work: the array sent (the region's
  // shape, or the whole array) and the archive's whole array; counts the
  // region in the metrics.
  void Describe(const Work& work, Metrics& metrics, v1::DecompressHeader* header) const;

 private:
  std::optional<Hyperslab> region_;
  // Set by ReadArchive when it read a part: the whole array, and the row of
  // it the part begins at.
  std::optional<ArraySpec> whole_;
  uint64_t first_row_ = 0;
  std::string path_;
  bool header_only_ = false;
  const ArchiveRoot* root_ = nullptr;
};

// The host bytes a region work needs beyond its archive: the region, one
// frame's rows and the largest working set of the frames it meets.
uint64_t RegionWorkingBytes(const Work& work);

// Decodes a region work's region (or nothing, for header_only) into its
// output; stops between frames once the work is cancelled.
void DecompressRegionOnCpu(Work& work);

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_REGION_CALL_H_
