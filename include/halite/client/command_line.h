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
  // Batch mode (-b) and its options.
  std::string batch;
  double batch_wait = 0;  // seconds
  bool failhard = false;
  // Salt's --batch-safe-limit: with at least this many minions targeted (and more than 1), run
  // as `-b batch_safe_size`.
  int batch_safe_limit = 0;
  std::string batch_safe_size = "8";
  bool preview_target = false;  // --preview-target: print the targeted minions, run nothing
  // Output options.
  bool static_out = false;   // -s: every return at once, as one dict
  bool progress = false;     // -p
  bool show_timeout = true;  // --hide-timeout clears it
  bool summary = false;      // --summary
  std::string out_file;      // --out-file
  bool out_file_append = false;
  std::optional<int> out_indent;
  bool no_color = false;
  bool force_color = false;
  std::string state_output;           // empty: the config's (Salt's default "full")
  std::optional<bool> state_verbose;  // unset: the config's (Salt's default true)
  bool output_diff = false;           // --output-diff
  // Passed through in the publish, as salt does.
  std::string ret;         // --return
  std::string ret_config;  // --return_config
  std::string metadata;    // --metadata (YAML-loaded, as salt does)
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
