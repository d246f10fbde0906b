// The `halite` command line read as Salt's SaltCMDOptionParser (optparse) reads `salt`'s:
// options anywhere among the words ("-t 5", "-t5", "--timeout=5", "--timeout 5", clustered
// short flags "-Lv", unambiguous long prefixes "--verb"), "--" ends the options, then TARGET,
// FUNCTION and its arguments (cli_args.h). A FUNCTION with commas is a multi-function job:
// one argument list per function, split at standalone separators (`, hi`) or, when their
// count does not fit, inside words (`,hi`), as Salt does. Pure; thread-safe.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::client {

struct SaltCommandLine {
  std::string config_path;  // -c: a file, or a directory holding `master` (Salt's config dir)
  std::string tgt_type = "glob";
  wire::Value tgt;  // a string; a list of ids for -L
  // One function: fun is its name and arg its arguments. Several: fun is the list of names
  // and arg holds one argument list per function (what Salt publishes).
  wire::Value fun;
  wire::Array arg;
  bool multi_function = false;
  std::string out;              // --out; empty: the default outputter
  std::optional<int> timeout;   // -t
  std::string delimiter = ":";  // --delimiter
  std::string args_separator = ",";
  bool async = false;
  bool verbose = false;
  bool show_jid = false;
  bool help = false;
  bool version = false;
};

// Error::InvalidArgument for what optparse rejects (unknown option, missing value, two target
// options; Salt exits 2) and Error::FailedPrecondition for what Salt's own checks reject (no
// target, no function, argument lists that do not fit the functions; Salt exits 42). Options
// Salt has and halite does not implement yet are refused by name (InvalidArgument), never
// accepted and ignored.
Result<SaltCommandLine> ParseSaltCommandLine(const std::vector<std::string>& words);

// The exit code Salt uses for a ParseSaltCommandLine error: 64 (EX_USAGE) or 42.
int CommandLineExitCode(const Error& error);

}  // namespace halite::client
