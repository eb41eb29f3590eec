// ebzip_bench_gpu: device-resident GPU compression and decompression, per
// stage, against the memory-bandwidth floor (bench/README.md). Prints one
// table per field and bound; nothing here is a pass/fail test, but every
// run checks that the archive decodes within its bound.
//
// usage: ebzip_bench_gpu [--quick] [--small_batch]
//                        [--codec=v1|auto|auto-runs|auto-values|lorenzo|interp ...]
//                        [--field=NAME.nc:VAR ...] [--rel=R ...] [--reps=N] [--split=K]
//   --codec: the format and predictor (default: v1 and auto, each in turn)
//   --rel: the relative bounds (default 1e-2, 1e-3, 1e-4 and 1e-5)
//   --reps: timed runs after the warm-up (default 5; 2 with --quick); 1 for a
//           profiler, which would otherwise see every kernel six times
//   --split=K: also the array's frames as frame tasks in K batches, each on
//              its own stream and host thread (the service's GPU workers)
//   --small_batch: only where a batch of small (256 KiB) arrays spends its time
//                  (version 1, or each --codec given)
//   default fields: a generated 1 GiB float32 3-D smooth field, and every
//   real field named with --field, tiled along dimension 0 to >= 256 MiB.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "client/io/array_file.h"
#include "codec/archive.h"
#include "codec/frame_task.h"
#include "gpu/cuda_status.h"
#include "gpu/gpu_codec.h"
#include "gpu/stage_timer.h"

