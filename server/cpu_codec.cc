#include "server/cpu_codec.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codec/archive.h"
#include "codec/frame_codec.h"
#include "codec/frame_task.h"
#include "codec/memory_bounds.h"
#include "codec/parallel.h"
#include "server/region_call.h"

namespace ebzip::server {
namespace {

absl::StatusOr<ArchivePlan> PlanFor(const Work& work, const ValueRange& range) {
  return PlanArchive(work.spec, work.options, ResolveBound(work.options, work.spec.dtype, range));
}

// The first error of the frames running at once; later ones are dropped.
class FirstError {
 public:
  void Set(absl::Status s) {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.ok()) status_ = std::move(s);
  }
  bool ok() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_.ok();
  }
  absl::Status Take() {
    std::lock_guard<std::mutex> lock(mu_);
    return std::move(status_);
  }

 private:
  std::mutex mu_;
  absl::Status status_;
};

absl::Status Cancelled() { return absl::CancelledError("the call was cancelled"); }

void CompressOnCpu(Work& w) {
  const absl::Span<const uint8_t> data = w.input_bytes();
  const ValueRange range = RangeFor(w.spec, data, w.options);
  auto plan = PlanFor(w, range);
  if (!plan.ok()) {
    w.status = plan.status();
    return;
  }
  const uint64_t count = plan->frame_count();
  std::vector<std::vector<uint8_t>> frames(count);
  FirstError error;
  std::mutex grow_mu;
  ParallelFor(
      count,
      [&](uint64_t i) {
        if (!error.ok()) return;
        std::vector<uint8_t> frame;
        absl::Status s = EncodeFrame(plan->ParamsForFrame(i),
                                     data.data() + plan->FrameDataOffset(i), &frame, &w.cancelled);
        if (!s.ok()) return error.Set(std::move(s));
        // The frame's bytes outlive its working set: they join the budget.
        absl::Status grown;
        {
          std::lock_guard<std::mutex> lock(grow_mu);
          grown = w.reservation.Grow(frame.size());
          if (grown.ok()) frames[i] = std::move(frame);
        }
        if (!grown.ok()) error.Set(std::move(grown));
      },
      kFramesAtOnce);
  if (absl::Status s = error.Take(); !s.ok()) {
    w.status = std::move(s);
    return;
  }

  // The input and working memory are done with; the archive is assembled
  // in one buffer for the reply, beside the frames until each is copied in.
  uint64_t frame_bytes = 0;
  for (const auto& f : frames) frame_bytes += f.size();
  std::vector<uint8_t>().swap(w.input);
  w.input_block.Release();
  w.reservation.Resize(frame_bytes);
  ArchiveWriter writer(*plan);
  std::vector<uint8_t> out = writer.Begin();
  const uint64_t total =
      out.size() + frame_bytes + format::FrameIndexSize(count) + format::kTrailerSize;
  if (absl::Status s = w.reservation.Grow(total); !s.ok()) {
    w.status = std::move(s);
    return;
  }
  out.reserve(total);
  for (auto& f : frames) {
    writer.AddFrame(f.size());
    out.insert(out.end(), f.begin(), f.end());
    std::vector<uint8_t>().swap(f);
  }
  std::vector<uint8_t> tail = writer.Finish();
  out.insert(out.end(), tail.begin(), tail.end());
  w.SetArchive(std::move(out));
}

// One frame of a streamed array: its working memory was taken with the work.
void CompressFrameOnCpu(Work& w) {
  auto frame = CompressFrame(w.frame_task(), w.input_bytes(), &w.cancelled);
  if (!frame.ok()) {
    w.status = frame.status();
    return;
  }
  w.SetFrame(*std::move(frame));
}

void DecompressOnCpu(Work& w) {
  const ArchiveInfo& info = *w.info;
  const ArraySpec spec = info.spec();
  std::vector<uint8_t> out(spec.num_bytes());  // reserved with the work
  const uint64_t row_bytes = spec.num_bytes() / info.header.shape[0];
  FirstError error;
  ParallelFor(
      info.frames.size(),
      [&](uint64_t i) {
        if (!error.ok()) return;
        uint8_t* rows = out.data() + i * info.header.frame_rows * row_bytes;
        absl::Status s = DecompressFrame(info, w.input, i, DecoderKind::kAuto, rows, &w.cancelled);
        if (!s.ok()) error.Set(std::move(s));
      },
      kFramesAtOnce);
  if (absl::Status s = error.Take(); !s.ok()) {
    w.status = std::move(s);
    return;
  }
  w.SetArray(std::move(out));
}

}  // namespace

uint64_t CompressWorkingBytes(const ArchivePlan& plan) {
  // Frame 0 is the largest (only the last one may be shorter).
  const FrameParams p = plan.ParamsForFrame(0);
  const uint64_t at_once = std::min(kFramesAtOnce, plan.frame_count());
  return SaturatingMul(at_once, SaturatingAdd(EncodeFrameWorkingBytes(p), MaxFrameBytes(p)));
}

uint64_t CpuWorkingBytes(const Work& work) {
  if (work.method == Method::kCompress) {
    auto plan = PlanFor(work, ValueRange{});
    if (!plan.ok()) return 0;  // refused before it could be queued
    return CompressWorkingBytes(*plan);
  }
  if (work.region) return RegionWorkingBytes(work);
  uint64_t frame = 0;
  for (const format::FrameHeader& h : work.info->frame_headers) {
    frame = std::max(frame, DecodeFrameWorkingBytes(h));
  }
  const uint64_t at_once = std::min<uint64_t>(kFramesAtOnce, work.info->frames.size());
  return SaturatingAdd(work.info->spec().num_bytes(), SaturatingMul(at_once, frame));
}

void RunOnCpu(Work& work) {
  if (work.cancelled.load(std::memory_order_relaxed)) {
    work.status = Cancelled();
    return;
  }
  if (work.method == Method::kCompress) {
    if (work.frame_first_row) {
      CompressFrameOnCpu(work);
    } else {
      CompressOnCpu(work);
    }
  } else if (work.region) {
    DecompressRegionOnCpu(work);
  } else {
    DecompressOnCpu(work);
  }
}

}  // namespace ebzip::server
