#include "server/call_state.h"

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace ebzip::server {
namespace {

// Every state of each machine, and the moves a streaming call makes, as
// streaming_call.h describes its life: written out here rather than read
// from the table under test.
const std::vector<CallState> kCallStates = {CallState::kRunning, CallState::kFailing,
                                            CallState::kFinished};
const std::vector<ReadState> kReadStates = {
    ReadState::kIdle,     ReadState::kReading, ReadState::kReceived, ReadState::kPaused,
    ReadState::kResuming, ReadState::kClosed,  ReadState::kStopped};
const std::vector<WriteState> kWriteStates = {WriteState::kIdle, WriteState::kWriting,
                                              WriteState::kWritingLast};

const std::set<std::pair<CallState, CallState>> kCallMoves = {
    {CallState::kRunning, CallState::kFailing},   // a failure
    {CallState::kRunning, CallState::kFinished},  // the reply complete
    {CallState::kFailing, CallState::kFinished},  // works and write drained
};
const std::set<std::pair<ReadState, ReadState>> kReadMoves = {
    {ReadState::kIdle, ReadState::kReading},      // Begin
    {ReadState::kIdle, ReadState::kStopped},      // refused before reading
    {ReadState::kReading, ReadState::kReceived},  // OnReadDone
    {ReadState::kReceived, ReadState::kReading},  // the next message
    {ReadState::kReceived, ReadState::kPaused},   // the window is full
    {ReadState::kReceived, ReadState::kClosed},   // the client's half-close
    {ReadState::kReceived, ReadState::kStopped},  // a bad message, a failed call
    {ReadState::kPaused, ReadState::kResuming},   // deferred bytes handed back
    {ReadState::kResuming, ReadState::kPaused},   // ...and taken or deferred again
    {ReadState::kPaused, ReadState::kReading},    // room in the window
    {ReadState::kPaused, ReadState::kStopped},    // the call failed meanwhile
};
const std::set<std::pair<WriteState, WriteState>> kWriteMoves = {
    {WriteState::kIdle, WriteState::kWriting},
    {WriteState::kWriting, WriteState::kIdle},
    {WriteState::kIdle, WriteState::kWritingLast},
};

template <typename State>
void ExpectExactlyTheseMoves(const std::vector<State>& states,
                             const std::set<std::pair<State, State>>& moves) {
  for (State from : states) {
    for (State to : states) {
      EXPECT_EQ(Allowed(from, to), moves.count({from, to}) == 1)
          << MachineName(from) << ": " << Name(from) << " -> " << Name(to);
    }
  }
}

TEST(ServerCallState, OnlyTheCallsOwnMovesAreAllowed) {
  ExpectExactlyTheseMoves(kCallStates, kCallMoves);
  ExpectExactlyTheseMoves(kReadStates, kReadMoves);
  ExpectExactlyTheseMoves(kWriteStates, kWriteMoves);
}

template <typename State>
void ExpectDistinctNames(const std::vector<State>& states) {
  std::set<std::string> names;
  for (State s : states) {
    const std::string name = Name(s);
    EXPECT_NE(name, "?");
    EXPECT_TRUE(names.insert(name).second) << "two states named " << name;
  }
}

TEST(ServerCallState, EveryStateHasItsOwnName) {
  ExpectDistinctNames(kCallStates);
  ExpectDistinctNames(kReadStates);
  ExpectDistinctNames(kWriteStates);
  EXPECT_STREQ(Name(ReadState::kPaused), "paused");
  EXPECT_STREQ(Name(WriteState::kWritingLast), "writing_last");
  EXPECT_STREQ(MachineName(CallState::kRunning), "call");
}

// A read side through a window that fills, deferred bytes, and the
// client's half-close.
TEST(ServerCallState, ALegalLifeMovesThroughEveryStep) {
  StateMachine<ReadState> read(ReadState::kIdle);
  for (ReadState next :
       {ReadState::kReading, ReadState::kReceived, ReadState::kPaused, ReadState::kResuming,
        ReadState::kPaused, ReadState::kReading, ReadState::kReceived, ReadState::kClosed}) {
    EXPECT_TRUE(read.MoveTo(next)) << Name(next);
    EXPECT_EQ(read.get(), next);
  }
  StateMachine<CallState> call(CallState::kRunning);
  EXPECT_TRUE(call.MoveTo(CallState::kFailing));
  EXPECT_TRUE(call.MoveTo(CallState::kFinished));
  EXPECT_TRUE(call == CallState::kFinished);
}

// An illegal move is reported: fatal where assertions are on, and where
// they are off the machine says so and still follows the call.
TEST(ServerCallState, AnIllegalMoveIsCaught) {
  StateMachine<WriteState> write(WriteState::kWriting);
  EXPECT_DEBUG_DEATH(
      {
        EXPECT_FALSE(write.MoveTo(WriteState::kWritingLast));  // a second write in flight
        EXPECT_EQ(write.get(), WriteState::kWritingLast);
      },
      "illegal call state move");
  StateMachine<CallState> call(CallState::kFinished);
  EXPECT_DEBUG_DEATH(EXPECT_FALSE(call.MoveTo(CallState::kFailing)), "finished");
  StateMachine<ReadState> read(ReadState::kClosed);
  EXPECT_DEBUG_DEATH(EXPECT_FALSE(read.MoveTo(ReadState::kReading)), "closed");
}

}  // namespace
}  // namespace ebzip::server
