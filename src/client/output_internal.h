// Pieces shared by the outputters in this folder (not installed): Salt's colours, Python's
// text rules, the nested and highstate outputters, pprint.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "halite/client/output.h"
#include "halite/wire/msgpack.h"

namespace halite::client::internal {

// salt.utils.color.get_colors: ANSI sequences, or every one empty when `use` is false.
struct Colors {
  std::string green, red, light_red, yellow, light_yellow, cyan, endc;
};
Colors GetColors(bool use);

// Python's str.splitlines() (no line ends kept), str.strip(), str.rstrip().
std::vector<std::string> SplitLines(std::string_view text);
std::string Strip(std::string_view text);
std::string RStrip(std::string_view text);
// Python's repr() of a float: shortest round trip, `1e+16`, `0.0001`, `1e-05`, `inf`.
std::string PyFloatRepr(double d);
// Salt's strip_esc_sequence: ESC becomes '?'.
std::string StripEsc(std::string text);
// Map entries as Python's sorted(dict) orders them (keys of mixed types: by their str()).
std::vector<const std::pair<wire::Value, wire::Value>*> SortedItems(const wire::Map& map);

// salt.output.nested.NestDisplay(retcode).display(value, indent, "", []), joined by "\n".
std::string Nested(const wire::Value& value, int indent, bool color, std::int64_t retcode);
// pprint.pformat(value, indent=indent_per_level) with width 80.
std::string Pprint(const wire::Value& value, int indent_per_level);
// salt.output.highstate.output(data); nullopt where Salt's raises (and falls back to nested).
std::optional<std::string> Highstate(const wire::Value& data, const OutputOptions& options);

}  // namespace halite::client::internal
