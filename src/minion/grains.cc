#include "halite/minion/grains.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace halite::minion {
namespace {

using wire::Value;

std::string Trim(std::string s) {
  const char* ws = " \t\r\n\v\f";
  std::size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  std::size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::vector<std::string> ReadLines(const std::filesystem::path& path) {
  std::vector<std::string> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

// os-release: KEY=value, KEY="value", KEY='value'.
std::string OsReleaseValue(const std::vector<std::string>& lines, std::string_view key) {
  for (const auto& raw : lines) {
    std::string line = Trim(raw);
    if (line.size() <= key.size() || line.compare(0, key.size(), key) != 0 ||
        line[key.size()] != '=') {
      continue;
    }
    std::string value = line.substr(key.size() + 1);
    if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
        value.back() == value.front()) {
      value = value.substr(1, value.size() - 2);
    }
    return value;
  }
  return "";
}

std::vector<std::string> Ipv4Addresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* it = list; it != nullptr; it = it->ifa_next) {
    if (it->ifa_addr == nullptr || it->ifa_addr->sa_family != AF_INET) continue;
    char buf[INET_ADDRSTRLEN];
    const auto* sin = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
    if (inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf) != nullptr) out.emplace_back(buf);
  }
  freeifaddrs(list);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

std::string_view OsNameForId(std::string_view id) {
  static constexpr std::pair<std::string_view, std::string_view> kNames[] = {
      {"debian", "Debian"},
      {"ubuntu", "Ubuntu"},
      {"raspbian", "Raspbian"},
      {"linuxmint", "Mint"},
      {"centos", "CentOS"},
      {"rhel", "RedHat"},
      {"fedora", "Fedora"},
      {"rocky", "Rocky"},
      {"almalinux", "AlmaLinux"},
      {"amzn", "Amazon"},
      {"ol", "OEL"},
      {"sles", "SUSE"},
      {"opensuse-leap", "Leap"},
      {"opensuse-tumbleweed", "openSUSE Tumbleweed"},
      {"arch", "Arch"},
      {"alpine", "Alpine"},
      {"gentoo", "Gentoo"},
  };
  for (const auto& [key, name] : kNames) {
    if (key == id) return name;
  }
  return {};
}

std::string_view OsFamilyFor(std::string_view os, std::string_view id_like) {
  static constexpr std::pair<std::string_view, std::string_view> kFamilies[] = {
      {"Debian", "Debian"},    {"Ubuntu", "Debian"},
      {"Raspbian", "Debian"},  {"Mint", "Debian"},
      {"RedHat", "RedHat"},    {"CentOS", "RedHat"},
      {"Fedora", "RedHat"},    {"Rocky", "RedHat"},
      {"AlmaLinux", "RedHat"}, {"Amazon", "RedHat"},
      {"OEL", "RedHat"},       {"SUSE", "Suse"},
      {"Leap", "Suse"},        {"openSUSE Tumbleweed", "Suse"},
      {"Arch", "Arch"},        {"Alpine", "Alpine"},
      {"Gentoo", "Gentoo"},
  };
  for (const auto& [name, family] : kFamilies) {
    if (name == os) return family;
  }
  if (id_like.find("debian") != std::string_view::npos) return "Debian";
  if (id_like.find("rhel") != std::string_view::npos ||
      id_like.find("fedora") != std::string_view::npos) {
    return "RedHat";
  }
  if (id_like.find("suse") != std::string_view::npos) return "Suse";
  return os;
}

Value SystemGrains(const GrainSources& sources) {
  Value grains = Value::EmptyMap();
  utsname uts{};
  if (uname(&uts) == 0) {
    grains.Set("kernel", std::string(uts.sysname));
    grains.Set("kernelrelease", std::string(uts.release));
    grains.Set("cpuarch", std::string(uts.machine));
    grains.Set("nodename", std::string(uts.nodename));
  } else {
    grains.Set("kernel", "Linux");
  }

  std::vector<std::string> hostname_lines = ReadLines(sources.hostname);
  std::string fqdn = hostname_lines.empty() ? "" : Trim(hostname_lines.front());
  if (fqdn.empty()) fqdn = uts.nodename[0] != '\0' ? std::string(uts.nodename) : "localhost";
  std::size_t dot = fqdn.find('.');
  grains.Set("fqdn", fqdn);
  grains.Set("host", fqdn.substr(0, dot));
  grains.Set("domain", dot == std::string::npos ? "" : fqdn.substr(dot + 1));

  std::vector<std::string> os_release = ReadLines(sources.os_release);
  std::string os_id = OsReleaseValue(os_release, "ID");
  std::string os_name(OsNameForId(os_id));
  if (os_name.empty()) {
    std::string name = OsReleaseValue(os_release, "NAME");
    os_name = name.empty() ? std::string(uts.sysname[0] ? uts.sysname : "Linux")
                           : name.substr(0, name.find(' '));
  }
  grains.Set("os", os_name);
  grains.Set("os_family", std::string(OsFamilyFor(os_name, OsReleaseValue(os_release, "ID_LIKE"))));
  grains.Set("osfullname", OsReleaseValue(os_release, "NAME"));
  grains.Set("osrelease", OsReleaseValue(os_release, "VERSION_ID"));
  grains.Set("oscodename", OsReleaseValue(os_release, "VERSION_CODENAME"));

  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  grains.Set("num_cpus", cpus > 0 ? cpus : 1L);
  for (const auto& line : ReadLines(sources.meminfo)) {
    if (line.rfind("MemTotal:", 0) == 0) {
      std::istringstream in(line.substr(9));
      long long kib = 0;
      in >> kib;
      grains.Set("mem_total", kib / 1024);
      break;
    }
  }
  if (sources.read_interfaces) {
    wire::Array ipv4;
    for (auto& a : Ipv4Addresses()) ipv4.emplace_back(std::move(a));
    grains.Set("ipv4", Value(std::move(ipv4)));
  }
  return grains;
}

Value MergeGrains(const Value& base, const Value& over, std::string_view id) {
  Value out = base.is_map() ? base : Value::EmptyMap();
  if (const wire::Map* m = over.map()) {
    for (const auto& [key, value] : *m) {
      if (const std::string* k = key.str()) out.Set(*k, value);
    }
  }
  out.Set("id", id);
  return out;
}

}  // namespace halite::minion
