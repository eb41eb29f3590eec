// Optional per-stage timing of a GPU call, for the benchmark: the call marks
// the end of each stage with a CUDA event on its stream; after the stream
// is done, Stages() gives each stage's time. Costs nothing when not passed.
#ifndef EBZIP_GPU_STAGE_TIMER_H_
#define EBZIP_GPU_STAGE_TIMER_H_

#include <string>
#include <utility>
#include <vector>

struct CUevent_st;
struct CUstream_st;

namespace ebzip::gpu {

class StageTimer {
 public:
  StageTimer() = default;
  ~StageTimer();
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

  // Starts a new measurement on `stream` (forgets earlier marks).
  void Start(CUstream_st* stream);
  // Ends stage `name` where the stream now is.
  void Mark(const char* name, CUstream_st* stream);
  // (name, milliseconds) per stage, in order; synchronizes on the last mark.
  std::vector<std::pair<std::string, float>> Stages() const;

  // Host-side steps within a stage (a wait, the host's own work), timed on
  // the calling thread: what a stage that the host holds up is made of.
  void Note(const char* name, double ms) { notes_.emplace_back(name, ms); }
  const std::vector<std::pair<std::string, double>>& Notes() const { return notes_; }

 private:
  CUevent_st* EventAt(size_t i);
  std::vector<CUevent_st*> events_;
  std::vector<std::string> names_;
  std::vector<std::pair<std::string, double>> notes_;
  size_t used_ = 0;
};

}  // namespace ebzip::gpu

#endif  // EBZIP_GPU_STAGE_TIMER_H_
