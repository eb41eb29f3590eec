// What became of work given to a device, as a value rather than a status
// code to interpret: it ran; the GPU codec does not take it (the CPU codec,
// which writes the same bytes, runs it instead); or the device was lost (a
// CUDA error leaves its context unusable until the process restarts). The
// caller decides what each means for its work (server/gpu_backend.cc).
#ifndef EBZIP_GPU_RUNTIME_RUN_RESULT_H_
#define EBZIP_GPU_RUNTIME_RUN_RESULT_H_

#include <utility>

#include "absl/status/status.h"

namespace ebzip::gpu::runtime {

enum class Outcome {
  kRan,
  // The kernels refused the work (parameters they do not take), or a batch
  // of archives holds a corrupt one and the device cannot say whose: the CPU
  // codec runs it, and sorts out which archive is corrupt.
  kUnsupported,
  kDeviceLost,
};

class [[nodiscard]] RunResult {
 public:
  static RunResult Ran() { return RunResult(Outcome::kRan, absl::OkStatus()); }
  static RunResult Unsupported(absl::Status why) {
    return RunResult(Outcome::kUnsupported, std::move(why));
  }
  static RunResult DeviceLost(absl::Status why) {
    return RunResult(Outcome::kDeviceLost, std::move(why));
  }

  Outcome outcome() const { return outcome_; }
  bool ran() const { return outcome_ == Outcome::kRan; }
  bool device_lost() const { return outcome_ == Outcome::kDeviceLost; }
  // Why it did not run (OK when it ran): the codec's refusal, the corruption
  // found, or the CUDA error that lost the device.
  const absl::Status& why() const { return why_; }

 private:
  RunResult(Outcome outcome, absl::Status why) : outcome_(outcome), why_(std::move(why)) {}
  Outcome outcome_;
  absl::Status why_;
};

// Returns from the enclosing function (which returns RunResult) unless `expr`
// ran.
#define EBZIP_RETURN_UNLESS_RAN(expr)                            \
  do {                                                           \
    if (::ebzip::gpu::runtime::RunResult run_result_ = (expr);   \
        !run_result_.ran()) {                                    \
      return run_result_;                                        \
    }                                                            \
  } while (0)

}  // namespace ebzip::gpu::runtime

#endif  // EBZIP_GPU_RUNTIME_RUN_RESULT_H_
