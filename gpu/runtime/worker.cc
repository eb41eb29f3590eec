#include "gpu/runtime/worker.h"

namespace ebzip::gpu::runtime {
namespace {

// The codec's calls say INTERNAL for a CUDA error (cuda_status.h): the
// device is lost. Anything else is a refusal of the work, which the CPU
// codec then runs.
RunResult FromCodec(absl::Status s) {
  if (s.ok()) return RunResult::Ran();
  if (s.code() == absl::StatusCode::kInternal) return RunResult::DeviceLost(std::move(s));
  return RunResult::Unsupported(std::move(s));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Worker>> Worker::Create(const Device& device, PoolSlice pool,
                                                       uint64_t pinned_bytes) {
  if (RunResult r = device.MakeCurrent(); !r.ran()) return r.why();
  std::unique_ptr<Worker> w(new Worker(device, pool));
  auto stream = CudaStream::Create();
  if (!stream.ok()) return stream.status();
  w->stream_ = *std::move(stream);
  auto pinned = PinnedBuffer::Allocate(pinned_bytes);
  if (!pinned.ok()) return pinned.status();
  w->pinned_ = *std::move(pinned);
  return w;
}

Workspace Worker::PlaceWorkspace(PoolCarver& pool, const WorkspaceSize& size) const {
  Workspace ws;
  ws.device = pool.Take(size.device_bytes);
  ws.device_bytes = size.device_bytes;
  ws.host = pinned_.data();
  ws.host_bytes = size.host_bytes;
  return ws;
}

uint64_t Worker::CompressBufferBytes(const CompressTask& task) {
  return AlignUp(task.spec.num_bytes()) + AlignUp(task.capacity) + AlignUp(sizeof(uint64_t));
}

bool Worker::CompressFits(uint64_t buffer_bytes, const WorkspaceSize& workspace,
                          size_t tasks) const {
  return buffer_bytes + AlignUp(workspace.device_bytes) <= pool_bytes() &&
         AlignUp(workspace.host_bytes) + sizeof(uint64_t) * tasks <= pinned_bytes();
}

Worker::CompressRound Worker::Compress(absl::Span<const CompressJob> jobs,
                                       const WorkspaceSize& workspace,
                                       absl::FunctionRef<bool(size_t, uint64_t)> admit) {
  CompressRound round;
  PoolCarver pool(pool_);
  std::vector<CompressTask> tasks;
  for (const CompressJob& j : jobs) tasks.push_back(j.task);
  // Inputs in ordinary memory side by side in the pool (one staged DMA for
  // them all), then those in page-locked memory (a DMA each): a pinned
  // input's place inside the staged span would be overwritten by it.
  std::vector<UploadPiece> inputs;
  for (const bool pinned : {false, true}) {
    for (size_t i = 0; i < tasks.size(); ++i) {
      if (jobs[i].input_pinned != pinned) continue;
      uint8_t* input = pool.Take(tasks[i].spec.num_bytes());
      tasks[i].input = input;
      inputs.push_back({jobs[i].input.data(), input, jobs[i].input.size(), pinned});
    }
  }
  for (CompressTask& t : tasks) {
    t.archive = pool.Take(t.capacity);
    t.archive_size = reinterpret_cast<uint64_t*>(pool.Take(sizeof(uint64_t)));
  }
  const Workspace ws = PlaceWorkspace(pool, workspace);
  // Pinned memory: the codec's part, the archive sizes, then staging.
  auto* sizes = reinterpret_cast<uint64_t*>(pinned_.data() + AlignUp(ws.host_bytes));
  uint8_t* staging = reinterpret_cast<uint8_t*>(sizes) + AlignUp(sizeof(uint64_t) * tasks.size());
  const absl::Span<uint8_t> room(staging, pinned_.bytes() - (staging - pinned_.data()));
  if (RunResult r = StagedUpload(stream_, inputs, room); !r.ran()) {
    round.result = std::move(r);
    return round;
  }
  if (RunResult r = FromCodec(CompressBatch(tasks, ws, stream_.get())); !r.ran()) {
    round.result = std::move(r);
    return round;
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (RunResult r = stream_.CopyToHost(sizes + i, tasks[i].archive_size, sizeof(uint64_t));
        !r.ran()) {
      round.result = std::move(r);
      return round;
    }
  }
  // The inputs are up: staging is free.
  if (RunResult r = stream_.Synchronize(); !r.ran()) {
    round.result = std::move(r);
    return round;
  }
  std::vector<StagedDownload::Source> outputs;
  std::vector<size_t> admitted;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (!admit(i, sizes[i])) continue;
    outputs.push_back({tasks[i].archive, sizes[i]});
    admitted.push_back(i);
  }
  StagedDownload download;
  if (RunResult r = download.Start(stream_, std::move(outputs), room); !r.ran()) {
    round.result = std::move(r);
    return round;
  }
  if (RunResult r = stream_.Synchronize(); !r.ran()) {
    round.result = std::move(r);
    return round;
  }
  std::vector<std::vector<uint8_t>> archives = download.Finish();
  round.archives.resize(jobs.size());
  for (size_t k = 0; k < admitted.size(); ++k) round.archives[admitted[k]] = std::move(archives[k]);
  return round;
}

uint64_t Worker::DecompressBufferBytes(uint64_t archive_bytes, uint64_t array_bytes,
                                       uint64_t region_bytes) {
  return AlignUp(archive_bytes) + AlignUp(array_bytes) + AlignUp(region_bytes);
}

bool Worker::DecompressFits(uint64_t buffer_bytes, const WorkspaceSize& workspace) const {
  return buffer_bytes + AlignUp(workspace.device_bytes) <= pool_bytes() &&
         AlignUp(workspace.host_bytes) <= pinned_bytes();
}

Worker::DecompressRound Worker::Decompress(absl::Span<const DecompressJob> jobs,
                                           const WorkspaceSize& workspace,
                                           StagedDownload::Destination destination) {
  DecompressRound round;
  PoolCarver pool(pool_);
  std::vector<DecompressTask> tasks(jobs.size());
  std::vector<UploadPiece> inputs;  // side by side in the pool: one DMA when staged
  for (size_t i = 0; i < jobs.size(); ++i) {
    uint8_t* archive = pool.Take(jobs[i].archive.size());
    tasks[i].info = jobs[i].info;
    tasks[i].archive = archive;
    inputs.push_back({jobs[i].archive.data(), archive, jobs[i].archive.size()});
  }
  std::vector<uint8_t*> regions(jobs.size(), nullptr);
  std::vector<Hyperslab> wanted(jobs.size());  // a region's rows: only their tiles are rebuilt
  for (size_t i = 0; i < jobs.size(); ++i) {
    tasks[i].output = pool.Take(jobs[i].info->spec().num_bytes());
    if (jobs[i].region()) {
      regions[i] = pool.Take(jobs[i].region_bytes);
      wanted[i] = PiecesBox(jobs[i].pieces);
      tasks[i].wanted = &wanted[i];
    }
  }
  const Workspace ws = PlaceWorkspace(pool, workspace);
  // Pinned memory: the codec's part, then staging.
  const absl::Span<uint8_t> room(pinned_.data() + AlignUp(ws.host_bytes),
                                 pinned_.bytes() - AlignUp(ws.host_bytes));
  if (RunResult r = StagedUpload(stream_, inputs, room); !r.ran()) {
    round.result = std::move(r);
    return round;
  }
  if (RunResult r = FromCodec(DecompressBatch(tasks, DecoderKind::kAuto, ws, stream_.get()));
      !r.ran()) {
    round.result = std::move(r);
    return round;
  }
  // The arrays come down behind the kernels, before the wait for the
  // device's verdict, which then covers both (the uploads before them on the
  // stream have left staging by then).
  std::vector<StagedDownload::Source> outputs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!jobs[i].region()) {
      outputs.push_back({static_cast<const uint8_t*>(tasks[i].output),
                         jobs[i].info->spec().num_bytes()});
      continue;
    }
    const ArraySpec rows = jobs[i].info->spec();
    const size_t elem = DTypeSize(rows.dtype);
    for (const WholeFramesPlan::Piece& piece : jobs[i].pieces) {
      if (RunResult r = FromCodec(GatherRegion(tasks[i].output, rows, piece.rows,
                                               regions[i] + piece.out_element * elem,
                                               stream_.get()));
          !r.ran()) {
        round.result = std::move(r);
        return round;
      }
    }
    outputs.push_back({regions[i], jobs[i].region_bytes});
  }
  StagedDownload download;
  if (RunResult r = download.Start(stream_, std::move(outputs), room, destination); !r.ran()) {
    round.result = std::move(r);
    round.destinations_in_flight = !download.Abort();
    return round;
  }
  absl::Status found = FinishDecompress(ws, stream_.get());
  if (!found.ok()) {
    // DATA_LOSS: the device reports the batch's first inconsistency, not
    // whose it is; the CPU codec sorts out which archive is corrupt.
    round.result = found.code() == absl::StatusCode::kDataLoss
                       ? RunResult::Unsupported(std::move(found))
                       : RunResult::DeviceLost(std::move(found));
    round.destinations_in_flight = !download.Abort();
    return round;
  }
  round.arrays = download.Finish();
  return round;
}

}  // namespace ebzip::gpu::runtime
