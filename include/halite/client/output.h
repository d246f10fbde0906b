// Salt's outputters for one minion's return: `nested` (the salt CLI's default), `json`
// (one object per minion, 4-space indent), `yaml` and `txt` ("id: value").
#pragma once

#include <string>
#include <string_view>

#include "halite/common/result.h"
#include "halite/wire/msgpack.h"

namespace halite::client {

enum class OutputFormat { kNested, kJson, kYaml, kTxt };

Result<OutputFormat> ParseOutputFormat(std::string_view name);

// The text printed for `id` returning `value`, ending in a newline.
std::string FormatReturn(std::string_view id, const wire::Value& value, OutputFormat format);

// Pretty JSON with `indent` spaces (ints, floats, strings, null, bools, nested containers).
std::string ToPrettyJson(const wire::Value& value, int indent = 4);

}  // namespace halite::client
