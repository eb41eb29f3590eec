// The command line's flags: one table of every flag, each command naming
// the ones it takes, and a parser that holds a command to its own. A flag
// no command takes, or one that belongs to another command (`ebzip compare
// --rel`), is a usage error rather than something silently ignored, and
// `ebzip COMMAND --help` lists exactly the flags the command reads.
//
// Spellings: `--name VALUE`, `--name=VALUE`, `-x VALUE` for a flag with a
// short form (-o, -f, -h, -q); a switch is `--name`, `--name=true|false` or
// `--noname`. '-' and '_' are the same inside names (--max-output-bytes).
// A lone "-" is an argument (standard input or output); after "--"
// everything is an argument.
#ifndef EBZIP_CLIENT_CLI_FLAGS_H_
#define EBZIP_CLIENT_CLI_FLAGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace ebzip::cli {

struct FlagSpec {
  absl::string_view name;   // without "--", with '_' between words
  char short_name;          // 0: none
  absl::string_view value;  // what the value is, for --help ("E", "SIZE"); empty: a switch
  absl::string_view help;   // one line
};

// The flag called `name` ('-' or '_' between words), or nullptr.
const FlagSpec* FindFlag(absl::string_view name);

// What one command line set, for the flags its command takes.
class ParsedArgs {
 public:
  const std::vector<std::string>& positional() const { return positional_; }
  bool help() const { return help_; }

  // Whether the command takes the flag (whether or not it was given).
  bool Takes(absl::string_view name) const { return taken_.contains(name); }
  // Whether the flag was given. Asking about a flag the command does not
  // take is a bug in the command (its list and its code disagree): it aborts
  // so that the tests find it.
  bool Has(absl::string_view name) const;
  // The value given, or `fallback`.
  std::string Value(absl::string_view name, absl::string_view fallback = "") const;
  std::optional<std::string> OptionalValue(absl::string_view name) const;
  // A switch: given (true), given false, or `fallback`.
  bool Switch(absl::string_view name, bool fallback = false) const;

 private:
  friend absl::StatusOr<ParsedArgs> ParseArgs(absl::string_view,
                                              const std::vector<absl::string_view>&,
                                              absl::Span<const std::string>);
  void CheckTaken(absl::string_view name) const;

  std::set<std::string, std::less<>> taken_;
  std::map<std::string, std::string, std::less<>> values_;
  std::vector<std::string> positional_;
  bool help_ = false;
};

// Parses `args` (what follows the command's name) for `command`, which takes
// the flags named in `taken` (and always -h/--help). INVALID_ARGUMENT, a
// usage error, for an unknown flag, another command's flag, a missing value
// or a switch given a value other than true/false. A flag given twice keeps
// its last value.
absl::StatusOr<ParsedArgs> ParseArgs(absl::string_view command,
                                     const std::vector<absl::string_view>& taken,
                                     absl::Span<const std::string> args);

// --help's list: one line per flag in `taken`, in that order.
std::string FlagHelp(const std::vector<absl::string_view>& taken);

// A count or a size: digits, optionally followed by K, M, G or T (powers of
// 1024; "KiB" and "k" also accepted: 4G = 4GiB = 4294967296). INVALID_ARGUMENT
// naming `flag` for anything else or more than 2^64 - 1.
absl::StatusOr<uint64_t> ParseSize(absl::string_view text, absl::string_view flag);

}  // namespace ebzip::cli

#endif  // EBZIP_CLIENT_CLI_FLAGS_H_
