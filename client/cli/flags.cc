#include "client/cli/flags.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace ebzip::cli {
namespace {

// Every flag of every command; commands.cc says which command takes which.
constexpr FlagSpec kFlags[] = {
    {"help", 'h', "", "print this help and exit"},
    {"output", 'o', "FILE", "output file; '-' is standard output"},
    {"force", 'f', "", "replace an existing output file"},
    {"quiet", 'q', "", "print nothing on success but warnings"},
    {"json", 0, "", "print the result as one JSON object"},
    {"type", 0, "T", "element type of a raw input: f32 or f64"},
    {"shape", 0, "N,N,...", "shape of a raw input, C order, slowest dimension first"},
    {"abs", 0, "E", "absolute error bound"},
    {"rel", 0, "E", "error bound relative to the range of the finite values"},
    {"fill", 0, "V", "fill value, restored exactly: a number, 'none' or 'auto' (default)"},
    {"predictor", 0, "P", "auto (default), lorenzo or interp"},
    {"lossless", 0, "L", "auto (default), huffman, runs or run-values"},
    {"interp_order", 0, "N", "interpolation order: 1 linear, 3 cubic, 0 chooses (default)"},
    {"frame_elements", 0, "N", "target elements per frame (default 16M)"},
    {"radius", 0, "N", "quantization radius, symbols per sign (default 32K)"},
    {"chunk_symbols", 0, "N", "symbols per Huffman chunk (default 16K)"},
    {"subsequence_bits", 0, "N", "bits per gap-array subsequence (default 1024)"},
    {"gap_array", 0, "", "write a gap array for parallel decoding (default; =false: none)"},
    {"metadata", 0, "",
     "store a NetCDF/HDF5 variable's name, dimensions and attributes (default; =false: none)"},
    {"decoder", 0, "D", "Huffman decoder: auto (default), chunk, gap or selfsync"},
    {"max_output_bytes", 0, "SIZE", "refuse a larger array (default: physical memory)"},
    {"region", 0, "R",
     "decode only the hyperslab R: START:STOP[:STEP] per dimension, comma-separated"},
    {"server", 0, "HOST:PORT", "run on this ebzipd instead of locally"},
    {"remote_path", 0, "PATH",
     "with --server: decompress the server's archive PATH (relative to its --archive_root) "
     "instead of uploading IN.ebz"},
    {"tls", 0, "CA.pem", "use TLS, trusting the CA in this PEM file"},
    {"tls_server_name", 0, "NAME", "name expected in the server's certificate"},
    {"token", 0, "T", "bearer token (default: $EBZIP_TOKEN)"},
    {"deadline", 0, "S", "seconds before a server call is abandoned; 0: none (default 300)"},
    {"timeout", 0, "S", "the same as --deadline"},
    {"streams", 0, "N",
     "calls a large array is split over, by whole frames, each on its own connection; "
     "0: one per 128 MiB, up to 8 (default); 1: one call"},
};

constexpr size_t kHelpColumn = 32;

std::string Normalize(absl::string_view name) { return absl::StrReplaceAll(name, {{"-", "_"}}); }

const FlagSpec* FindShort(char c) {
  for (const FlagSpec& f : kFlags) {
    if (f.short_name == c) return &f;
  }
  return nullptr;
}

absl::Status Usage(absl::string_view command, absl::string_view message) {
  return absl::InvalidArgumentError(
      absl::StrCat(message, " (ebzip ", command, " --help lists its flags)"));
}

}  // namespace

const FlagSpec* FindFlag(absl::string_view name) {
  const std::string normalized = Normalize(name);
  for (const FlagSpec& f : kFlags) {
    if (f.name == normalized) return &f;
  }
  return nullptr;
}

void ParsedArgs::CheckTaken(absl::string_view name) const {
  if (taken_.count(name) == 0) {
    std::fprintf(stderr, "ebzip: internal error: flag --%.*s read but not declared\n",
                 static_cast<int>(name.size()), name.data());
    std::abort();
  }
}

bool ParsedArgs::Has(absl::string_view name) const {
  CheckTaken(name);
  return values_.count(name) != 0;
}

std::string ParsedArgs::Value(absl::string_view name, absl::string_view fallback) const {
  CheckTaken(name);
  auto it = values_.find(name);
  return it == values_.end() ? std::string(fallback) : it->second;
}

