// gpu/host_code.h on the host alone: the stage a frame codes with, picked
// from its three used-symbol lists while skipping the codes whose entropy
// floor cannot win, is the one building every allowed stage's code picks
// (the smallest, the lower stage of equal ones: FORMAT.md §15.9), with the
// same code; and every floor lies at or below its code's bits.
#include "gpu/host_code.h"

#include <cstdint>
#include <random>
#include <vector>

#include "codec/run_tokens.h"
#include "gtest/gtest.h"

namespace ebzip::gpu {
namespace {

constexpr uint32_t kRadius = 512;
constexpr int kMaxLength = 16;

// A used-symbol list (ascending symbols below 2 * kRadius) of `used`
// symbols with counts falling off at `skew` (0: flat).
std::vector<SymbolCount> RandomList(std::mt19937_64& rng, uint32_t used, double skew) {
  std::vector<SymbolCount> list;
  std::uniform_int_distribution<uint32_t> noise(1, 40);
  const uint32_t step = std::max<uint32_t>(1, 2 * kRadius / (used + 1));
  for (uint32_t i = 0; i < used && (i + 1) * step < 2 * kRadius; ++i) {
    const double weight = 100000.0 / (1.0 + skew * i * i);
    list.push_back({(i + 1) * step, static_cast<uint32_t>(weight) + noise(rng)});
  }
  return list;
}

// What the compressor did before it skipped codes: every allowed stage's
// code, the smallest kept, the lower stage of equal ones.
StageCode EveryStage(const StageLists& lists, uint8_t allowed) {
  StageCode best;
  bool have = false;
  for (uint8_t id = 0; id < 3; ++id) {
    if (!(allowed >> id & 1)) continue;
    const uint32_t alphabet = RunTokens::ForStage(id, kRadius).alphabet();
    HostCode code = BuildHostCode(lists.used[id], alphabet, kMaxLength, lists.extra_bits[id]);
    EXPECT_LE(CodeFloor(lists.used[id], alphabet, lists.extra_bits[id]),
              static_cast<double>(code.bits) + 1e-6)
        << "stage " << int{id};
    EXPECT_EQ(CodeLengthBytes(lists.used[id], alphabet), code.section.size())
        << "stage " << int{id};
    if (!have || code.bits < best.code.bits) {
      best.stage = id;
      best.code = std::move(code);
    }
    have = true;
  }
  return best;
}

void ExpectSamePick(const StageLists& lists, uint8_t allowed, const std::string& what) {
  const StageCode want = EveryStage(lists, allowed);
  const StageCode got = SmallestStageCode(lists, allowed, kRadius, kMaxLength);
  EXPECT_EQ(got.stage, want.stage) << what;
  EXPECT_EQ(got.code.bits, want.code.bits) << what;
  EXPECT_EQ(got.code.lengths, want.code.lengths) << what;
  EXPECT_EQ(got.code.section, want.code.section) << what;
}

TEST(HostCode, TheStagePickedWithFloorsIsTheOneEveryCodePicks) {
  std::mt19937_64 rng(23);
  std::uniform_int_distribution<uint32_t> used(1, 900);
  std::uniform_real_distribution<double> skew(0.0, 0.5);
  std::uniform_int_distribution<uint64_t> extra(0, 200000);
  int pruned = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<SymbolCount> lists[3];
    StageLists stages;
    // Half the trials: unrelated lists, which floors mostly tell apart;
    // the other half: one list perturbed by a few percent per stage, so
    // that the codes differ by less than a code's redundancy and the
    // winner is often not the stage with the lowest floor.
    const bool close = trial % 2 == 1;
    for (int id = 0; id < 3; ++id) {
      if (close && id > 0) {
        lists[id] = lists[0];
        for (SymbolCount& u : lists[id])
          u.count += std::uniform_int_distribution<uint32_t>(0, u.count / 30)(rng);
      } else {
        lists[id] = RandomList(rng, used(rng), skew(rng));
      }
      stages.used[id] = lists[id];
      stages.extra_bits[id] = id == 0 ? 0 : close ? extra(rng) % 64 : extra(rng);
    }
    for (uint8_t allowed = 1; allowed < 8; ++allowed) {
      ExpectSamePick(stages, allowed,
                     "trial " + std::to_string(trial) + " allowed " + std::to_string(allowed));
    }
    // How often a floor lets the pick skip a code (the point of floors).
    const StageCode best = EveryStage(stages, 7);
    for (int id = 0; id < 3; ++id) {
      if (id != best.stage &&
          FloorBeyond(CodeFloor(stages.used[id], RunTokens::ForStage(id, kRadius).alphabet(),
                                stages.extra_bits[id]),
                      best.code.bits)) {
        ++pruned;
      }
    }
  }
  EXPECT_GT(pruned, 100) << "the trials hardly exercise the skipping";
}

TEST(HostCode, EqualStagesGoToTheLowerOne) {
  // The same list for every stage and no extra bits: the stages' codes tie
  // wherever their code-length sections come out the same length.
  std::mt19937_64 rng(5);
  int ties = 0;
  for (uint32_t used : {1u, 2u, 40u, 300u}) {
    const std::vector<SymbolCount> list = RandomList(rng, used, 0.01);
    StageLists stages;
    for (int id = 0; id < 3; ++id) stages.used[id] = list;
    uint64_t bits[3];
    for (uint8_t id = 0; id < 3; ++id) {
      bits[id] =
          BuildHostCode(list, RunTokens::ForStage(id, kRadius).alphabet(), kMaxLength, 0).bits;
    }
    for (uint8_t allowed = 1; allowed < 8; ++allowed) {
      ExpectSamePick(stages, allowed,
                     "used " + std::to_string(used) + " allowed " + std::to_string(allowed));
      if ((allowed & 6) == 6 && bits[1] == bits[2]) ++ties;
      if ((allowed & 3) == 3 && bits[0] == bits[1]) ++ties;
    }
  }
  EXPECT_GT(ties, 0) << "no tie among the stages' codes: the case tests nothing";
}

TEST(HostCode, AFloorIsEntropyExtraBitsAndTheSection) {
  // Symbol 7 of 8: a run of 7 unused (0, 7) and its length, 3 bytes.
  const std::vector<SymbolCount> one = {{7, 1000}};
  EXPECT_EQ(CodeLengthBytes(one, 8), 3u);
  EXPECT_DOUBLE_EQ(CodeFloor(one, 8, 0), 24.0);
  EXPECT_DOUBLE_EQ(CodeFloor(one, 8, 123), 147.0);
  // Symbols 1 and 2 of 300: (0, 1), two lengths, then 297 unused as 0 and
  // two LEB128 bytes: 7 bytes.
  const std::vector<SymbolCount> two = {{1, 500}, {2, 500}};
  EXPECT_EQ(CodeLengthBytes(two, 300), 7u);
  EXPECT_DOUBLE_EQ(CodeFloor(two, 300, 0), 1000.0 + 56.0);  // one bit each
  EXPECT_FALSE(FloorBeyond(1000.0, 1000));
  EXPECT_TRUE(FloorBeyond(1002.0, 1000));
}

// A token stage's floor from the symbols' sums with a few bins changed (the
// survey's way) is the floor of the changed list itself: bins lowered,
// emptied, and new ones added, on lists of 1 to 3,000 symbols.
TEST(HostCode, ChangedSumsGiveTheChangedListsFloor) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<SymbolCount> list;
    const uint32_t m = 1 + static_cast<uint32_t>(rng() % 3000);
    for (uint32_t i = 0; i < m; ++i) {
      list.push_back({2 * i, 1 + static_cast<uint32_t>(rng() % 100000)});
    }
    EntropySums sums = SumsOf(list);
    std::vector<SymbolCount> changed;
    for (const SymbolCount& u : list) {
      uint32_t count = u.count;
      if (rng() % 8 == 0) {
        count = rng() % 2 ? 0 : static_cast<uint32_t>(rng() % (u.count + 1));
        sums.Remove(u.count);
        sums.Add(count);
      }
      if (count != 0) changed.push_back({u.symbol, count});
    }
    for (uint32_t t = 0; t < 12; ++t) {  // tokens after the residuals
      const uint32_t count = rng() % 3 ? static_cast<uint32_t>(rng() % 50000) : 0;
      if (count != 0) changed.push_back({2 * m + t, count});
      sums.Add(count);
    }
    const uint32_t alphabet = 2 * m + 12;
    const double want = CodeFloor(changed, alphabet, 777);
    const double got = CodeFloor(sums, CodeLengthBytes(changed, alphabet), 777);
    ASSERT_NEAR(got, want, 1e-9 * want + 1e-6) << "trial " << trial << ", " << m << " symbols";
  }
}

}  // namespace
}  // namespace ebzip::gpu
