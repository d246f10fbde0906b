#include "halite/jobs/job_cache_registry.h"

#include <utility>

#include "halite/common/check.h"

namespace halite::jobs {

void JobCacheRegistry::Register(std::string name, JobCacheFactory factory) {
  HALITE_CHECK(factory != nullptr) << "job cache '" << name << "' registered without a factory";
  auto [it, inserted] = factories_.emplace(std::move(name), std::move(factory));
  HALITE_CHECK(inserted) << "job cache '" << it->first << "' registered twice";
}

Result<std::unique_ptr<JobCache>> JobCacheRegistry::Create(std::string_view name,
                                                           const JobCacheContext& context,
                                                           const YAML::Node& options) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    std::string known;
    for (const auto& [known_name, factory] : factories_) {
      if (!known.empty()) known += ", ";
      known += known_name;
    }
    return Error::NotFound("unknown job cache '" + std::string(name) +
                           "'; known: " + (known.empty() ? "(none)" : known));
  }
  return it->second(context, options);
}

std::vector<std::string> JobCacheRegistry::Names() const {
  std::vector<std::string> names;
  names.reserve(factories_.size());
  for (const auto& [name, factory] : factories_) names.push_back(name);
  return names;
}

}  // namespace halite::jobs
