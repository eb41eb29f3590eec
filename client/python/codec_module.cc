// ebzip._ebzip: the CPU codec (codec/archive.h) inside a Python process.
//
// A thin layer: ebzip/local.py checks and normalizes arguments (dtype,
// masked arrays, defaults) and this file only moves buffers and options into
// the codec's public API. Arrays are read and written through the buffer
// protocol where they lie (no copy), the GIL is released while the codec
// runs, and a failed absl::Status becomes a Python exception: ValueError for
// INVALID_ARGUMENT, else StatusError(code name, message), which local.py
// maps to the ebzip.Error subclass of that code (DataLoss for a corrupt
// archive).
//
// The remote client (ebzip/client.py) splits one array or archive over
// several calls by whole frames; plan, value_range, split_frames,
// Plan.assemble and part_archive give it codec/archive_parts.h, so that the
// format's rules (frame layout, headers, CRCs) stay in the codec.
// GCC 12 reports null dereferences inside pybind11's inlined internals
// (its type registry's std::unordered_map), not in this file's code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wnull-dereference"
#endif

#include <Python.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#ifdef EBZIP_HAVE_GPU
#include "gpu/runtime/host_codec.h"
#endif
#include "codec/archive.h"
#include "codec/archive_parts.h"
#include "codec/region.h"

namespace py = pybind11;

// Buffers are taken as the archive's little-endian elements as they lie.
static_assert(std::endian::native == std::endian::little, "ebzip supports little-endian hosts");

