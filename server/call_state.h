// The phases of a streaming call (streaming_call.h), as three small state
// machines that move independently: the call as a whole, the read side of
// its request stream and the write side of its reply. Each moves only along
// the edges Allowed lists, so that a call which reaches a phase its code
// did not plan for is caught where it happens, and the phases have names
// for logs.
//
//   call:  running -> failing -> finished, or running -> finished (success)
//   read:  idle -> reading -> received -> reading | paused | closed | stopped
//          paused -> resuming -> paused, paused -> reading | stopped
//          idle -> stopped
//   write: idle -> writing -> idle, idle -> writing_last
#ifndef EBZIP_SERVER_CALL_STATE_H_
#define EBZIP_SERVER_CALL_STATE_H_

namespace ebzip::server {

// The call as a whole.
enum class CallState {
  kRunning,   // reading, computing and sending
  kFailing,   // failed: waits for its works, its write and a read being
              // started to end, then finishes with its status
  kFinished,  // Finish (or the last write, which carries the status) has
              // started: only OnDone follows
};

// The request stream.
enum class ReadState {
  kIdle,      // no read yet (before Begin)
  kReading,   // a read started and not completed: the call waits on its client
  kReceived,  // a read completed: its message (or the end) is being handled
  kPaused,    // the window is full or a payload was deferred: no read until a
              // work leaves the window
  kResuming,  // the deferred bytes are handed back to OnPayload
  kClosed,    // the client closed its side: the input is complete
  kStopped,   // no more reads: the call failed
};

// The reply stream: one write in flight at a time.
enum class WriteState {
  kIdle,         // nothing to send yet, or the last message has been taken
  kWriting,      // a write started and not completed: the call waits on its client
  kWritingLast,  // the reply's last message, with the call's status
};

// Whether a machine in `from` may move to `to`.
bool Allowed(CallState from, CallState to);
bool Allowed(ReadState from, ReadState to);
bool Allowed(WriteState from, WriteState to);

// Names for logs: the machine's ("call", "read", "write") and the state's
// ("running", "paused", "writing_last").
const char* MachineName(CallState);
const char* MachineName(ReadState);
const char* MachineName(WriteState);
const char* Name(CallState state);
const char* Name(ReadState state);
const char* Name(WriteState state);

// An illegal move is a bug in the call: logged as an error, and fatal in a
// build with assertions (NDEBUG unset), so that tests there stop at it.
void ReportIllegalMove(const char* machine, const char* from, const char* to);

// One of the machines: its state, changed only through MoveTo.
template <typename State>
class StateMachine {
 public:
  explicit StateMachine(State initial) : state_(initial) {}

  State get() const { return state_; }
  bool operator==(State s) const { return state_ == s; }

  // Moves to `next`; false (and reported) when Allowed forbids it. The
  // state moves all the same: the caller goes on to do what `next` stands
  // for, and the state has to say so (a write in flight, say).
  bool MoveTo(State next) {
    const bool legal = Allowed(state_, next);
    if (!legal) ReportIllegalMove(MachineName(state_), Name(state_), Name(next));
    state_ = next;
    return legal;
  }

 private:
  State state_;
};

}  // namespace ebzip::server

#endif  // EBZIP_SERVER_CALL_STATE_H_