std::optional<std::string> ParsedArgs::OptionalValue(absl::string_view name) const {
  CheckTaken(name);
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

bool ParsedArgs::Switch(absl::string_view name, bool fallback) const {
  CheckTaken(name);
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second == "true";
}

absl::StatusOr<ParsedArgs> ParseArgs(absl::string_view command,
                                     const std::vector<absl::string_view>& taken,
                                     absl::Span<const std::string> args) {
  ParsedArgs parsed;
  parsed.taken_.insert(taken.begin(), taken.end());
  // Help wins over any mistake in the rest of the line.
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "-h" || a == "--help") {
      parsed.help_ = true;
      return parsed;
    }
  }
  bool only_arguments = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (only_arguments || a == "-" || a.empty() || a[0] != '-') {
      parsed.positional_.push_back(a);
      continue;
    }
    if (a == "--") {
      only_arguments = true;
      continue;
    }
    const FlagSpec* spec = nullptr;
    std::optional<std::string> value;
    std::string shown;  // the flag as typed, for messages
    if (a[1] == '-') {
      absl::string_view body = absl::string_view(a).substr(2);
      const size_t eq = body.find('=');
      if (eq != absl::string_view::npos) {
        value = std::string(body.substr(eq + 1));
        body = body.substr(0, eq);
      }
      shown = absl::StrCat("--", body);
      spec = FindFlag(body);
      // --noname: a switch set to false.
      const std::string normalized = Normalize(body);
      if (spec == nullptr && !value && normalized.rfind("no", 0) == 0) {
        const std::string rest = normalized.substr(normalized.rfind("no_", 0) == 0 ? 3 : 2);
        const FlagSpec* negated = FindFlag(rest);
        if (negated != nullptr && negated->value.empty()) {
          spec = negated;
          value = "false";
        }
      }
    } else {
      shown = a.substr(0, 2);
      if (a.size() == 2) spec = FindShort(a[1]);
      if (spec == nullptr) {
        const FlagSpec* long_form = FindFlag(absl::string_view(a).substr(1));
        return Usage(
            command,
            absl::StrCat("unknown flag '", a, "'",
                         long_form ? absl::StrCat(": did you mean --", long_form->name, "?") : ""));
      }
    }
    if (spec == nullptr) return Usage(command, absl::StrCat("unknown flag ", shown));
    if (parsed.taken_.count(spec->name) == 0) {
      return Usage(command, absl::StrCat(shown, " does not apply to ebzip ", command));
    }
    if (spec->value.empty()) {
      if (!value) value = "true";
      const std::string v = absl::AsciiStrToLower(*value);
      if (v == "true" || v == "1") {
        value = "true";
      } else if (v == "false" || v == "0") {
        value = "false";
      } else {
        return Usage(command, absl::StrCat(shown, " is a switch: give it alone or as ", shown,
                                           "=true or ", shown, "=false, not '", *value, "'"));
      }
    } else if (!value) {
      if (i + 1 == args.size()) {
        return Usage(command, absl::StrCat(shown, " needs a value (", spec->value, ")"));
      }
      value = args[++i];
    }
    parsed.values_[std::string(spec->name)] = *value;
  }
  return parsed;
}

std::string FlagHelp(const std::vector<absl::string_view>& taken) {
  std::string out;
  for (absl::string_view name : taken) {
    const FlagSpec* f = FindFlag(name);
    if (f == nullptr) continue;
    std::string left = f->short_name
                           ? absl::StrCat("  -", std::string(1, f->short_name), ", --", f->name)
                           : absl::StrCat("      --", f->name);
    if (!f->value.empty()) absl::StrAppend(&left, " ", f->value);
    left.resize(std::max<size_t>(left.size() + 2, kHelpColumn), ' ');
    absl::StrAppend(&out, left, f->help, "\n");
  }
  return out;
}

absl::StatusOr<uint64_t> ParseSize(absl::string_view text, absl::string_view flag) {
  auto bad = [&] {
    return absl::InvalidArgumentError(
        absl::StrCat("bad --", flag, " '", text,
                     "': expected a whole number, optionally with K, M, G or T (x1024)"));
  };
  size_t digits = 0;
  while (digits < text.size() && absl::ascii_isdigit(static_cast<unsigned char>(text[digits]))) {
    ++digits;
  }
  uint64_t number;
  if (digits == 0 || !absl::SimpleAtoi(text.substr(0, digits), &number)) return bad();
  std::string suffix = absl::AsciiStrToUpper(text.substr(digits));
  if (suffix.size() == 3 && suffix.substr(1) == "IB") suffix.resize(1);
  int shift = 0;
  if (suffix == "K") {
    shift = 10;
  } else if (suffix == "M") {
    shift = 20;
  } else if (suffix == "G") {
    shift = 30;
  } else if (suffix == "T") {
    shift = 40;
  } else if (!suffix.empty()) {
    return bad();
  }
  if (number > (std::numeric_limits<uint64_t>::max() >> shift)) return bad();
  return number << shift;
}

}  // namespace ebzip::cli
