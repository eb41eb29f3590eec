// Writes a few metadata documents into a directory, the seed corpus of
// metadata_fuzzer: attributes of every kind, a group, coordinates as lists
// and in the regular form, non-finite numbers.
// Usage: metadata_seed_corpus DIR
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "client/io/variable_metadata.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  using ebzip::Attribute;
  ebzip::VariableMetadata m;
  m.name = "SALT";
  m.type = "float";
  m.dimensions = {"Z", "Y", "X"};
  m.attributes = {{"units", "char", "PPT", {}, {}},
                  {"_FillValue", "float", "", {}, {-1e10}},
                  {"valid_range", "double", "", {}, {NAN, INFINITY}},
                  {"flags", "string", "", {"a", "b"}, {}}};
  m.global_attributes = {{"history", "char", "FERRET", {}, {}}};
  std::vector<double> x(360), y(180);
  for (size_t i = 0; i < x.size(); ++i) x[i] = 20.5 + static_cast<double>(i);
  for (size_t i = 0; i < y.size(); ++i) y[i] = -89.5 + static_cast<double>(i) * (179.0 / 179);
  m.coordinates = {{"Z", "double", {0, 10, 20, 30, 50, 75}, {}},
                   {"Y", "double", y, {{"units", "char", "degrees_north", {}, {}}}},
                   {"X", "double", x, {}}};
  std::vector<std::string> docs = {ebzip::VariableMetadataToJson(m)};
  m.group = "/a/b";
  m.coordinates.resize(1);
  docs.push_back(ebzip::VariableMetadataToJson(m));
  docs.push_back(
      R"({"name":"T","coordinates":{"X":{"type":"double","start":0,"step":0.5,"count":7}}})");
  for (size_t i = 0; i < docs.size(); ++i) {
    const std::string path = std::string(argv[1]) + "/seed" + std::to_string(i) + ".json";
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr || std::fwrite(docs[i].data(), 1, docs[i].size(), f) != docs[i].size() ||
        std::fclose(f) != 0) {
      std::perror(path.c_str());
      return 1;
    }
  }
  return 0;
}
