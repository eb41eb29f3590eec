#include "client/io/variable_metadata.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "codec/format.h"
#include "nlohmann/json.hpp"

namespace ebzip {
namespace {

// Ordered: the document lists attributes in the file's order, which is the
// order ncdump shows and the writer restores.
using Json = nlohmann::ordered_json;

Json Number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return v;
}

absl::StatusOr<double> NumberFrom(const Json& j, const std::string& where) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  return absl::InvalidArgumentError(absl::StrCat(where, ": expected a number, got ", j.dump()));
}

Json NumberArray(const std::vector<double>& values) {
  Json a = Json::array();
  for (double v : values) a.push_back(Number(v));
  return a;
}

absl::StatusOr<std::vector<double>> NumbersFrom(const Json& j, const std::string& where) {
  if (!j.is_array()) return absl::InvalidArgumentError(absl::StrCat(where, ": expected an array"));
  std::vector<double> out;
  out.reserve(j.size());
  for (const Json& v : j) {
    absl::StatusOr<double> d = NumberFrom(v, where);
    if (!d.ok()) return d.status();
    out.push_back(*d);
  }
  return out;
}

Json AttributesToJson(const std::vector<Attribute>& attributes) {
  Json object = Json::object();
  for (const Attribute& a : attributes) {
    Json value;
    if (a.type == "char") {
      value = a.text;
    } else if (a.type == "string") {
      value = a.strings;
    } else {
      value = NumberArray(a.numbers);
    }
    object[a.name] = {{"type", a.type}, {"value", std::move(value)}};
  }
  return object;
}

absl::StatusOr<std::vector<Attribute>> AttributesFrom(const Json& j, const std::string& where) {
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": expected an object"));
  }
  std::vector<Attribute> out;
  for (const auto& [name, entry] : j.items()) {
    const std::string at = absl::StrCat(where, ".", name);
    if (!entry.is_object() || !entry.contains("type") || !entry["type"].is_string() ||
        !entry.contains("value")) {
      return absl::InvalidArgumentError(
          absl::StrCat(at, ": expected {\"type\": ..., \"value\": ...}"));
    }
    Attribute a;
    a.name = name;
    a.type = entry["type"].get<std::string>();
    const Json& value = entry["value"];
    if (a.type == "char") {
      if (!value.is_string()) return absl::InvalidArgumentError(absl::StrCat(at, ": not text"));
      a.text = value.get<std::string>();
    } else if (a.type == "string") {
      if (!value.is_array()) return absl::InvalidArgumentError(absl::StrCat(at, ": not strings"));
      for (const Json& s : value) {
        if (!s.is_string()) return absl::InvalidArgumentError(absl::StrCat(at, ": not strings"));
        a.strings.push_back(s.get<std::string>());
      }
    } else {
      absl::StatusOr<std::vector<double>> numbers = NumbersFrom(value, at);
      if (!numbers.ok()) return numbers.status();
      a.numbers = *std::move(numbers);
    }
    out.push_back(std::move(a));
  }
  return out;
}

absl::StatusOr<std::string> StringFrom(const Json& doc, const char* key) {
  if (!doc.contains(key)) return std::string();
  if (!doc[key].is_string()) {
    return absl::InvalidArgumentError(absl::StrCat("metadata: \"", key, "\" is not a string"));
  }
  return doc[key].get<std::string>();
}

// A regular coordinate is stored as start, step and count, its values being
// start + i * step in binary64 (as a reader computes them) bit for bit:
// regular grids are the common case, and as a list of numbers each value
// took ~17 bytes (etopo5's two axes, 6,481 values: 112 KB of a 541 KB
// archive at REL 1e-2). The counts of a document's regular coordinates
// together are capped as lists are by the document's 1 MiB, to fewer than
// 2^19 values: a reader's memory stays bounded whatever the document says.
constexpr uint64_t kMaxRegularCount = format::kMaxMetadataDocument / 2;

double RegularValue(double start, double step, uint64_t i) {
  return start + static_cast<double>(i) * step;
}

// The step that gives `values` exactly, trying the span over the intervals
// and the first interval; none for fewer than 3 values.
std::optional<double> RegularStep(const std::vector<double>& values) {
  const size_t n = values.size();
  if (n < 3 || n > kMaxRegularCount || !std::isfinite(values[0])) return std::nullopt;
  for (double step : {(values[n - 1] - values[0]) / static_cast<double>(n - 1),
                      values[1] - values[0]}) {
    if (!std::isfinite(step)) continue;
    bool exact = true;
    for (size_t i = 0; exact && i < n; ++i) {
      exact = std::bit_cast<uint64_t>(RegularValue(values[0], step, i)) ==
              std::bit_cast<uint64_t>(values[i]);
    }
    if (exact) return step;
  }
  return std::nullopt;
}

Json CoordinateToJson(const CoordinateVariable& c) {
  Json entry = {{"type", c.type}};
  if (const std::optional<double> step = RegularStep(c.values)) {
    entry["start"] = c.values[0];
    entry["step"] = *step;
    entry["count"] = c.values.size();
  } else {
    entry["values"] = NumberArray(c.values);
  }
  entry["attributes"] = AttributesToJson(c.attributes);
  return entry;
}

