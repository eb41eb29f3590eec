// Writes the seed corpus of grpc_fuzzer: inputs whose plans
// (grpc_fuzz_plan.h) are well-formed calls, so that mutation starts from
// requests the server accepts. Between them: buffered and streamed Compress
// (one frame, several frames past the window), relative bounds with fill
// values and special values, Decompress of the seed archives (streamed, many
// reply messages, past --max_request_bytes), a Compress whose archive a later
// round decompresses, three calls at once, gzip and manual reading,
// corrupted archives with repaired checksums, an archive too large for one
// request, a cancellation and payloads with overlong varints.
// Usage: grpc_seed_corpus DIR
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "tests/fuzz/grpc_fuzz_plan.h"

namespace {

using ebzip::fuzz::ActionPlan;
using ebzip::fuzz::CallPlan;
using ebzip::fuzz::DimPlan;
using ebzip::fuzz::HeaderPlan;
using ebzip::fuzz::MutationPlan;
using ebzip::fuzz::Plan;
using ebzip::fuzz::RoundPlan;

// A dimension of n (1..4096).
DimPlan Dim(uint64_t n) {
  DimPlan d;
  d.kind = n <= 64 ? 0 : 1;
  d.value = n - 1;
  return d;
}

// FLOAT32 (or FLOAT64) of `shape`, ABS 1e-2 (or REL 1e-4).
HeaderPlan Header(std::vector<uint64_t> shape, bool f64 = false, bool rel = false) {
  static constexpr uint8_t kRankChoice[] = {4, 0, 1, 2, 3, 5};  // rank -> choice
  HeaderPlan h;
  h.dtype = f64 ? 1 : 0;
  h.rank = kRankChoice[shape.size()];
  h.dims.clear();
  for (uint64_t n : shape) h.dims.push_back(Dim(n));
  h.mode = rel ? 1 : 0;
  h.bound = rel ? 1 : 0;
  return h;
}

ActionPlan HeaderAction(HeaderPlan h) {
  ActionPlan a;
  a.kind = ActionPlan::kHeader;
  a.header = std::move(h);
  return a;
}

ActionPlan Simple(ActionPlan::Kind kind) {
  ActionPlan a;
  a.kind = kind;
  return a;
}

ActionPlan DataRest(uint8_t chunking, uint8_t content = 0) {
  ActionPlan a;
  a.kind = ActionPlan::kDataRest;
  a.chunking = chunking;
  a.content = content;
  return a;
}

ActionPlan Archive(uint8_t source, uint8_t chunking = 0) {
  ActionPlan a;
  a.kind = ActionPlan::kArchive;
  a.source = source;
  a.chunking = chunking;
  return a;
}

CallPlan Call(CallPlan::Method method, std::vector<ActionPlan> actions) {
  CallPlan c;
  c.method = method;
  c.actions = std::move(actions);
  return c;
}

Plan OneRound(std::vector<CallPlan> calls) {
  Plan p;
  p.rounds.push_back(RoundPlan{std::move(calls)});
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  std::vector<std::pair<const char*, Plan>> seeds;

  seeds.emplace_back("defaults", OneRound({CallPlan{}}));  // all zeros: one element
  seeds.emplace_back("compress-f32-2d",
                     OneRound({Call(CallPlan::kCompress, {
                                                             HeaderAction(Header({64, 64})),
                                                             DataRest(1),
                                                         })}));
  HeaderPlan streamed = Header({4096});
  streamed.frame_elements = 1;
  streamed.frame_elements_value = 512;  // eight frames: past the window of two
  seeds.emplace_back("compress-streamed",
                     OneRound({Call(CallPlan::kCompress, {HeaderAction(streamed), DataRest(1)})}));
  {
    HeaderPlan h = Header({40, 30}, /*f64=*/true, /*rel=*/true);
    h.fill = 1;  // -9999, which the specials pattern holds
    seeds.emplace_back("compress-rel-fill-specials",
                       OneRound({Call(CallPlan::kCompress, {HeaderAction(h), DataRest(6, 1)})}));
  }
  {
    // REL 1e300 of float64 values: an absolute bound past DBL_MAX / 2 once
    // made an infinite step that the server refused and the codec did not.
    HeaderPlan h = Header({40, 30}, /*f64=*/true, /*rel=*/true);
    h.bound = 8;  // 1e300
    seeds.emplace_back("compress-rel-huge",
                       OneRound({Call(CallPlan::kCompress, {HeaderAction(h), DataRest(6, 1)})}));
  }
  {
    HeaderPlan h = Header({16, 8, 4, 2});
    h.radius = 1;
    h.radius_value = 3;  // radius 4: most residuals are outliers
    h.gap_array = 2;
    h.chunk_symbols = 1;
    h.chunk_symbols_value = 63;
    seeds.emplace_back("compress-4d-small-params",
                       OneRound({Call(CallPlan::kCompress, {HeaderAction(h), DataRest(3)})}));
  }
  for (uint8_t source : {0, 1, 5, 6}) {
    static const char* const kNames[] = {
        "decompress-streamed",          "decompress-rel", "", "", "", "decompress-many-replies",
        "decompress-past-request-limit"};
    seeds.emplace_back(kNames[source],
                       OneRound({Call(CallPlan::kDecompress, {Archive(source, 1)})}));
  }
  {
    Plan p = OneRound({Call(CallPlan::kCompress, {HeaderAction(Header({32, 32})), DataRest(0)})});
    p.rounds.push_back(RoundPlan{{Call(
        CallPlan::kDecompress, {Archive(static_cast<uint8_t>(ebzip::fuzz::kSeedArchives), 4)})}});
    seeds.emplace_back("round-trip", std::move(p));
  }
  seeds.emplace_back(
      "three-at-once",
      OneRound({Call(CallPlan::kCompress, {HeaderAction(streamed), DataRest(0)}),
                Call(CallPlan::kDecompress, {Archive(0, 5)}), Call(CallPlan::kServerInfo, {})}));
  {
    CallPlan c = Call(CallPlan::kCompress, {HeaderAction(Header({100, 10})), DataRest(2 /* 1 B */),
                                            Simple(ActionPlan::kReadAll)});
    c.flags = CallPlan::kGzip | CallPlan::kManualReading | CallPlan::kRequestIdMeta;
    c.request_id = {'s', 'e', 'e', 'd'};
    // The 1-byte chunking is raised to 4000 bytes / 64 messages.
    seeds.emplace_back("compress-gzip-manual-read", OneRound({c}));
  }
  {
    ActionPlan a = Archive(2);
    MutationPlan flip;
    flip.kind = MutationPlan::kFlipBit;
    flip.pos = 96 + 256 + 3;  // into the first frame's first section
    flip.value = 1;
    MutationPlan fix;
    fix.kind = MutationPlan::kFixChecksums;
    a.mutations = {flip, fix};
    seeds.emplace_back("decompress-mutated-checksums-fixed",
                       OneRound({Call(CallPlan::kDecompress, {a})}));
  }
  {
    // The last frame index entry's size, changed, with every checksum
    // repaired: the streamed Decompress's check of the index against the
    // frames it saw.
    ActionPlan a = Archive(0, 1);
    MutationPlan store;
    store.kind = MutationPlan::kStoreU64;
    store.pos = uint32_t{1} << 31 | 24;  // 24 bytes from the end
    store.value = 1;
    MutationPlan fix;
    fix.kind = MutationPlan::kFixChecksums;
    a.mutations = {store, fix};
    seeds.emplace_back("decompress-streamed-index-mismatch",
                       OneRound({Call(CallPlan::kDecompress, {a})}));
  }
  {
    // A one-frame archive repeated past --max_request_bytes.
    ActionPlan a = Archive(5);
    MutationPlan repeat;
    repeat.kind = MutationPlan::kDuplicate;
    repeat.len = 65535;
    repeat.value = 31;
    a.mutations = {repeat};
    seeds.emplace_back("decompress-past-request-limit-buffered",
                       OneRound({Call(CallPlan::kDecompress, {a})}));
  }
  {
    ActionPlan data;
    data.kind = ActionPlan::kData;
    data.length = 2048;
    CallPlan c =
        Call(CallPlan::kCompress, {HeaderAction(streamed), data, Simple(ActionPlan::kCancel)});
    seeds.emplace_back("compress-cancelled", OneRound({c}));
  }
  {
    ActionPlan raw;
    raw.kind = ActionPlan::kRaw;
    raw.raw_kind = 1;
    raw.param = 2 | 3 << 3;   // two more bytes of tag, three more of length
    raw.bytes.assign(16, 0);  // four float zeros
    seeds.emplace_back("compress-overlong-varints",
                       OneRound({Call(CallPlan::kCompress, {HeaderAction(Header({4})), raw})}));
  }

  int failures = 0;
  for (auto& [name, plan] : seeds) {
    const std::vector<uint8_t> input = ebzip::fuzz::WritePlan(plan);
    // The writer must produce what the reader reads back as the same plan.
    const std::vector<uint8_t> again =
        ebzip::fuzz::WritePlan(ebzip::fuzz::ReadPlan(input.data(), input.size()));
    if (again != input) {
      std::fprintf(stderr, "%s: the plan does not read back as written\n", name);
      ++failures;
      continue;
    }
    const std::string path = std::string(argv[1]) + "/seed-" + name;
    std::FILE* f = std::fopen(path.c_str(), "wb");
    bool written = f != nullptr;
    if (f != nullptr) {
      written = std::fwrite(input.data(), 1, input.size(), f) == input.size();
      written = std::fclose(f) == 0 && written;
    }
    if (!written) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      ++failures;
    }
  }
  return failures == 0 ? 0 : 1;
}