namespace ebzip::python {
namespace {

// A failed codec call, carried to the exception translator.
struct StatusException {
  absl::Status status;
};

[[noreturn]] void Throw(const absl::Status& s) {
  if (s.code() == absl::StatusCode::kInvalidArgument) {
    throw std::invalid_argument(std::string(s.message()));  // ValueError
  }
  throw StatusException{s};
}

// A Py_buffer held for the lifetime of the object: C-contiguous (CPython
// raises BufferError otherwise), and writable when asked for.
class Buffer {
 public:
  Buffer(py::handle obj, bool writable) {
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (writable) flags |= PyBUF_WRITABLE;
    if (PyObject_GetBuffer(obj.ptr(), &view_, flags) != 0) throw py::error_already_set();
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { PyBuffer_Release(&view_); }

  absl::Span<const uint8_t> bytes() const {
    return {static_cast<const uint8_t*>(view_.buf), static_cast<size_t>(view_.len)};
  }
  absl::Span<uint8_t> mutable_bytes() {
    return {static_cast<uint8_t*>(view_.buf), static_cast<size_t>(view_.len)};
  }

  // float32 or float64 in this machine's (little-endian) byte order, from
  // the buffer's struct format ("f", "<f", "=d", ...).
  DType FloatDType() const {
    std::string format = view_.format != nullptr ? view_.format : "B";
    if (format.size() == 2 && (format[0] == '<' || format[0] == '=' || format[0] == '@')) {
      format.erase(0, 1);
    }
    if (format == "f" && view_.itemsize == 4) return DType::kFloat32;
    if (format == "d" && view_.itemsize == 8) return DType::kFloat64;
    throw std::invalid_argument(
        absl::StrCat("ebzip compresses little-endian float32 and float64 buffers, not format '",
                     view_.format != nullptr ? view_.format : "B", "'"));
  }

  std::vector<uint64_t> Shape() const {
    std::vector<uint64_t> shape;
    for (int i = 0; i < view_.ndim; ++i) shape.push_back(static_cast<uint64_t>(view_.shape[i]));
    return shape;
  }

 private:
  Py_buffer view_{};
};

Predictor PredictorFromName(const std::string& name) {
  if (name == "auto") return Predictor::kAuto;
  if (name == "lorenzo") return Predictor::kLorenzo;
  if (name == "interp") return Predictor::kInterp;
  throw std::invalid_argument(
      absl::StrCat("predictor must be 'auto', 'lorenzo' or 'interp', not '", name, "'"));
}

Lossless LosslessFromName(const std::string& name) {
  if (name == "auto") return Lossless::kAuto;
  if (name == "huffman") return Lossless::kHuffman;
  if (name == "runs") return Lossless::kZeroRuns;
  if (name == "run-values") return Lossless::kRunValues;
  throw std::invalid_argument(absl::StrCat(
      "lossless must be 'auto', 'huffman', 'runs' or 'run-values', not '", name, "'"));
}

DecoderKind DecoderFromName(const std::string& name) {
  if (name == "auto") return DecoderKind::kAuto;
  if (name == "chunk") return DecoderKind::kChunkParallel;
  if (name == "gap") return DecoderKind::kGapArray;
  if (name == "selfsync") return DecoderKind::kSelfSync;
  throw std::invalid_argument(
      absl::StrCat("decoder must be 'auto', 'chunk', 'gap' or 'selfsync', not '", name, "'"));
}

// Options left 0 (or None, or empty) keep the codec's defaults, which are
// the command line's and the service's: the archives agree byte for byte.
CompressOptions MakeOptions(const std::string& mode, double bound, std::optional<double> fill_value,
                            const std::string& predictor, const std::string& lossless,
                            int interp_order, uint64_t frame_elements, uint32_t radius,
                            uint32_t chunk_symbols, uint32_t subsequence_bits, uint32_t chunk_group,
                            std::optional<bool> gap_array, const std::vector<uint16_t>& block) {
  CompressOptions o;
  if (mode == "abs") {
    o.mode = BoundMode::kAbs;
  } else if (mode == "rel") {
    o.mode = BoundMode::kRel;
  } else {
    throw std::invalid_argument(absl::StrCat("mode must be 'abs' or 'rel', not '", mode, "'"));
  }
  o.bound = bound;
  o.fill_value = fill_value;
  o.predictor = PredictorFromName(predictor);
  o.lossless = LosslessFromName(lossless);
  o.interp_order = interp_order;
  if (frame_elements != 0) o.frame_elements = frame_elements;
  if (radius != 0) o.radius = radius;
  if (chunk_symbols != 0) o.chunk_symbols = chunk_symbols;
  if (subsequence_bits != 0) o.subsequence_bits = subsequence_bits;
  if (chunk_group != 0) o.chunk_group = chunk_group;
  if (gap_array.has_value()) o.gap_array = *gap_array;
  o.block = block;
  return o;
}

py::bytes Compress(py::handle array, const std::string& mode, double bound,
                   std::optional<double> fill_value, const std::string& predictor,
                   const std::string& lossless, int interp_order, uint64_t frame_elements,
                   uint32_t radius, uint32_t chunk_symbols, uint32_t subsequence_bits,
                   uint32_t chunk_group, std::optional<bool> gap_array,
                   const std::vector<uint16_t>& block, bool gpu) {
  Buffer in(array, /*writable=*/false);
  const ArraySpec spec{in.FloatDType(), in.Shape()};
  const CompressOptions o =
      MakeOptions(mode, bound, fill_value, predictor, lossless, interp_order, frame_elements,
                  radius, chunk_symbols, subsequence_bits, chunk_group, gap_array, block);
  if (auto s = ValidateArraySpec(spec); !s.ok()) Throw(s);
  absl::StatusOr<std::vector<uint8_t>> archive;
  {
    py::gil_scoped_release release;
#ifdef EBZIP_HAVE_GPU
    if (gpu) {
      archive = gpu::runtime::CompressOnGpu(spec, in.bytes(), o);
    } else {
      archive = ebzip::Compress(spec, in.bytes(), o);
    }
#else
    (void)gpu;  // no GPU codec in this build: the CPU one, the same bytes
    archive = ebzip::Compress(spec, in.bytes(), o);
#endif
  }
  if (!archive.ok()) Throw(archive.status());
  return py::bytes(reinterpret_cast<const char*>(archive->data()), archive->size());
}

py::bytes ToBytes(const std::vector<uint8_t>& v) {
  return py::bytes(reinterpret_cast<const char*>(v.data()), v.size());
}

DType DTypeFromName(const std::string& name) {
  if (name == "float32") return DType::kFloat32;
  if (name == "float64") return DType::kFloat64;
  throw std::invalid_argument(
      absl::StrCat("dtype must be 'float32' or 'float64', not '", name, "'"));
}

// (any, min, max) of a relative bound's range: the finite values of a
// C-contiguous float buffer that are not fill_value (codec/archive.h's
// FiniteRange, on the codec's threads, without the GIL).
py::tuple ValueRangeOf(py::handle array, std::optional<double> fill_value) {
  Buffer in(array, /*writable=*/false);
  const ArraySpec spec{in.FloatDType(), in.Shape()};
  if (auto s = ValidateArraySpec(spec); !s.ok()) Throw(s);
  ValueRange r;
  {
    py::gil_scoped_release release;
    r = FiniteRange(spec, in.bytes(), fill_value);
  }
  return py::make_tuple(r.any, r.min, r.max);
}

// An array's archive planned before any frame is compressed
// (codec/archive.h's ArchivePlan): what a client splitting the array over
// several calls needs to cut it into whole frames (codec/archive_parts.h)
// and to put the parts' archives back together.
class Plan {
 public:
  Plan(ArchivePlan plan, bool resolved) : plan_(std::move(plan)), resolved_(resolved) {}

