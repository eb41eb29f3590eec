#include "gpu/runtime/staged_copy.h"

#include <cstring>

#include "gpu/runtime/pool_slice.h"

namespace ebzip::gpu::runtime {

RunResult StagedUpload(CudaStream& stream, absl::Span<const UploadPiece> all,
                       absl::Span<uint8_t> staging) {
  std::vector<UploadPiece> pieces;
  for (const UploadPiece& p : all) {
    if (!p.pinned) {
      pieces.push_back(p);
      continue;
    }
    EBZIP_RETURN_UNLESS_RAN(stream.CopyToDevice(p.device, p.host, p.bytes));
  }
  if (pieces.empty()) return RunResult::Ran();
  uint8_t* base = pieces.front().device;
  uint64_t span = 0;
  bool ascending = true;
  for (const UploadPiece& p : pieces) {
    ascending = ascending && p.device >= base + span;
    span = static_cast<uint64_t>(p.device - base) + p.bytes;
  }
  for (const UploadPiece& p : all) {
    if (p.pinned && p.device < base + span && p.device + p.bytes > base) ascending = false;
  }
  if (ascending && span <= staging.size()) {
    for (const UploadPiece& p : pieces) {
      std::memcpy(staging.data() + (p.device - base), p.host, p.bytes);
    }
    return stream.CopyToDevice(base, staging.data(), span);
  }
  for (const UploadPiece& p : pieces) {
    EBZIP_RETURN_UNLESS_RAN(stream.CopyToDevice(p.device, p.host, p.bytes));
  }
  return RunResult::Ran();
}

RunResult StagedDownload::Start(CudaStream& stream, std::vector<Source> sources,
                                absl::Span<uint8_t> staging, Destination destination) {
  stream_ = &stream;
  sources_ = std::move(sources);
  results_.resize(sources_.size());
  in_destination_.assign(sources_.size(), false);
  std::vector<uint8_t*> to(sources_.size(), nullptr);
  uint64_t total = 0;
  for (size_t i = 0; i < sources_.size(); ++i) {
    to[i] = destination(i, sources_[i].bytes);
    in_destination_[i] = to[i] != nullptr;
    if (!in_destination_[i]) total += AlignUp(sources_[i].bytes);
  }
  staging_ = total <= staging.size() ? staging.data() : nullptr;
  uint64_t at = 0;
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (in_destination_[i]) {
      // where the caller said
    } else if (staging_ != nullptr) {
      to[i] = staging_ + at;
      at += AlignUp(sources_[i].bytes);
    } else {
      results_[i].resize(sources_[i].bytes);
      to[i] = results_[i].data();
    }
    EBZIP_RETURN_UNLESS_RAN(stream.CopyToHost(to[i], sources_[i].device, sources_[i].bytes));
  }
  return RunResult::Ran();
}

std::vector<std::vector<uint8_t>> StagedDownload::Finish() {
  stream_ = nullptr;
  if (staging_ != nullptr) {
    uint64_t at = 0;
    for (size_t i = 0; i < sources_.size(); ++i) {
      if (in_destination_[i]) continue;
      results_[i].assign(staging_ + at, staging_ + at + sources_[i].bytes);
      at += AlignUp(sources_[i].bytes);
    }
  }
  return std::move(results_);
}

bool StagedDownload::Abort() {
  if (stream_ == nullptr) return true;
  const bool done = stream_->Synchronize().ran();
  stream_ = nullptr;
  return done;
}

}  // namespace ebzip::gpu::runtime
