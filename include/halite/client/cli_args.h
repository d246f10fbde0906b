// Salt's CLI argument conventions (salt/utils/args.py): each word YAML-loaded the way
// yamlify_arg does, `key=value` words collected into a trailing {"__kwarg__": true, ...} map
// the way parse_input + condition_input do. Pure functions; thread-safe.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "halite/wire/msgpack.h"

namespace halite::client {

// One CLI word as Salt would publish it: YAML 1.1 as Salt's loader reads it (ints incl. 0x,
// 0b, sexagesimal and leading zeros read as decimal; floats; yes/no/on/off; null/~; flow
// lists and maps; quoting keeps a string; timestamps stay strings), with Salt's exceptions:
// blank, "---", "...", digits-and-underscores, words with tab/CR/LF and anything that does not
// load stay as typed; a map or list counts only when the word starts with '{' or '['; a word
// holding '#' is loaded only if that gives a non-string; "|", "!" stay themselves. An integer
// beyond 64 bits stays a string (msgpack cannot carry it).
wire::Value YamlifyArg(std::string_view arg);

// Salt's KWARG_REGEX: `name=value` where name starts with a letter or '_' and continues with
// letters, digits, '_', '.', '-', and value does not start with '='. Empty name when not.
std::pair<std::string, std::string> SplitKwarg(std::string_view word);

// parse_input(args, no_parse): positional words YAML-loaded in order; kwargs (their values
// YAML-loaded unless their name is in `no_parse`) appended as one {"__kwarg__": true, ...}.
wire::Array ParseCliArgs(const std::vector<std::string>& args,
                         const std::set<std::string, std::less<>>& no_parse = {});

// parse_input on values already loaded (what a minion's publish.publish sends: strings, numbers,
// maps): a string `key=value` becomes a kwarg (its value YAML-loaded unless in `no_parse`), a
// map holding "__kwarg__": True gives its other keys as kwargs, anything else stays
// positional as it is; kwargs appended as one {"__kwarg__": true, ...}.
wire::Array ParseInputValues(const wire::Array& args,
                             const std::set<std::string, std::less<>>& no_parse = {});

}  // namespace halite::client
