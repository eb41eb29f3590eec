// libFuzzer target for the metadata document's reader
// (client/io/variable_metadata.h), which reads whatever JSON an archive's
// metadata block holds. Beyond "no crash, no sanitizer report, memory
// bounded" it checks the reader's contract: a document is accepted or
// INVALID_ARGUMENT, and what it accepts, written again and read back, gives
// the same metadata (coordinate values bit for bit, whichever form the
// writer picks), so that the regular form's start, step and count can never
// stand for other values than the ones read.
#include <bit>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "client/io/variable_metadata.h"

namespace {

[[noreturn]] void Fail(const char* what, const absl::Status& status = absl::OkStatus()) {
  std::fprintf(stderr, "metadata_fuzzer: %s (%s)\n", what, status.ToString().c_str());
  std::abort();
}

bool SameBits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<uint64_t>(a[i]) != std::bit_cast<uint64_t>(b[i])) return false;
  }
  return true;
}

bool SameAttributes(const std::vector<ebzip::Attribute>& a,
                    const std::vector<ebzip::Attribute>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].name != b[i].name || a[i].type != b[i].type || a[i].text != b[i].text ||
        a[i].strings != b[i].strings || !SameBits(a[i].numbers, b[i].numbers)) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view doc(reinterpret_cast<const char*>(data), size);
  const absl::StatusOr<ebzip::VariableMetadata> read = ebzip::ParseVariableMetadata(doc);
  if (!read.ok()) {
    if (read.status().code() != absl::StatusCode::kInvalidArgument) {
      Fail("a rejection that is not INVALID_ARGUMENT", read.status());
    }
    return 0;
  }
  const std::string again = ebzip::VariableMetadataToJson(*read);
  const absl::StatusOr<ebzip::VariableMetadata> back = ebzip::ParseVariableMetadata(again);
  if (!back.ok()) Fail("its own document is refused", back.status());
  const ebzip::VariableMetadata& a = *read;
  const ebzip::VariableMetadata& b = *back;
  // An empty group is not written, "/" neither (the root).
  const bool same_group =
      a.group == b.group || ((a.group.empty() || a.group == "/") && b.group.empty());
  if (a.name != b.name || !same_group || a.type != b.type || a.dimensions != b.dimensions ||
      !SameAttributes(a.attributes, b.attributes) ||
      !SameAttributes(a.global_attributes, b.global_attributes) ||
      a.coordinates.size() != b.coordinates.size()) {
    Fail("the document written again reads back differently");
  }
  for (size_t i = 0; i < a.coordinates.size(); ++i) {
    const ebzip::CoordinateVariable& x = a.coordinates[i];
    const ebzip::CoordinateVariable& y = b.coordinates[i];
    if (x.name != y.name || x.type != y.type || !SameBits(x.values, y.values) ||
        !SameAttributes(x.attributes, y.attributes)) {
      Fail("a coordinate written again reads back differently");
    }
  }
  (void)ebzip::FittingMetadataDocument(a);
  return 0;
}