  uint64_t frame_count() const { return plan_.frame_count(); }
  uint64_t frame_rows() const { return plan_.header.frame_rows; }
  uint64_t row_bytes() const { return plan_.row_bytes; }
  uint16_t version() const { return plan_.header.version; }
  // None while a relative bound has no range to resolve against.
  std::optional<double> abs_bound() const {
    return resolved_ ? std::optional<double>(plan_.header.abs_bound) : std::nullopt;
  }

  // (shape, byte offset) of frames [first, first + count)'s rows.
  py::tuple Part(uint64_t first, uint64_t count) const {
    const FrameRange range = CheckRange(first, count);
    const ArraySpec spec = PartSpec(plan_, range);
    py::tuple shape(spec.shape.size());
    for (size_t i = 0; i < spec.shape.size(); ++i) shape[i] = py::int_(spec.shape[i]);
    return py::make_tuple(shape, PartDataOffset(plan_, range));
  }

  // The whole array's archive from its parts' archives, in order
  // (ArchiveAssembler). A part that does not follow the plan is INTERNAL.
  py::bytes Assemble(const py::sequence& parts) const {
    if (!resolved_) {
      throw std::invalid_argument("a relative bound's plan needs value_range to assemble");
    }
    std::vector<std::unique_ptr<Buffer>> buffers;
    for (py::handle part : parts) buffers.push_back(std::make_unique<Buffer>(part, false));
    std::vector<uint8_t> out;
    absl::Status s;
    {
      py::gil_scoped_release release;
      ArchiveAssembler assembler(plan_);
      out = assembler.Begin();
      for (const auto& b : buffers) {
        s = assembler.AddPart(b->bytes(), &out);
        if (!s.ok()) break;
      }
      if (s.ok()) s = assembler.Finish(&out);
    }
    if (!s.ok()) Throw(s);
    return ToBytes(out);
  }

 private:
  FrameRange CheckRange(uint64_t first, uint64_t count) const {
    if (count == 0 || first > frame_count() || count > frame_count() - first) {
      throw std::invalid_argument(
          absl::StrCat("frames ", first, "+", count, " of a plan of ", frame_count()));
    }
    return {first, count};
  }

