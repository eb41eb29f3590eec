// CallWithRetries: which failures run again, how often, and until when.
#include "client/remote/retry.h"

#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace ebzip::client {
namespace {

// Fast backoff: the tests check decisions, not waiting.
RetryPolicy Quick() {
  RetryPolicy p;
  p.initial_backoff = absl::Milliseconds(1);
  p.max_backoff = absl::Milliseconds(4);
  return p;
}

// An attempt that fails with the given statuses in turn, then succeeds.
struct Script {
  std::vector<absl::Status> failures;
  bool deliver = false;  // the failing attempts hand part of a reply over
  int attempts = 0;
  absl::Status operator()(bool* delivered) {
    const int n = attempts++;
    if (n >= static_cast<int>(failures.size())) return absl::OkStatus();
    *delivered = deliver;
    return failures[n];
  }
};

absl::Status RunScript(const RetryPolicy& policy, absl::Time deadline, Script& script) {
  return CallWithRetries(policy, deadline, [&](bool* delivered) { return script(delivered); });
}

TEST(CallWithRetries, RefusedAttemptsRunAgainUntilOneSucceeds) {
  Script s{{absl::UnavailableError("draining"), absl::UnavailableError("draining")}};
  EXPECT_TRUE(RunScript(Quick(), absl::InfiniteFuture(), s).ok());
  EXPECT_EQ(s.attempts, 3);
}

TEST(CallWithRetries, GivesUpAfterMaxAttemptsWithTheLastStatus) {
  Script s{{absl::UnavailableError("1"), absl::UnavailableError("2"), absl::UnavailableError("3"),
            absl::UnavailableError("4")}};
  const absl::Status status = RunScript(Quick(), absl::InfiniteFuture(), s);
  EXPECT_EQ(status, absl::UnavailableError("3"));
  EXPECT_EQ(s.attempts, 3);
}

TEST(CallWithRetries, OtherFailuresAreFinal) {
  for (const absl::Status& failure :
       {absl::InvalidArgumentError("bad"), absl::ResourceExhaustedError("full"),
        absl::DeadlineExceededError("late"), absl::DataLossError("corrupt"),
        absl::CancelledError("gone")}) {
    Script s{{failure}};
    EXPECT_EQ(RunScript(Quick(), absl::InfiniteFuture(), s), failure);
    EXPECT_EQ(s.attempts, 1) << failure;
  }
}

TEST(CallWithRetries, AnAttemptThatDeliveredPartOfItsReplyIsFinal) {
  Script s{{absl::UnavailableError("connection lost")}, /*deliver=*/true};
  EXPECT_EQ(RunScript(Quick(), absl::InfiniteFuture(), s).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.attempts, 1);
}

TEST(CallWithRetries, NoAttemptStartsPastTheDeadline) {
  RetryPolicy slow;
  slow.initial_backoff = absl::Seconds(10);
  Script s{{absl::UnavailableError("draining")}};
  const absl::Time start = absl::Now();
  EXPECT_EQ(RunScript(slow, start + absl::Seconds(1), s).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(s.attempts, 1);
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
}

TEST(CallWithRetries, BackoffGrowsAndStaysUnderItsCap) {
  RetryPolicy p;
  p.max_attempts = 4;
  p.initial_backoff = absl::Milliseconds(20);
  p.max_backoff = absl::Milliseconds(30);
  Script s{{absl::UnavailableError("1"), absl::UnavailableError("2"), absl::UnavailableError("3")}};
  const absl::Time start = absl::Now();
  EXPECT_TRUE(RunScript(p, absl::InfiniteFuture(), s).ok());
  // Waits of 20, 30 (40 capped), 30 ms, each within ±20 %.
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(took, absl::Milliseconds(0.8 * 80));
  EXPECT_LT(took, absl::Milliseconds(1.2 * 80 + 500));  // + scheduling slack
}

}  // namespace
}  // namespace ebzip::client