// `left`: what the cap leaves to this coordinate, less its count after.
absl::StatusOr<std::vector<double>> CoordinateValuesFrom(const Json& entry,
                                                         const std::string& where,
                                                         uint64_t* left) {
  if (entry.contains("values")) return NumbersFrom(entry["values"], where);
  const Json* start = entry.contains("start") ? &entry["start"] : nullptr;
  const Json* step = entry.contains("step") ? &entry["step"] : nullptr;
  const Json* count = entry.contains("count") ? &entry["count"] : nullptr;
  if (start == nullptr || step == nullptr || count == nullptr || !start->is_number() ||
      !step->is_number() || !count->is_number_unsigned()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": expected \"values\": [...] or \"start\", \"step\" and \"count\""));
  }
  const uint64_t n = count->get<uint64_t>();
  if (n > *left) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": count ", n, " passes the ", kMaxRegularCount,
        " values a document's regular coordinates may hold together"));
  }
  *left -= n;
  const double first = start->get<double>(), delta = step->get<double>();
  std::vector<double> values(n);
  for (uint64_t i = 0; i < n; ++i) values[i] = RegularValue(first, delta, i);
  return values;
}

}  // namespace

std::string VariableMetadataToJson(const VariableMetadata& m) {
  Json doc = Json::object();
  doc["name"] = m.name;
  if (!m.group.empty() && m.group != "/") doc["group"] = m.group;
  if (!m.type.empty()) doc["type"] = m.type;
  doc["dimensions"] = m.dimensions;
  doc["attributes"] = AttributesToJson(m.attributes);
  if (!m.global_attributes.empty())
    doc["global_attributes"] = AttributesToJson(m.global_attributes);
  if (!m.coordinates.empty()) {
    Json coordinates = Json::object();
    for (const CoordinateVariable& c : m.coordinates) {
      coordinates[c.name] = CoordinateToJson(c);
    }
    doc["coordinates"] = std::move(coordinates);
  }
  // Invalid UTF-8 (a name from a file in another encoding) becomes U+FFFD
  // rather than failing the whole compression.
  return doc.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string FittingMetadataDocument(VariableMetadata metadata) {
  std::string doc = VariableMetadataToJson(metadata);
  if (doc.size() <= format::kMaxMetadataDocument) return doc;
  metadata.coordinates.clear();
  doc = VariableMetadataToJson(metadata);
  if (doc.size() <= format::kMaxMetadataDocument) return doc;
  metadata.global_attributes.clear();
  doc = VariableMetadataToJson(metadata);
  return doc.size() <= format::kMaxMetadataDocument ? doc : "";
}

absl::StatusOr<VariableMetadata> ParseVariableMetadata(std::string_view json) {
  Json doc = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError("metadata: not a JSON object");
  }
  VariableMetadata m;
  for (auto [key, field] : {std::pair{"name", &m.name}, {"group", &m.group}, {"type", &m.type}}) {
    absl::StatusOr<std::string> value = StringFrom(doc, key);
    if (!value.ok()) return value.status();
    *field = *std::move(value);
  }
  if (doc.contains("dimensions")) {
    const Json& dims = doc["dimensions"];
    if (!dims.is_array()) return absl::InvalidArgumentError("metadata: dimensions not an array");
    for (const Json& d : dims) {
      if (!d.is_string()) return absl::InvalidArgumentError("metadata: a dimension not a string");
      m.dimensions.push_back(d.get<std::string>());
    }
  }
  for (auto [key, field] :
       {std::pair{"attributes", &m.attributes}, {"global_attributes", &m.global_attributes}}) {
    if (!doc.contains(key)) continue;
    absl::StatusOr<std::vector<Attribute>> attributes =
        AttributesFrom(doc[key], absl::StrCat("metadata: ", key));
    if (!attributes.ok()) return attributes.status();
    *field = *std::move(attributes);
  }
  if (doc.contains("coordinates")) {
    const Json& coordinates = doc["coordinates"];
    if (!coordinates.is_object()) {
      return absl::InvalidArgumentError("metadata: coordinates not an object");
    }
    uint64_t regular_left = kMaxRegularCount;
    for (const auto& [name, entry] : coordinates.items()) {
      const std::string where = absl::StrCat("metadata: coordinates.", name);
      if (!entry.is_object() || !entry.contains("type") || !entry["type"].is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": expected {\"type\": ..., ...}"));
      }
      CoordinateVariable c;
      c.name = name;
      c.type = entry["type"].get<std::string>();
      absl::StatusOr<std::vector<double>> values =
          CoordinateValuesFrom(entry, where, &regular_left);
      if (!values.ok()) return values.status();
      c.values = *std::move(values);
      if (entry.contains("attributes")) {
        absl::StatusOr<std::vector<Attribute>> attributes =
            AttributesFrom(entry["attributes"], absl::StrCat(where, ".attributes"));
        if (!attributes.ok()) return attributes.status();
        c.attributes = *std::move(attributes);
      }
      m.coordinates.push_back(std::move(c));
    }
  }
  return m;
}

const Attribute* FindAttribute(const std::vector<Attribute>& attributes, std::string_view name) {
  for (const Attribute& a : attributes) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

}  // namespace ebzip
