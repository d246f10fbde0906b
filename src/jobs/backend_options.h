// Shared by the backends' *_factory.cc: how their YAML options end (private to jobs/).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "halite/common/result.h"
#include "halite/config/yaml.h"

namespace halite::jobs {

// Unknown keys are problems here, not warnings (a mistyped backend option must not quietly
// leave a default in place); then every problem goes into one InvalidArgument.
inline Status FinishBackendOptions(config::YamlMapReader& reader, std::string_view backend) {
  std::vector<config::ConfigProblem> problems = reader.problems();
  reader.WarnUnknownKeys();
  // The reader's warnings are "unknown key '<prefix><key>' (ignored)".
  for (const std::string& warning : reader.warnings()) {
    const auto open = warning.find('\'');
    const auto close = warning.rfind('\'');
    if (open != std::string::npos && close > open) {
      problems.push_back({warning.substr(open + 1, close - open - 1), "unknown key"});
    } else {
      problems.push_back({"job_cache", warning});
    }
  }
  if (problems.empty()) return OkStatus();
  return Error::InvalidArgument(std::string(backend) + " options:\n" +
                                config::FormatProblems(problems));
}

}  // namespace halite::jobs