  ArchivePlan plan_;
  bool resolved_;
};

// Plans the archive of a dtype/shape array compressed with compress()'s
// options and metadata. A relative bound resolves against value_range
// ((any, min, max), value_range()'s); without one the plan gives the frame
// layout only (the bound does not change it).
Plan MakePlan(const std::string& dtype, const std::vector<uint64_t>& shape, const std::string& mode,
              double bound, std::optional<double> fill_value, const std::string& predictor,
              const std::string& lossless, int interp_order, uint64_t frame_elements,
              uint32_t radius, uint32_t chunk_symbols, uint32_t subsequence_bits,
              uint32_t chunk_group, std::optional<bool> gap_array,
              const std::vector<uint16_t>& block, const std::string& metadata,
              std::optional<std::tuple<bool, double, double>> value_range) {
  const ArraySpec spec{DTypeFromName(dtype), shape};
  if (auto s = ValidateArraySpec(spec); !s.ok()) Throw(s);
  CompressOptions o =
      MakeOptions(mode, bound, fill_value, predictor, lossless, interp_order, frame_elements,
                  radius, chunk_symbols, subsequence_bits, chunk_group, gap_array, block);
  o.metadata = metadata;
  bool resolved = true;
  ResolvedBound resolved_bound{1, 2};
  if (o.mode == BoundMode::kAbs) {
    resolved_bound = ResolveBound(o, spec.dtype, ValueRange());
  } else if (value_range.has_value()) {
    const auto& [any, min, max] = *value_range;
    resolved_bound = ResolveBound(o, spec.dtype, ValueRange{any, min, max});
  } else {
    resolved = false;
  }
  auto plan = PlanArchive(spec, o, resolved_bound);
  if (!plan.ok()) Throw(plan.status());
  return Plan(*std::move(plan), resolved);
}

// [(first, count), ...]: frames [0, frame_count) in `parts` ranges as
// equal as whole frames allow (codec/archive_parts.h's SplitFrames).
std::vector<std::pair<uint64_t, uint64_t>> SplitFramesOf(uint64_t frame_count, uint64_t parts) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (const FrameRange& r : SplitFrames(frame_count, parts)) out.emplace_back(r.first, r.count);
  return out;
}

absl::StatusOr<ArchiveInfo> ReadInfo(const Buffer& archive) {
  py::gil_scoped_release release;
  return ReadArchiveInfo(archive.bytes());
}

// What the header says, after the whole archive's structure is validated.
py::dict Info(py::handle data) {
  Buffer archive(data, /*writable=*/false);
  auto info = ReadInfo(archive);
  if (!info.ok()) Throw(info.status());
  const format::FileHeader& h = info->header;
  py::dict d;
  d["dtype"] = h.dtype == DType::kFloat32 ? "float32" : "float64";
  py::tuple shape(h.shape.size());
  for (size_t i = 0; i < h.shape.size(); ++i) shape[i] = py::int_(h.shape[i]);
  d["shape"] = shape;
  d["version"] = h.version;
  d["bound_mode"] = h.bound_mode == BoundMode::kAbs ? "abs" : "rel";
  d["bound_value"] = h.bound_value;
  d["abs_bound"] = h.abs_bound;
  d["fill_value"] = h.fill_value.has_value() ? py::object(py::float_(*h.fill_value)) : py::none();
  d["frame_count"] = h.frame_count;
  d["frame_rows"] = h.frame_rows;
  d["metadata"] = info->metadata;
  return d;
}

// A valid archive of frames [first, first + count) of an archive, whose
// array is those frames' rows (codec/archive_parts.h's PartArchive).
py::bytes PartArchiveOf(py::handle data, uint64_t first, uint64_t count) {
  Buffer archive(data, /*writable=*/false);
  auto info = ReadInfo(archive);
  if (!info.ok()) Throw(info.status());
  absl::StatusOr<std::vector<uint8_t>> part;
  {
    py::gil_scoped_release release;
    part = PartArchive(*info, archive.bytes(), FrameRange{first, count});
  }
  if (!part.ok()) Throw(part.status());
  return ToBytes(*part);
}

// Decodes the archive into out, a writable C-contiguous buffer of the
// archive's dtype and exactly its byte count (local.py checks the shape).
void DecompressInto(py::handle data, py::handle out, const std::string& decoder, bool gpu) {
  const DecoderKind kind = DecoderFromName(decoder);
  Buffer archive(data, /*writable=*/false);
  Buffer dest(out, /*writable=*/true);
  auto info = ReadInfo(archive);
  if (!info.ok()) Throw(info.status());
  if (dest.FloatDType() != info->header.dtype) {
    throw std::invalid_argument(absl::StrCat("out has dtype ", DTypeName(dest.FloatDType()),
                                             ", the archive holds ",
                                             DTypeName(info->header.dtype)));
  }
  absl::Status s;
  {
    py::gil_scoped_release release;
#ifdef EBZIP_HAVE_GPU
    if (gpu) {
      s = gpu::runtime::DecompressIntoOnGpu(*info, archive.bytes(), dest.mutable_bytes());
    } else {
      s = ebzip::DecompressInto(*info, archive.bytes(), dest.mutable_bytes(), kind);
    }
#else
    (void)gpu;
    s = ebzip::DecompressInto(*info, archive.bytes(), dest.mutable_bytes(), kind);
#endif
  }
  if (!s.ok()) Throw(s);
}

// Decodes the hyperslab (start, count, step per dimension; codec/region.h
// checks it) of the archive into out, a writable C-contiguous buffer of the
// archive's dtype and exactly the region's byte count. Only the frames the
// region meets are decoded.
void DecompressRegionInto(py::handle data, py::handle out, const std::vector<uint64_t>& start,
                          const std::vector<uint64_t>& count, const std::vector<uint64_t>& step,
                          const std::string& decoder) {
  const DecoderKind kind = DecoderFromName(decoder);
  Buffer archive(data, /*writable=*/false);
  Buffer dest(out, /*writable=*/true);
  auto info = ReadInfo(archive);
  if (!info.ok()) Throw(info.status());
  if (dest.FloatDType() != info->header.dtype) {
    throw std::invalid_argument(absl::StrCat("out has dtype ", DTypeName(dest.FloatDType()),
                                             ", the archive holds ",
                                             DTypeName(info->header.dtype)));
  }
  const Hyperslab region{start, count, step};
  absl::Status s;
  {
    py::gil_scoped_release release;
    s = DecompressRegion(*info, archive.bytes(), region, kind, dest.mutable_bytes());
  }
  if (!s.ok()) Throw(s);
}

}  // namespace
}  // namespace ebzip::python

