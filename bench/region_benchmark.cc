// ebzip_bench_region: what a region costs against a full decode on the CPU
// (issue 25's target: a region of 1 % of the array in at most 5 % of the
// full decode's time). Smooth float32 fields are generated (4-D of 100 time
// steps, and a 3-D cube), compressed at REL 1e-4 with the default options,
// then decoded whole and as regions of about 1 %: one index along
// dimension 0 (a time step) and a box with a side of ~21.5 % of each of the
// last three dimensions, medians of 3. Built with CUDA, the same on the
// first GPU (bench/gpu_region_timing.h), where one is visible.
//
//   ebzip_bench_region [GiB]    (default 1; the figure is for 4)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "codec/archive.h"
#include "codec/region.h"
#ifdef EBZIP_BENCH_GPU
#include "bench/gpu_region_timing.h"
#endif

namespace ebzip {
namespace {

double Seconds(const std::chrono::steady_clock::time_point& since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

template <typename F>
double Median3(F&& f) {
  std::vector<double> t;
  for (int r = 0; r < 3; ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(Seconds(start));
  }
  std::sort(t.begin(), t.end());
  return t[1];
}

void Run(const char* name, const std::vector<uint64_t>& shape) {
  const ArraySpec spec{DType::kFloat32, shape};
  std::vector<float> data(spec.num_elements());
  const uint64_t row = spec.num_elements() / shape[0];
  for (uint64_t i = 0; i < data.size(); ++i) {
    const double a = static_cast<double>(i / row), b = static_cast<double>(i % row);
    data[i] = static_cast<float>(std::sin(0.05 * a) * std::cos(1e-4 * b) + 1e-3 * std::sin(b));
  }
  CompressOptions o;
  o.mode = BoundMode::kRel;
  o.bound = 1e-4;
  const auto c0 = std::chrono::steady_clock::now();
  auto archive = Compress(spec, {reinterpret_cast<const uint8_t*>(data.data()), data.size() * 4}, o);
  if (!archive.ok()) {
    std::fprintf(stderr, "compress: %s\n", archive.status().ToString().c_str());
    std::exit(1);
  }
  std::vector<float>().swap(data);
  auto info = ReadArchiveInfo(*archive);
  if (!info.ok()) std::exit(1);
  std::printf("%s %s f32 (%.2f GiB), archive %.1f MB (ratio %.1f), %zu frames of %llu rows, "
              "compressed in %.1f s\n",
              name, ShapeToString(shape).c_str(), spec.num_bytes() / 1073741824.0,
              archive->size() / 1e6, static_cast<double>(spec.num_bytes()) / archive->size(),
              info->frames.size(), static_cast<unsigned long long>(info->header.frame_rows),
              Seconds(c0));
  {
    // What the frames chose (FORMAT.md §15.9): region decoding's cost depends on it.
    const format::FrameHeader& h = info->frame_headers[0];
    std::printf("  frame 0: %s, block/tile %u×%u×%u×%u, %s, order %u\n",
                h.predictor == format::kPredictorInterp ? "interpolation" : "Lorenzo", h.block[0],
                h.block[1], h.block[2], h.block[3],
                h.lossless == format::kLosslessZeroRuns ? "zero-run tokens" : "Huffman",
                static_cast<unsigned>(h.order));
  }
  const double full = Median3([&] {
    auto out = Decompress(*archive);
    if (!out.ok()) std::exit(1);
  });
  std::printf("  full decode                       %8.3f s  %7.2f GB/s\n", full,
              spec.num_bytes() / full / 1e9);
  std::vector<std::pair<std::string, Hyperslab>> regions;
  {
    Hyperslab step = WholeArray(shape);
    step.start[0] = shape[0] / 2;
    step.count[0] = 1;
    regions.push_back({"one index of dimension 0", step});
    Hyperslab box = WholeArray(shape);
    const size_t ndim = shape.size();
    // A side of 1 %^(1/k) of each of the last k = min(3, ndim) dimensions,
    // all of the others but one index of dimension 0 when ndim is 4.
    const size_t k = std::min<size_t>(3, ndim);
    const double side = std::pow(0.01, 1.0 / static_cast<double>(k));
    for (size_t d = 0; d < ndim; ++d) {
      if (d + k < ndim) {
        box.start[d] = shape[d] / 3;
        box.count[d] = 1;
        continue;
      }
      box.count[d] = std::max<uint64_t>(1, static_cast<uint64_t>(side * static_cast<double>(shape[d])));
      box.start[d] = (shape[d] - box.count[d]) / 3;
    }
    regions.push_back({"box of the last dimensions", box});
  }
  std::vector<std::vector<uint8_t>> outputs;
  for (const auto& [what, r] : regions) {
    std::vector<uint8_t>& out = outputs.emplace_back(r.NumElements() * 4);
    const double t = Median3([&] {
      if (!DecompressRegion(*info, *archive, r, DecoderKind::kAuto, absl::MakeSpan(out)).ok()) {
        std::exit(1);
      }
    });
    std::printf("  region %-26s %8.3f s  %5.2f %% of the array, %5.2f %% of the full decode's "
                "time, %zu of %zu frames  [%s]\n",
                what.c_str(), t, 100.0 * r.NumElements() / spec.num_elements(), 100.0 * t / full,
                FramesOf(*info, r).size(), info->frames.size(), r.ToString().c_str());
  }
#ifdef EBZIP_BENCH_GPU
  std::vector<Hyperslab> slabs;
  for (const auto& [what, r] : regions) slabs.push_back(r);
  const bench::GpuRegionTimes g = bench::TimeGpuRegions(*archive, slabs, outputs);
  if (!g.error.empty()) {
    std::printf("  GPU: %s\n", g.error.c_str());
    return;
  }
  std::printf(
      "  GPU %s: archive in host memory to values in host memory; regions: the "
      "frames met in groups, each on a stream of its own; only the tiles met rebuilt\n",
      g.device.c_str());
  for (int pinned = 1; pinned >= 0; --pinned) {
    const double gpu_full = g.full[pinned ? 0 : 1];
    std::printf("  GPU full decode (%-11s)         %8.4f s  %7.2f GB/s\n",
                pinned ? "page-locked" : "pageable", gpu_full, spec.num_bytes() / gpu_full / 1e9);
  }
  for (size_t at = 0; at < bench::kRegionVariants.size(); ++at) {
    const bench::RegionVariant& v = bench::kRegionVariants[at];
    const double gpu_full = g.full[v.page_locked ? 0 : 1];
    for (size_t k = 0; k < regions.size(); ++k) {
      std::printf("  GPU region %-26s (%-11s) %8.4f s  %5.2f %% of the full decode's time (%s)\n",
                  regions[k].first.c_str(), v.label, g.regions[k][at],
                  100.0 * g.regions[k][at] / gpu_full, v.page_locked ? "page-locked" : "pageable");
    }
  }
#endif
}

}  // namespace
}  // namespace ebzip

int main(int argc, char** argv) {
  const double gib = argc > 1 ? std::atof(argv[1]) : 1.0;
  const uint64_t n = static_cast<uint64_t>(gib * (1ull << 30) / 4);
  // 4-D: 100 time steps (one is 1 % of the array) of 16 x 256 x X; 3-D: a cube.
  const uint64_t x = std::max<uint64_t>(1, n / 100 / (16 * 256));
  ebzip::Run("4-D", {100, 16, 256, x});
  const uint64_t side = static_cast<uint64_t>(std::cbrt(static_cast<double>(n)));
  ebzip::Run("3-D", {side, side, side});
  return 0;
}
