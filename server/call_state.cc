#include "server/call_state.h"

#include <cstdlib>

#include "server/enum_names.h"
#include "server/log.h"

namespace ebzip::server {
namespace {

constexpr EnumName<CallState> kCallStateNames[] = {
    {CallState::kRunning, "running"},
    {CallState::kFailing, "failing"},
    {CallState::kFinished, "finished"},
};
constexpr EnumName<ReadState> kReadStateNames[] = {
    {ReadState::kIdle, "idle"},         {ReadState::kReading, "reading"},
    {ReadState::kReceived, "received"}, {ReadState::kPaused, "paused"},
    {ReadState::kResuming, "resuming"}, {ReadState::kClosed, "closed"},
    {ReadState::kStopped, "stopped"},
};
constexpr EnumName<WriteState> kWriteStateNames[] = {
    {WriteState::kIdle, "idle"},
    {WriteState::kWriting, "writing"},
    {WriteState::kWritingLast, "writing_last"},
};

}  // namespace

bool Allowed(CallState from, CallState to) {
  switch (from) {
    case CallState::kRunning:
      return to == CallState::kFailing || to == CallState::kFinished;
    case CallState::kFailing:
      return to == CallState::kFinished;
    case CallState::kFinished:
      return false;
  }
  return false;
}

bool Allowed(ReadState from, ReadState to) {
  switch (from) {
    case ReadState::kIdle:
      // Begin reads, or the call is refused before it does.
      return to == ReadState::kReading || to == ReadState::kStopped;
    case ReadState::kReading:
      return to == ReadState::kReceived;
    case ReadState::kReceived:
      return to == ReadState::kReading || to == ReadState::kPaused || to == ReadState::kClosed ||
             to == ReadState::kStopped;
    case ReadState::kPaused:
      return to == ReadState::kResuming || to == ReadState::kReading || to == ReadState::kStopped;
    case ReadState::kResuming:
      return to == ReadState::kPaused;
    case ReadState::kClosed:
    case ReadState::kStopped:
      return false;
  }
  return false;
}

bool Allowed(WriteState from, WriteState to) {
  switch (from) {
    case WriteState::kIdle:
      return to == WriteState::kWriting || to == WriteState::kWritingLast;
    case WriteState::kWriting:
      return to == WriteState::kIdle;
    case WriteState::kWritingLast:
      return false;
  }
  return false;
}

const char* MachineName(CallState) { return "call"; }
const char* MachineName(ReadState) { return "read"; }
const char* MachineName(WriteState) { return "write"; }
const char* Name(CallState state) { return NameOf(kCallStateNames, state); }
const char* Name(ReadState state) { return NameOf(kReadStateNames, state); }
const char* Name(WriteState state) { return NameOf(kWriteStateNames, state); }

void ReportIllegalMove(const char* machine, const char* from, const char* to) {
  LogEvent(LogLevel::kError, "illegal call state move",
           {{"machine", machine}, {"from", from}, {"to", to}});
#ifndef NDEBUG
  std::abort();
#endif
}

}  // namespace ebzip::server
