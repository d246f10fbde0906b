// Salt's outputters (salt/output/*.py, 3007): `nested` (the salt CLI's default), `highstate`
// (state runs), `json`, `yaml`, `txt`, `raw` (Python's str()), `pprint`, and
// `newline_values_only`, with Salt's colours. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::client {

enum class OutputFormat {
  kNested,
  kHighstate,
  kJson,
  kYaml,
  kTxt,
  kRaw,
  kPprint,
  kNewlineValuesOnly,
  kNoReturn,  // what salt prints for a minion that did not return
};

// What Salt's outputters read from the CLI's opts.
struct OutputOptions {
  bool color = false;         // ANSI colours (salt: a terminal, --force-color, not --no-color)
  std::optional<int> indent;  // --out-indent: json and pprint; negative: json on one line
  std::string state_output = "full";  // full, terse, mixed, changes, or one of them + "_id"
  bool state_verbose = true;          // false: states that succeeded without changes are left out
  bool state_output_diff = false;     // --output-diff: only states that changed or failed
  bool state_output_profile = true;   // Started / Duration lines and the total run time
  std::int64_t retcode = 0;           // nested: non-zero prints the keys in red
};

Result<OutputFormat> ParseOutputFormat(std::string_view name);

// Salt's display_output: the outputter's text for `data` (usually {minion id: return}) with
// trailing whitespace removed, then "\n"; empty when the outputter gives nothing. `highstate`
// falls back to `nested` for data that is not a state return, as Salt's try_printout does.
std::string DisplayOutput(const wire::Value& data, OutputFormat format,
                          const OutputOptions& options = {});

// DisplayOutput({id: value}) without colour.
std::string FormatReturn(std::string_view id, const wire::Value& value, OutputFormat format);

// Pretty JSON with `indent` spaces (ints, floats, strings, null, bools, nested containers).
std::string ToPrettyJson(const wire::Value& value, int indent = 4);

// Python's str() and repr() of the value Salt would hold after msgpack decoding (True, None,
// 'text', {'k': [1, 2.5]}); str() of a string is the string itself.
std::string PyStr(const wire::Value& value);
std::string PyRepr(const wire::Value& value);

// Whether Salt picks the highstate outputter for `fun` run with --static (a state function).
bool IsStateFunction(const wire::Value& fun);

}  // namespace halite::client