namespace ebzip {
namespace {

// What --codec names: version 1 (Lorenzo, plain Huffman), or version 2
// with the per-frame choice or one predictor forced.
CompressOptions Version1() {
  CompressOptions o;
  o.predictor = Predictor::kLorenzo;
  o.lossless = Lossless::kHuffman;
  return o;
}
std::optional<CompressOptions> CodecOptions(const std::string& name) {
  CompressOptions o;
  if (name == "v1") return Version1();
  if (name == "auto") return o;
  // The choice with one lossless stage (FORMAT.md §15.4, §15.4.1): what
  // each costs on the same field.
  if (name == "auto-runs") {
    o.lossless = Lossless::kZeroRuns;
    return o;
  }
  if (name == "auto-values") {
    o.lossless = Lossless::kRunValues;
    return o;
  }
  if (name == "lorenzo") o.predictor = Predictor::kLorenzo;
  else if (name == "interp") o.predictor = Predictor::kInterp;
  else return std::nullopt;
  return o;
}

#define CHECK_CUDA(expr)                                                                         \
  do {                                                                                           \
    cudaError_t e_ = (expr);                                                                     \
    if (e_ != cudaSuccess) {                                                                     \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)
#define CHECK_OK(expr)                                                                           \
  do {                                                                                           \
    absl::Status s_ = (expr);                                                                    \
    if (!s_.ok()) {                                                                              \
      std::fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, std::string(s_.message()).c_str()); \
      std::exit(1);                                                                              \
    }                                                                                            \
  } while (0)

// A smooth 3-D field, like a simulation's temperature or density, with a
// little noise so the bound matters.
__global__ void SmoothField(float* out, uint64_t nz, uint64_t ny, uint64_t nx) {
  const uint64_t n = nz * ny * nx;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < n;
       i += uint64_t{gridDim.x} * blockDim.x) {
    const double z = static_cast<double>(i / (ny * nx)) / nz;
    const double y = static_cast<double>(i / nx % ny) / ny;
    const double x = static_cast<double>(i % nx) / nx;
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u;
    h ^= h >> 13;
    const double noise = (h & 0xFFFF) / 65536.0 - 0.5;
    out[i] = static_cast<float>(300 + 20 * sin(6.3 * x + 2 * z) * cos(4.1 * y) +
                                5 * sin(25 * x * y + 9 * z) + 0.01 * noise);
  }
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Device-to-device copy bandwidth, bytes read plus written per second.
double CopyBandwidth(void* a, void* b, size_t bytes) {
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  std::vector<double> t;
  for (int r = 0; r < 6; ++r) {
    cudaEventRecord(start);
    CHECK_CUDA(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    cudaEventRecord(stop);
    cudaEventSynchronize(stop);
    float ms;
    cudaEventElapsedTime(&ms, start, stop);
    if (r > 0) t.push_back(ms);
  }
  return 2.0 * bytes / (Median(t) * 1e-3);
}

struct Field {
  std::string name;
  ArraySpec spec;
  void* device;
  std::optional<double> fill;
};

void PrintStageTable(const std::vector<std::pair<std::string, float>>& stages, uint64_t bytes) {
  for (const auto& s : stages) {
    std::printf("  %-28s %9.3f %9.1f\n", s.first.c_str(), s.second, bytes / (s.second * 1e-3) / 1e9);
  }
}

// The array's frames as frame tasks (codec/frame_task.h) in `split` batches,
// each on its own stream from its own host thread, as the service's GPU
// workers take a large request's frames: one batch's host steps (the
// survey's estimates, the stage pick) then overlap the other's kernels.
// Wall-clock ms from the first call to the last stream's end, median of
// `reps`, the host's planning included; the range is given (the host's
// scan, as the service's clients send it), so no range pass is in it. Every
// frame's bytes are checked against `whole`, the array's archive.
double SplitCompressMs(const Field& f, const CompressOptions& options, int split, int reps,
                       const std::vector<uint8_t>& whole) {
  std::vector<uint8_t> host(f.spec.num_bytes());
  CHECK_CUDA(cudaMemcpy(host.data(), f.device, host.size(), cudaMemcpyDeviceToHost));
  CompressOptions o = options;
  o.range = FiniteRange(f.spec, host, o.fill_value);
  auto plan = PlanArchive(f.spec, o, ResolveBound(o, f.spec.dtype, *o.range));
  CHECK_OK(plan.status());
  const uint64_t frames = plan->frame_count();
  struct Part {
    std::vector<gpu::CompressTask> tasks;
    gpu::Workspace ws;
    cudaStream_t stream;
  };
  std::vector<Part> parts(split);
  std::vector<uint64_t*> sizes(frames);
  std::vector<uint8_t*> outs(frames);
  for (uint64_t k = 0; k < frames; ++k) {
    auto ft = FrameTaskOf(*plan, o, k);
    CHECK_OK(ft.status());
    const uint64_t cap = gpu::MaxArchiveBytes(ft->spec, ft->options);
    CHECK_CUDA(cudaMalloc(&outs[k], cap));
    CHECK_CUDA(cudaMalloc(&sizes[k], 8));
    parts[k * split / frames].tasks.push_back(
        {ft->spec, ft->options, static_cast<const uint8_t*>(f.device) + plan->FrameDataOffset(k),
         outs[k], cap, sizes[k], ft->first_row});
  }
  for (Part& part : parts) {
    auto need = gpu::CompressWorkspaceSize(part.tasks);
    CHECK_OK(need.status());
    part.ws = {nullptr, need->device_bytes, nullptr, need->host_bytes};
    CHECK_CUDA(cudaMalloc(&part.ws.device, part.ws.device_bytes));
    CHECK_CUDA(cudaMallocHost(&part.ws.host, part.ws.host_bytes));
    CHECK_CUDA(cudaStreamCreateWithFlags(&part.stream, cudaStreamNonBlocking));
  }
  std::vector<double> ms;
  for (int r = 0; r < reps + 1; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (Part& part : parts) {
      threads.emplace_back([&part] {
        CHECK_OK(gpu::CompressBatch(part.tasks, part.ws, part.stream));
        CHECK_CUDA(cudaStreamSynchronize(part.stream));
      });
    }
    for (std::thread& t : threads) t.join();
    const std::chrono::duration<double, std::milli> took = std::chrono::steady_clock::now() - start;
    if (r > 0) ms.push_back(took.count());
  }
  auto info = ReadArchiveInfo(whole);
  CHECK_OK(info.status());
  for (uint64_t k = 0; k < frames; ++k) {
    uint64_t size = 0;
    CHECK_CUDA(cudaMemcpy(&size, sizes[k], 8, cudaMemcpyDeviceToHost));
    std::vector<uint8_t> bytes(size);
    CHECK_CUDA(cudaMemcpy(bytes.data(), outs[k], size, cudaMemcpyDeviceToHost));
    const format::FrameIndexEntry& e = info->frames[k];
    if (size != e.size || std::memcmp(bytes.data(), whole.data() + e.offset, size) != 0) {
      std::fprintf(stderr, "split compression: frame %llu differs from the array's\n",
                   static_cast<unsigned long long>(k));
      std::exit(1);
    }
    cudaFree(outs[k]);
    cudaFree(sizes[k]);
  }
  for (Part& part : parts) {
    cudaFree(part.ws.device);
    cudaFreeHost(part.ws.host);
    cudaStreamDestroy(part.stream);
  }
  return Median(ms);
}

void Run(const Field& f, double rel, double copy_bw, int reps, const std::string& codec,
         int split) {
  CompressOptions options = *CodecOptions(codec);
  options.mode = BoundMode::kRel;
  options.bound = rel;
  options.fill_value = f.fill;
  const uint64_t in_bytes = f.spec.num_bytes();
  const uint64_t capacity = gpu::MaxArchiveBytes(f.spec, options);
  uint8_t* archive;
  uint64_t* size;
  void* output;
  CHECK_CUDA(cudaMalloc(&archive, capacity));
  CHECK_CUDA(cudaMalloc(&size, 8));
  CHECK_CUDA(cudaMalloc(&output, in_bytes));
  gpu::CompressTask task{f.spec, options, f.device, archive, capacity, size};
  auto need = gpu::CompressWorkspaceSize({&task, 1});
  CHECK_OK(need.status());
  gpu::Workspace ws{nullptr, need->device_bytes, nullptr, need->host_bytes};
  CHECK_CUDA(cudaMalloc(&ws.device, ws.device_bytes));
  CHECK_CUDA(cudaMallocHost(&ws.host, ws.host_bytes));
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  gpu::StageTimer timer;

  std::vector<double> comp_ms;
  std::vector<std::vector<std::pair<std::string, float>>> comp_stages;
  std::vector<std::vector<std::pair<std::string, double>>> comp_notes;
  for (int r = 0; r < reps + 1; ++r) {
    CHECK_OK(gpu::CompressBatch({&task, 1}, ws, stream, &timer));
    auto stages = timer.Stages();
    double total = 0;
    for (auto& s : stages) total += s.second;
    if (r > 0) {
      comp_ms.push_back(total);
      comp_stages.push_back(stages);
      comp_notes.push_back(timer.Notes());
    }
  }
  uint64_t archive_bytes = 0;
  CHECK_CUDA(cudaMemcpy(&archive_bytes, size, 8, cudaMemcpyDeviceToHost));
  std::vector<uint8_t> host_archive(archive_bytes);
  CHECK_CUDA(cudaMemcpy(host_archive.data(), archive, archive_bytes, cudaMemcpyDeviceToHost));

  // The same compression with the code built on the host (issue #3: which is
  // faster end to end, transfers and the synchronization included), into a
  // second buffer: its archive must be the same bytes.
  std::vector<double> host_built_ms, host_code_ms;
  bool same_bytes = false;
  {
    uint8_t* archive2;
    CHECK_CUDA(cudaMalloc(&archive2, capacity));
    gpu::CompressTask task2 = task;
    task2.archive = archive2;
    auto need2 = gpu::CompressWorkspaceSize({&task2, 1}, gpu::CodeBuilder::kHost);
    CHECK_OK(need2.status());
    gpu::Workspace ws2{nullptr, need2->device_bytes, nullptr, need2->host_bytes};
    CHECK_CUDA(cudaMalloc(&ws2.device, ws2.device_bytes));
    CHECK_CUDA(cudaMallocHost(&ws2.host, ws2.host_bytes));
    for (int r = 0; r < reps + 1; ++r) {
      CHECK_OK(gpu::CompressBatch({&task2, 1}, ws2, stream, &timer, gpu::CodeBuilder::kHost));
      double total = 0;
      for (auto& st : timer.Stages()) {
        total += st.second;
        if (r > 0 && st.first.find("(host)") != std::string::npos &&
            st.first.find("code") != std::string::npos) {
          host_code_ms.push_back(st.second);
        }
      }
      if (r > 0) host_built_ms.push_back(total);
    }
    uint64_t bytes2 = 0;
    CHECK_CUDA(cudaMemcpy(&bytes2, size, 8, cudaMemcpyDeviceToHost));
    std::vector<uint8_t> second(bytes2);
    CHECK_CUDA(cudaMemcpy(second.data(), archive2, bytes2, cudaMemcpyDeviceToHost));
    same_bytes = second == host_archive;
    cudaFree(archive2);
    cudaFree(ws2.device);
    cudaFreeHost(ws2.host);
  }
  auto info = ReadArchiveInfo(host_archive);
  CHECK_OK(info.status());

  gpu::DecompressTask dtask{&*info, archive, output};
  auto dneed = gpu::DecompressWorkspaceSize({&dtask, 1}, DecoderKind::kAuto);
  if (dneed.status().code() == absl::StatusCode::kUnimplemented) {
    const double c = Median(comp_ms);
    std::printf("\n%s  %s  REL %.0e  codec %s  ratio %.2f  compress, all stages %.3f ms = %.1f GB/s;"
                " decompression not on the GPU: %s\n",
                f.name.c_str(), ShapeToString(f.spec.shape).c_str(), rel, codec.c_str(),
                static_cast<double>(in_bytes) / archive_bytes, c, in_bytes / (c * 1e-3) / 1e9,
                std::string(dneed.status().message()).c_str());
    PrintStageTable(comp_stages[comp_stages.size() / 2], in_bytes);
    return;
  }
  CHECK_OK(dneed.status());
  gpu::Workspace dws{nullptr, dneed->device_bytes, nullptr, dneed->host_bytes};
  CHECK_CUDA(cudaMalloc(&dws.device, dws.device_bytes));
  CHECK_CUDA(cudaMallocHost(&dws.host, dws.host_bytes));
  std::vector<double> dec_ms;
  std::vector<std::vector<std::pair<std::string, float>>> dec_stages;
  for (int r = 0; r < reps + 1; ++r) {
    CHECK_OK(gpu::DecompressBatch({&dtask, 1}, DecoderKind::kAuto, dws, stream, &timer));
    auto stages = timer.Stages();
    CHECK_OK(gpu::FinishDecompress(dws, stream));
    double total = 0;
    for (auto& s : stages) total += s.second;
    if (r > 0) {
      dec_ms.push_back(total);
      dec_stages.push_back(stages);
    }
  }
  // Decoder comparison on the same archive (Huffman stage only).
  auto decode_stage_ms = [&](DecoderKind kind) {
    std::vector<double> t;
    for (int r = 0; r < 3; ++r) {
      CHECK_OK(gpu::DecompressBatch({&dtask, 1}, kind, dws, stream, &timer));
      for (auto& s : timer.Stages()) {
        if (s.first == "huffman decode" && r > 0) t.push_back(s.second);
      }
      CHECK_OK(gpu::FinishDecompress(dws, stream));
    }
    return Median(t);
  };

  // Bound check of the last decode, on the host, in double precision.
  std::vector<uint8_t> original(in_bytes), decoded(in_bytes);
  CHECK_CUDA(cudaMemcpy(original.data(), f.device, in_bytes, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaMemcpy(decoded.data(), output, in_bytes, cudaMemcpyDeviceToHost));
  uint64_t violations = 0;
  const float fill32 = f.fill ? static_cast<float>(*f.fill) : 0.0f;
  for (uint64_t i = 0; i < f.spec.num_elements(); ++i) {
    float x, y;
    std::memcpy(&x, original.data() + 4 * i, 4);
    std::memcpy(&y, decoded.data() + 4 * i, 4);
    const bool exact = !std::isfinite(x) || (f.fill && x == fill32);
    if (exact ? std::memcmp(&x, &y, 4) != 0
              : !(std::fabs(double{x} - double{y}) <= info->header.abs_bound)) {
      ++violations;
    }
  }

  const double gb = 1e9;
  const double floor_s = (in_bytes + archive_bytes) / copy_bw;
  std::printf("\n%s  %s  REL %.0e  codec %s  ratio %.2f  bound violations %llu\n",
              f.name.c_str(), ShapeToString(f.spec.shape).c_str(), rel, codec.c_str(),
              static_cast<double>(in_bytes) / archive_bytes,
              static_cast<unsigned long long>(violations));
  std::printf("  %-28s %9s %9s\n", "compression stage", "ms", "GB/s");
  const auto& cs = comp_stages[comp_stages.size() / 2];
  for (const auto& s : cs) {
    std::printf("  %-28s %9.3f %9.1f\n", s.first.c_str(), s.second,
                in_bytes / (s.second * 1e-3) / gb);
  }
  // The host's steps in the stage it holds up, each the median over the runs.
  for (size_t i = 0; i < comp_notes[0].size(); ++i) {
    std::vector<double> ms;
    for (const auto& run : comp_notes) ms.push_back(run[i].second);
    std::printf("    host: %-36s %7.3f ms\n", comp_notes[0][i].first.c_str(), Median(ms));
  }
  const double c = Median(comp_ms);
  std::printf("  %-28s %9.3f %9.1f   floor %.3f ms = %.0f GB/s\n", "compress, all stages", c,
              in_bytes / (c * 1e-3) / gb, floor_s * 1e3, in_bytes / floor_s / gb);
  const double h = Median(host_built_ms);
  std::printf("  %-28s %9.3f %9.1f   (its code stage %.3f ms; same archive bytes: %s)\n",
              "compress, code on the host", h, in_bytes / (h * 1e-3) / gb, Median(host_code_ms),
              same_bytes ? "yes" : "NO");
  if (split > 1) {
    // The one batch timed the same way (wall clock, planning included).
    std::vector<double> one;
    for (int r = 0; r < reps + 1; ++r) {
      const auto start = std::chrono::steady_clock::now();
      CHECK_OK(gpu::CompressBatch({&task, 1}, ws, stream));
      CHECK_CUDA(cudaStreamSynchronize(stream));
      const std::chrono::duration<double, std::milli> took =
          std::chrono::steady_clock::now() - start;
      if (r > 0) one.push_back(took.count());
    }
    const double w = Median(one);
    const double sp = SplitCompressMs(f, options, split, reps, host_archive);
    std::printf("  %-28s %9.3f %9.1f   (wall clock, the host's planning included)\n",
                "compress, one batch", w, in_bytes / (w * 1e-3) / gb);
    std::printf("  %-28s %9.3f %9.1f   (%d batches of frame tasks on as many streams and host "
                "threads, range given; same frames: yes)\n",
                "compress, frame tasks", sp, in_bytes / (sp * 1e-3) / gb, split);
    // With the one batch's range pass added: what the split costs when the
    // device finds the range first.
    double range_ms = 0;
    for (const auto& st : cs) {
      if (st.first == "value range") range_ms = st.second;
    }
    std::printf("  %-28s %9.3f %9.1f   (the one batch's value range stage added)\n",
                "compress, frame tasks+range", sp + range_ms,
                in_bytes / ((sp + range_ms) * 1e-3) / gb);
  }
  std::printf("  %-28s %9s %9s\n", "decompression stage", "ms", "GB/s");
  const auto& ds = dec_stages[dec_stages.size() / 2];
  for (const auto& s : ds) {
    std::printf("  %-28s %9.3f %9.1f\n", s.first.c_str(), s.second,
                in_bytes / (s.second * 1e-3) / gb);
  }
  const double d = Median(dec_ms);
  std::printf("  %-28s %9.3f %9.1f   floor %.3f ms = %.0f GB/s\n", "decompress, all stages", d,
              in_bytes / (d * 1e-3) / gb, floor_s * 1e3, in_bytes / floor_s / gb);
  const double symbols_gb = 2.0 * f.spec.num_elements() / gb;
  for (DecoderKind kind :
       {DecoderKind::kGapArray, DecoderKind::kSelfSync, DecoderKind::kChunkParallel}) {
    const double ms = decode_stage_ms(kind);
    if (ms <= 0) break;  // interpolation frames: Huffman decode overlaps, no stage of its own
    std::printf("  huffman decode %-13s %9.3f %9.1f GB/s of 16-bit symbols\n",
                DecoderKindName(kind), ms, symbols_gb / (ms * 1e-3));
  }
  cudaFree(archive);
  cudaFree(size);
  cudaFree(output);
  cudaFree(ws.device);
  cudaFreeHost(ws.host);
  cudaFree(dws.device);
  cudaFreeHost(dws.host);
  cudaStreamDestroy(stream);
}

// A batch of `count` small arrays (the service's batched path): where the
// time of one CompressBatch / DecompressBatch goes when the arrays are too
// small for bandwidth to matter. Host columns are wall time on the calling
// thread; stage columns are the device timeline between marks (a host
// stage's mark includes the host work and the waits around it).
// One batched call's host-side steps timed over `reps` runs after a warm-up:
// the workspace query, the call, and the wait that finishes it (medians),
// and the stage table of the median run. Allocates the workspace on first use.
struct BatchTimes {
  double query_ms, call_ms, finish_ms;
  std::vector<std::pair<std::string, float>> stages;
};
template <typename Query, typename Call, typename Finish>
BatchTimes TimeBatch(int reps, gpu::StageTimer& timer, gpu::Workspace& ws, Query query, Call call,
                     Finish finish) {
  using Clock = std::chrono::steady_clock;
  auto ms_since = [](Clock::time_point t) {
    return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  };
  std::vector<double> query_ms, call_ms, finish_ms;
  std::vector<std::vector<std::pair<std::string, float>>> stages;
  for (int r = 0; r < reps + 1; ++r) {
    auto t0 = Clock::now();
    auto need = query();
    CHECK_OK(need.status());
    const double q = ms_since(t0);
    if (ws.device == nullptr) {
      ws = {nullptr, need->device_bytes, nullptr, need->host_bytes};
      CHECK_CUDA(cudaMalloc(&ws.device, ws.device_bytes));
      CHECK_CUDA(cudaMallocHost(&ws.host, ws.host_bytes));
    }
    t0 = Clock::now();
    CHECK_OK(call());
    const double c = ms_since(t0);
    t0 = Clock::now();
    CHECK_OK(finish());
    const double f = ms_since(t0);
    if (r > 0) {
      query_ms.push_back(q);
      call_ms.push_back(c);
      finish_ms.push_back(f);
      stages.push_back(timer.Stages());
    }
  }
  return {Median(query_ms), Median(call_ms), Median(finish_ms), stages[stages.size() / 2]};
}

void PrintStages(const std::vector<std::pair<std::string, float>>& stages) {
  for (const auto& s : stages) std::printf("    %-28s %9.3f ms\n", s.first.c_str(), s.second);
}

void RunSmallBatch(const Field& f, int count, uint64_t rows, int reps, const std::string& codec) {
  const uint64_t nx = f.spec.shape.back();
  const ArraySpec spec{DType::kFloat32, {rows, nx}};
  CompressOptions options = *CodecOptions(codec);
  options.mode = BoundMode::kRel;
  options.bound = 1e-4;
  std::vector<gpu::CompressTask> tasks(count);
  for (int i = 0; i < count; ++i) {
    auto& t = tasks[i];
    t.spec = spec;
    t.options = options;
    t.input = static_cast<const uint8_t*>(f.device) + i * spec.num_bytes();
    t.capacity = gpu::MaxArchiveBytes(spec, options);
    CHECK_CUDA(cudaMalloc(&t.archive, t.capacity));
    CHECK_CUDA(cudaMalloc(&t.archive_size, 8));
  }
  cudaStream_t stream;
  CHECK_CUDA(cudaStreamCreate(&stream));
  gpu::StageTimer timer;
  gpu::Workspace ws{};
  auto sync = [&]() -> absl::Status {
    CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    return absl::OkStatus();
  };
  // The host-built code first, so the archives decompressed below are the
  // device-built ones (the same bytes: GpuCodec.BatchOfArraysMatchesOneByOne
  // and BatchWithHostBuiltCodesMatchesOneByOne hold both to the CPU's).
  gpu::Workspace host_ws{};
  const BatchTimes hc = TimeBatch(
      reps, timer, host_ws,
      [&] { return gpu::CompressWorkspaceSize(tasks, gpu::CodeBuilder::kHost); },
      [&] { return gpu::CompressBatch(tasks, host_ws, stream, &timer, gpu::CodeBuilder::kHost); },
      sync);
  cudaFree(host_ws.device);
  cudaFreeHost(host_ws.host);
  const BatchTimes c = TimeBatch(
      reps, timer, ws, [&] { return gpu::CompressWorkspaceSize(tasks); },
      [&] { return gpu::CompressBatch(tasks, ws, stream, &timer); }, sync);
  std::printf("\nsmall batch, codec %s: %d x float32 [%llu x %llu] (%.0f KiB each), REL 1e-4\n",
              codec.c_str(), count,
              static_cast<unsigned long long>(rows), static_cast<unsigned long long>(nx),
              spec.num_bytes() / 1024.0);
  std::printf(
      "  compress host: workspace query %.3f ms, CompressBatch call %.3f ms, "
      "then waiting %.3f ms\n",
      c.query_ms, c.call_ms, c.finish_ms);
  PrintStages(c.stages);
  std::printf(
      "  compress, code on the host: workspace query %.3f ms, CompressBatch call %.3f ms, "
      "then waiting %.3f ms\n",
      hc.query_ms, hc.call_ms, hc.finish_ms);
  PrintStages(hc.stages);

  // Decompress the same archives as one batch.
  std::vector<std::vector<uint8_t>> host(count);
  std::vector<ArchiveInfo> infos;
  std::vector<void*> outputs(count);
  for (int i = 0; i < count; ++i) {
    uint64_t n = 0;
    CHECK_CUDA(cudaMemcpy(&n, tasks[i].archive_size, 8, cudaMemcpyDeviceToHost));
    host[i].resize(n);
    CHECK_CUDA(cudaMemcpy(host[i].data(), tasks[i].archive, n, cudaMemcpyDeviceToHost));
    auto info = ReadArchiveInfo(host[i]);
    CHECK_OK(info.status());
    infos.push_back(*info);
    CHECK_CUDA(cudaMalloc(&outputs[i], spec.num_bytes()));
  }
  std::vector<gpu::DecompressTask> dtasks;
  for (int i = 0; i < count; ++i) dtasks.push_back({&infos[i], tasks[i].archive, outputs[i]});
  gpu::Workspace dws{};
  const BatchTimes d = TimeBatch(
      reps, timer, dws, [&] { return gpu::DecompressWorkspaceSize(dtasks, DecoderKind::kAuto); },
      [&] { return gpu::DecompressBatch(dtasks, DecoderKind::kAuto, dws, stream, &timer); },
      [&] { return gpu::FinishDecompress(dws, stream); });
  std::printf(
      "  decompress host: workspace query %.3f ms, DecompressBatch call %.3f ms, "
      "FinishDecompress %.3f ms\n",
      d.query_ms, d.call_ms, d.finish_ms);
  PrintStages(d.stages);
  for (int i = 0; i < count; ++i) {
    cudaFree(tasks[i].archive);
    cudaFree(tasks[i].archive_size);
    cudaFree(outputs[i]);
  }
  cudaFree(ws.device);
  cudaFreeHost(ws.host);
  cudaFree(dws.device);
  cudaFreeHost(dws.host);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace ebzip

int main(int argc, char** argv) {
  using namespace ebzip;
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a long run shows its progress
  bool quick = false;
  bool small_batch = false;  // only the small-batch tables
  int reps = 0;              // 0: the default for --quick or not
  int split = 1;             // > 1: also the frames as frame tasks in this many batches
  std::vector<std::string> real, codecs;
  std::vector<double> rels;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    if (a.rfind("--codec=", 0) == 0) {
      codecs.push_back(a.substr(8));
      if (!CodecOptions(codecs.back())) {
        std::fprintf(stderr, "--codec takes v1, auto, auto-runs, auto-values, lorenzo or interp\n");
        return 2;
      }
    }
    if (a.rfind("--field=", 0) == 0) real.push_back(a.substr(8));
    if (a.rfind("--rel=", 0) == 0) {
      char* end = nullptr;
      rels.push_back(std::strtod(a.c_str() + 6, &end));
      if (*end != '\0' || !(rels.back() > 0 && rels.back() < 1)) {
        std::fprintf(stderr, "--rel takes a bound between 0 and 1\n");
        return 2;
      }
    }
    if (a == "--small_batch") small_batch = true;
    if (a.rfind("--split=", 0) == 0) {
      split = std::atoi(a.c_str() + 8);
      if (split < 1 || split > 64) {
        std::fprintf(stderr, "--split takes 1 to 64\n");
        return 2;
      }
    }
    if (a.rfind("--reps=", 0) == 0) {
      reps = std::atoi(a.c_str() + 7);
      if (reps < 1 || reps > 100) {
        std::fprintf(stderr, "--reps takes 1 to 100\n");
        return 2;
      }
    }
  }
  auto desc = gpu::DeviceDescription(0);
  CHECK_OK(desc.status());
  std::printf("ebzip_bench_gpu on %s\n", desc->c_str());
  std::vector<Field> fields;
  {
    const uint64_t nz = quick ? 128 : 512, ny = 512, nx = 1024;  // 1 GiB float32
    Field f{"smooth3d", {DType::kFloat32, {nz, ny, nx}}, nullptr, std::nullopt};
    CHECK_CUDA(cudaMalloc(&f.device, f.spec.num_bytes()));
    ebzip::SmoothField<<<4096, 256>>>(static_cast<float*>(f.device), nz, ny, nx);
    CHECK_CUDA(cudaDeviceSynchronize());
    fields.push_back(f);
  }
  for (const std::string& name : real) {
    auto loaded = LoadArraySource(name);
    CHECK_OK(loaded.status());
    if (loaded->spec.dtype != DType::kFloat32) continue;
    const uint64_t target = quick ? (64ull << 20) : (256ull << 20);
    const uint64_t copies = (target + loaded->data.size() - 1) / loaded->data.size();
    Field f{name + " x" + std::to_string(copies), loaded->spec, nullptr, loaded->fill_value};
    f.spec.shape[0] *= copies;
    CHECK_CUDA(cudaMalloc(&f.device, f.spec.num_bytes()));
    for (uint64_t c = 0; c < copies; ++c) {
      CHECK_CUDA(cudaMemcpy(static_cast<uint8_t*>(f.device) + c * loaded->data.size(),
                            loaded->data.data(), loaded->data.size(), cudaMemcpyHostToDevice));
    }
    fields.push_back(f);
  }
  void* scratch;
  const size_t copy_bytes = 1ull << 30;
  CHECK_CUDA(cudaMalloc(&scratch, 2 * copy_bytes));
  const double bw = CopyBandwidth(scratch, static_cast<uint8_t*>(scratch) + copy_bytes, copy_bytes);
  cudaFree(scratch);
  std::printf("device-to-device copy: %.0f GB/s (read + write); floor = (input + archive) / that\n",
              bw / 1e9);
  std::printf(
      "reference, cuSZ on the same H100 and 1 GiB field at REL 1e-4: compress 280 GB/s "
      "(kernels only), decompress 136 GB/s, Huffman decode 78 GB/s\n");
  if (small_batch) {
    // 256 KiB arrays (64 rows of the field's 1024), as the service batches
    // them (5 to 7 per batch at 32 streams), and larger batches.
    // Version 1 unless --codec names others (version 2 chooses per frame).
    for (const std::string& codec : codecs.empty() ? std::vector<std::string>{"v1"} : codecs) {
      for (int count : {1, 8, 32}) RunSmallBatch(fields.front(), count, 64, 9, codec);
    }
    return 0;
  }
  if (codecs.empty()) codecs = {"v1", "auto"};
  if (rels.empty()) rels = {1e-2, 1e-3, 1e-4, 1e-5};
  for (const Field& f : fields) {
    for (double rel : rels) {
      for (const std::string& codec : codecs) {
        Run(f, rel, bw, reps > 0 ? reps : quick ? 2 : 5, codec, split);
      }
    }
  }
  return 0;
}
