// One frame of an array on the GPU (CompressTask::first_row,
// codec/frame_task.h): every frame's bytes equal the CPU codec's
// CompressFrame and, between ArchiveWriter's file header and index, make the
// CPU's archive of the whole array; frames of several arrays and whole
// arrays share one batch; frames received alone decode on the GPU to their
// rows (FramePart). Skips where no CUDA device is visible.
#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "codec/archive.h"
#include "codec/frame_task.h"
#include "gpu/gpu_codec.h"
#include "gtest/gtest.h"
#include "tests/gpu/gpu_test_fields.h"

namespace ebzip::gpu {
namespace {

using testing_fields::MakeAnyField;

struct CudaFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DevicePtr = std::unique_ptr<void, CudaFree>;

DevicePtr Alloc(size_t bytes) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(bytes, 1)), cudaSuccess);
  return DevicePtr(p);
}

DevicePtr Upload(absl::Span<const uint8_t> bytes) {
  DevicePtr p = Alloc(bytes.size());
  EXPECT_EQ(cudaMemcpy(p.get(), bytes.data(), bytes.size(), cudaMemcpyHostToDevice), cudaSuccess);
  return p;
}

std::vector<uint8_t> Download(const void* from, size_t bytes) {
  std::vector<uint8_t> out(bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), from, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

struct Case {
  const char* name;
  ArraySpec spec;
  CompressOptions options;  // frame_elements small enough for several frames
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  CompressOptions abs;
  abs.bound = 1e-2;
  abs.fill_value = -9999;
  CompressOptions v1 = abs;
  v1.predictor = Predictor::kLorenzo;
  v1.lossless = Lossless::kHuffman;
  CompressOptions rel;
  rel.mode = BoundMode::kRel;
  rel.bound = 1e-4;  // its range is set from the data
  CompressOptions interp = rel;
  interp.predictor = Predictor::kInterp;
  interp.fill_value = -9999;
  abs.frame_elements = 12 * 40 * 50;
  v1.frame_elements = 12 * 40 * 50;
  rel.frame_elements = 100 * 300;
  interp.frame_elements = 8 * 40 * 50;
  cases.push_back({"version 2, ABS, fill", {DType::kFloat32, {61, 40, 50}}, abs});
  cases.push_back({"version 1, ABS, fill", {DType::kFloat32, {61, 40, 50}}, v1});
  cases.push_back({"version 2, REL with range", {DType::kFloat64, {1003, 300}}, rel});
  cases.push_back({"interpolation, REL, fill", {DType::kFloat32, {37, 40, 50}}, interp});
  return cases;
}

TEST(GpuFrameTask, FramesOfArraysInOneBatchAreTheCpuFrames) {
  SKIP_WITHOUT_GPU();
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<uint8_t> data =
        MakeAnyField(c.spec.dtype, c.spec.num_elements(), 7, true, c.options.fill_value);
    CompressOptions options = c.options;
    if (options.mode == BoundMode::kRel) {
      options.range = FiniteRange(c.spec, data, options.fill_value);
    }
    auto whole = Compress(c.spec, data, options);
    ASSERT_TRUE(whole.ok()) << whole.status();
    auto plan =
        PlanArchive(c.spec, options, ResolveBound(options, c.spec.dtype, RangeFor(c.spec, data, options)));
    ASSERT_TRUE(plan.ok());
    const uint64_t frames = plan->frame_count();
    ASSERT_GE(frames, 3u);

    // Every frame a task, and the whole array too, in one batch.
    std::vector<CompressTask> tasks;
    std::vector<DevicePtr> inputs, outputs;
    DevicePtr sizes = Alloc(8 * (frames + 1));
    std::vector<std::vector<uint8_t>> expected;
    for (uint64_t i = 0; i <= frames; ++i) {
      CompressTask t;
      absl::Span<const uint8_t> rows(data);
      if (i < frames) {
        auto task = FrameTaskOf(*plan, options, i);
        ASSERT_TRUE(task.ok()) << task.status();
        rows = rows.subspan(plan->FrameDataOffset(i), plan->FrameDataBytes(i));
        auto cpu = CompressFrame(*task, rows);
        ASSERT_TRUE(cpu.ok()) << cpu.status();
        expected.push_back(*std::move(cpu));
        t.spec = task->spec;
        t.options = task->options;
        t.first_row = task->first_row;
      } else {
        expected.push_back(*whole);
        t.spec = c.spec;
        t.options = options;
      }
      inputs.push_back(Upload(rows));
      t.input = inputs.back().get();
      t.capacity = MaxArchiveBytes(t.spec, t.options);
      outputs.push_back(Alloc(t.capacity));
      t.archive = static_cast<uint8_t*>(outputs.back().get());
      t.archive_size = static_cast<uint64_t*>(sizes.get()) + i;
      tasks.push_back(t);
    }
    auto need = CompressWorkspaceSize(tasks);
    ASSERT_TRUE(need.ok()) << need.status();
    DevicePtr device = Alloc(need->device_bytes);
    void* host = nullptr;
    ASSERT_EQ(cudaMallocHost(&host, std::max<size_t>(need->host_bytes, 1)), cudaSuccess);
    const Workspace ws{device.get(), need->device_bytes, host, need->host_bytes};
    ASSERT_TRUE(CompressBatch(tasks, ws, nullptr).ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    cudaFreeHost(host);
    const std::vector<uint8_t> got_sizes = Download(sizes.get(), 8 * (frames + 1));
    const auto* size_of = reinterpret_cast<const uint64_t*>(got_sizes.data());

    ArchiveWriter writer(*plan);
    std::vector<uint8_t> spliced = writer.Begin();
    for (uint64_t i = 0; i <= frames; ++i) {
      ASSERT_EQ(size_of[i], expected[i].size()) << "task " << i;
      const std::vector<uint8_t> got = Download(outputs[i].get(), size_of[i]);
      EXPECT_TRUE(got == expected[i]) << "task " << i << " of " << frames << " frames";
      if (i < frames) {
        writer.AddFrame(got.size());
        spliced.insert(spliced.end(), got.begin(), got.end());
      }
    }
    writer.Finish(&spliced);
    EXPECT_TRUE(spliced == *whole);
  }
}

TEST(GpuFrameTask, FramesReceivedAloneDecodeOnTheGpu) {
  SKIP_WITHOUT_GPU();
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<uint8_t> data =
        MakeAnyField(c.spec.dtype, c.spec.num_elements(), 11, true, c.options.fill_value);
    auto archive = Compress(c.spec, data, c.options);
    ASSERT_TRUE(archive.ok());
    auto info = ReadArchiveInfo(*archive);
    auto reference = Decompress(*archive);
    ASSERT_TRUE(info.ok() && reference.ok());
    const uint64_t row_bytes = c.spec.num_bytes() / c.spec.shape[0];
    // Each frame's bytes alone on the device, all decoded in one batch.
    std::vector<ArchiveInfo> parts;
    parts.reserve(info->frames.size());
    std::vector<DevicePtr> frames, outputs;
    std::vector<DecompressTask> tasks;
    for (uint64_t i = 0; i < info->frames.size(); ++i) {
      const auto& e = info->frames[i];
      const absl::Span<const uint8_t> frame(archive->data() + e.offset, e.size);
      auto part = FramePart(info->header, i, frame);
      ASSERT_TRUE(part.ok()) << part.status();
      parts.push_back(*std::move(part));
      frames.push_back(Upload(frame));
      outputs.push_back(Alloc(info->FrameRows(i) * row_bytes));
      tasks.push_back(
          {&parts.back(), static_cast<const uint8_t*>(frames.back().get()), outputs.back().get()});
    }
    auto need = DecompressWorkspaceSize(tasks, DecoderKind::kAuto);
    ASSERT_TRUE(need.ok()) << need.status();
    DevicePtr device = Alloc(need->device_bytes);
    void* host = nullptr;
    ASSERT_EQ(cudaMallocHost(&host, std::max<size_t>(need->host_bytes, 1)), cudaSuccess);
    const Workspace ws{device.get(), need->device_bytes, host, need->host_bytes};
    ASSERT_TRUE(DecompressBatch(tasks, DecoderKind::kAuto, ws, nullptr).ok());
    ASSERT_TRUE(FinishDecompress(ws, nullptr).ok());
    cudaFreeHost(host);
    for (uint64_t i = 0; i < info->frames.size(); ++i) {
      const std::vector<uint8_t> rows = Download(outputs[i].get(), info->FrameRows(i) * row_bytes);
      const uint64_t at = i * info->header.frame_rows * row_bytes;
      EXPECT_EQ(0, std::memcmp(rows.data(), reference->data.data() + at, rows.size()))
          << "frame " << i;
    }
  }
}

TEST(GpuFrameTask, ATaskOfSeveralFramesOrWithoutItsRangeIsRefused) {
  SKIP_WITHOUT_GPU();
  CompressTask t;
  t.spec = {DType::kFloat32, {64, 64}};
  t.options.bound = 1e-3;
  t.options.frame_elements = 16 * 64;  // four frames: not a FrameTask's options
  t.first_row = 64;
  EXPECT_EQ(CompressWorkspaceSize({&t, 1}).status().code(), absl::StatusCode::kInvalidArgument);
  // One frame, but a relative bound without the array's range.
  t.options.frame_elements = 64 * 64;
  t.options.mode = BoundMode::kRel;
  EXPECT_EQ(CompressWorkspaceSize({&t, 1}).status().code(), absl::StatusCode::kInvalidArgument);
  t.options.range = ValueRange{true, -1, 1};
  EXPECT_TRUE(CompressWorkspaceSize({&t, 1}).ok());
}

}  // namespace
}  // namespace ebzip::gpu
