// fileserver.*: Salt's fileserver runner over the "roots" backend, read here from the
// master's file_roots (halite-run runs with the master's config), as salt-run reads them:
// the same code answers minions' _file_list / _dir_list / _file_envs (master/fileserver.h).
#include "halite/master/fileserver.h"

#include <algorithm>

#include "internal.h"

namespace halite::runners {

namespace {

using wire::Value;

Status CheckBackend(const BoundArgs& a) {
  for (const auto& b : internal::SplitInput(a.Get("backend"))) {
    if (b != "roots" && b != "-git" && b != "-gitfs") {
      return Error::InvalidArgument("fileserver backend '" + b +
                                    "' is not available: halite serves file_roots (roots) only");
    }
  }
  return OkStatus();
}

RunnerFn Listing(const char* cmd) {
  return [cmd](RunnerEnv& env, const BoundArgs& a) -> Result<RunnerResult> {
    HALITE_RETURN_IF_ERROR(CheckBackend(a));
    auto listed = master::HandleFileCommand(*env.config, nullptr, cmd,
                                            Value::MapOf({{"saltenv", a.Text("saltenv")}}));
    return RunnerResult{listed ? std::move(*listed) : Value::EmptyArray(), ""};
  };
}

Result<RunnerResult> Envs(RunnerEnv& env, const BoundArgs& a) {
  HALITE_RETURN_IF_ERROR(CheckBackend(a));
  auto envs = master::HandleFileCommand(*env.config, nullptr, "_file_envs", Value::EmptyMap());
  std::vector<std::string> names;
  if (envs && envs->array()) {
    for (const auto& e : *envs->array()) {
      if (e.str()) names.push_back(*e.str());
    }
  }
  std::sort(names.begin(), names.end());
  return RunnerResult{internal::StrList(names), ""};
}

std::string ListDoc(const std::string& what, const std::string& name) {
  return "\n    The " + what +
         " of one environment's file_roots (saltenv, base by default).\n\n"
         "    CLI Example:\n\n        halite-run fileserver." +
         name + "\n        halite-run fileserver." + name + " saltenv=dev\n    ";
}

const Value kNone;

}  // namespace

void AddFileserverRunners(RunnerTable& table) {
  const std::vector<Param> list_params = {{"saltenv", "base"}, {"backend", kNone}};
  table.Add({"fileserver.envs",
             {{"backend", kNone}, {"sources", false}},
             false,
             R"(
    The environments file_roots defines, sorted.

    CLI Example:

        halite-run fileserver.envs
    )",
             Envs});
  table.Add({"fileserver.file_list", list_params, false, ListDoc("files", "file_list"),
             Listing("_file_list")});
  table.Add({"fileserver.dir_list", list_params, false, ListDoc("directories", "dir_list"),
             Listing("_dir_list")});
  table.Add({"fileserver.empty_dir_list", list_params, false,
             ListDoc("empty directories", "empty_dir_list"), Listing("_file_list_emptydirs")});
  table.Add({"fileserver.symlink_list", list_params, false,
             ListDoc("symlinks (none: halite's file server follows them)", "symlink_list"),
             Listing("_symlink_list")});
}

}  // namespace halite::runners
