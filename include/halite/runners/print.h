// How salt-run prints a runner's value: the whole value through one outputter (nested, the
// default, sorts map keys as Salt's does; json keeps the runner's order), `-d`'s doc listing
// and display_progress's progress events. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "halite/client/output.h"
#include "halite/runners/runner.h"
#include "halite/wire/msgpack.h"

namespace halite::runners {

// The text salt-run prints for `value`, ending in a newline.
std::string FormatRunnerValue(const wire::Value& value, client::OutputFormat format);

// salt-run -d: "name:" and the doc for each runner.
std::string FormatDocs(const std::vector<const Runner*>& runners);

// A progress event as salt-run prints one: {"event": {"_stamp": ..., "message": ...},
// "suffix": "progress"} through the outputter. `stamp` is the event's ISO time.
std::string FormatProgress(const std::string& message, const std::string& stamp,
                           client::OutputFormat format);

}  // namespace halite::runners