PYBIND11_MODULE(_ebzip, m) {
  namespace ep = ebzip::python;
  m.doc() = "ebzip's CPU codec in process; use the ebzip package, not this module";
  m.attr("__version__") = EBZIP_VERSION;
  // Leaked on purpose: the type must outlive every module state, and a
  // static py::object would be destroyed after the interpreter.
  static py::handle status_error =
      py::exception<ep::StatusException>(m, "StatusError").release();
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ep::StatusException& e) {
      py::tuple args = py::make_tuple(absl::StatusCodeToString(e.status.code()),
                                      std::string(e.status.message()));
      PyErr_SetObject(status_error.ptr(), args.ptr());
    }
  });
  m.def("compress", &ep::Compress, py::arg("array"), py::kw_only(), py::arg("mode"),
        py::arg("bound"), py::arg("fill_value"), py::arg("predictor"), py::arg("lossless"),
        py::arg("interp_order"), py::arg("frame_elements"), py::arg("radius"),
        py::arg("chunk_symbols"), py::arg("subsequence_bits"), py::arg("chunk_group"),
        py::arg("gap_array"), py::arg("block"), py::arg("gpu") = false,
        "Compresses a C-contiguous float32/float64 buffer; returns the archive. gpu: on the "
        "GPU codec where a GPU is visible and the kernels take the options (the same bytes).");
  m.def(
      "gpu_available",
      [] {
#ifdef EBZIP_HAVE_GPU
        return ebzip::gpu::runtime::GpuVisible();
#else
        return false;
#endif
      },
      "Whether this build has the GPU codec and a GPU is visible.");
  m.def("info", &ep::Info, py::arg("archive"),
        "Validates an archive's structure and returns its header as a dict.");
  m.def("decompress_into", &ep::DecompressInto, py::arg("archive"), py::arg("out"),
        py::kw_only(), py::arg("decoder") = "auto", py::arg("gpu") = false,
        "Decodes an archive into a writable buffer of its dtype and size (gpu: as compress).");
  m.def("decompress_region_into", &ep::DecompressRegionInto, py::arg("archive"), py::arg("out"),
        py::arg("start"), py::arg("count"), py::arg("step"), py::kw_only(),
        py::arg("decoder") = "auto",
        "Decodes a hyperslab of an archive into a writable buffer of its dtype and size.");

  // What a client needs to split one array or archive over several calls
  // by whole frames and get the one-call archive back (ebzip/client.py).
  m.def("value_range", &ep::ValueRangeOf, py::arg("array"), py::kw_only(),
        py::arg("fill_value") = py::none(),
        "(any, min, max) of the finite values that are not fill_value: what a "
        "relative bound refers to.");
  py::class_<ep::Plan>(m, "Plan", "An array's archive, planned before any frame is compressed.")
      .def_property_readonly("frame_count", &ep::Plan::frame_count)
      .def_property_readonly("frame_rows", &ep::Plan::frame_rows,
                             "Rows of dimension 0 per frame (the last may have fewer).")
      .def_property_readonly("row_bytes", &ep::Plan::row_bytes)
      .def_property_readonly("version", &ep::Plan::version)
      .def_property_readonly("abs_bound", &ep::Plan::abs_bound,
                             "The absolute bound; None for a relative bound planned "
                             "without value_range.")
      .def("part", &ep::Plan::Part, py::arg("first_frame"), py::arg("count"),
           "(shape, byte offset) of the rows of frames [first_frame, first_frame + count).")
      .def("assemble", &ep::Plan::Assemble, py::arg("part_archives"),
           "The whole array's archive from the archives of its parts, in order, each "
           "compressed with the plan's options and value_range.");
  m.def("plan", &ep::MakePlan, py::arg("dtype"), py::arg("shape"), py::kw_only(), py::arg("mode"),
        py::arg("bound"), py::arg("fill_value"), py::arg("predictor"), py::arg("lossless"),
        py::arg("interp_order"), py::arg("frame_elements"), py::arg("radius"),
        py::arg("chunk_symbols"), py::arg("subsequence_bits"), py::arg("chunk_group"),
        py::arg("gap_array"), py::arg("block"), py::arg("metadata") = "",
        py::arg("value_range") = py::none(),
        "Plans the archive compress() would write for an array of dtype and shape; a "
        "relative bound resolves against value_range.");
  m.def("split_frames", &ep::SplitFramesOf, py::arg("frame_count"), py::arg("parts"),
        "[(first, count), ...]: the frames in at most `parts` ranges of whole frames.");
  m.def("part_archive", &ep::PartArchiveOf, py::arg("archive"), py::arg("first_frame"),
        py::arg("count"),
        "A valid archive of the archive's frames [first_frame, first_frame + count).");
}
