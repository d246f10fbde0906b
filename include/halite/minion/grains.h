// System grains, read without DNS: id, os, os_family, osrelease, kernel, kernelrelease,
// cpuarch, nodename, host, fqdn (from /etc/hostname), num_cpus, mem_total (MiB), ipv4
// (getifaddrs). Reading blocks on small /proc and /etc files: do it once at start-up, off the
// loop. Reentrant.
#pragma once

#include <filesystem>
#include <string_view>

#include "halite/wire/msgpack.h"

namespace halite::minion {

struct GrainSources {
  std::filesystem::path os_release = "/etc/os-release";
  std::filesystem::path hostname = "/etc/hostname";
  std::filesystem::path meminfo = "/proc/meminfo";
  bool read_interfaces = true;  // ipv4 from getifaddrs
};

// Missing sources leave their grains out (or at Salt's fallback values); never fails.
wire::Value SystemGrains(const GrainSources& sources = {});

// `base` with every key of `over` set on top (top-level keys replace), then id = `id`.
wire::Value MergeGrains(const wire::Value& base, const wire::Value& over, std::string_view id);

// Salt's os / os_family names for an os-release ID ("debian" -> "Debian", family "Debian").
std::string_view OsNameForId(std::string_view id);
std::string_view OsFamilyFor(std::string_view os_name, std::string_view id_like);

}  // namespace halite::minion
