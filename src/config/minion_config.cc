#include "halite/config/minion_config.h"

#include <charconv>
#include <utility>

#include "checks.h"
#include "halite/config/yaml.h"

namespace halite::config {
namespace {

using internal::kMaxInt;
using internal::kMaxPort;
using internal::kMaxSeconds;

constexpr std::int64_t kMaxMilliseconds = kMaxSeconds * 1000;

void ReadAll(YamlMapReader& r, MinionConfig& c) {
  if (!r.ReadString("id", c.id) || c.id.empty()) c.id = DefaultId();  // Salt: empty id = unset
  r.ReadStringList("master", c.master, /*allow_single=*/true);
  r.ReadInt("master_port", c.master_port, 1, kMaxPort);
  r.ReadInt("publish_port", c.publish_port, 1, kMaxPort);
  r.ReadString("root_dir", c.root_dir);
  r.ReadString("pki_dir", c.pki_dir);
  r.ReadString("cachedir", c.cachedir);
  r.ReadString("sock_dir", c.sock_dir);
  r.ReadString("log_file", c.log_file);
  r.ReadString("log_level", c.log_level);
  r.ReadString("user", c.user);

  r.ReadDuration("acceptance_wait_time", c.acceptance_wait_time, 1, kMaxSeconds);
  r.ReadDuration("acceptance_wait_time_max", c.acceptance_wait_time_max, 0, kMaxSeconds);
  r.ReadDuration("auth_timeout", c.auth_timeout, 1, kMaxSeconds);
  r.ReadInt("auth_tries", c.auth_tries, 1, kMaxInt);
  r.ReadDuration("request_channel_timeout", c.request_channel_timeout, 1, kMaxSeconds);
  r.ReadInt("request_channel_tries", c.request_channel_tries, 1, kMaxInt);
  r.ReadDuration("return_retry_timer", c.return_retry_timer, 1, kMaxSeconds);
  r.ReadDuration("return_retry_timer_max", c.return_retry_timer_max, 0, kMaxSeconds);
  r.ReadInt("return_retry_tries", c.return_retry_tries, 1, kMaxInt);
  r.ReadBool("rejected_retry", c.rejected_retry);
  r.ReadDuration("recon_default", c.recon_default, 0, kMaxMilliseconds);
  r.ReadDuration("recon_max", c.recon_max, 0, kMaxMilliseconds);
  r.ReadBool("recon_randomize", c.recon_randomize);

  r.ReadInt("keysize", c.keysize, internal::kMinKeysize, internal::kMaxKeysize);
  r.ReadString("encryption_algorithm", c.encryption_algorithm);
  r.ReadString("signing_algorithm", c.signing_algorithm);
  r.ReadBool("sign_pub_messages", c.sign_pub_messages);
  r.ReadMap("grains", c.grains);
  r.ReadBool("ipv6", c.ipv6);

  r.ReadInt("request_protocol_version", c.request_protocol_version, 2, 3);
  r.ReadDuration("job_timeout", c.job_timeout, 0, kMaxSeconds);
  r.ReadInt("exec_workers", c.exec_workers, 1, 1024);
}

// An upper bound of 0 means "no growth"; otherwise it may not be below the base value.
template <typename Duration>
void CheckMaxNotBelow(YamlMapReader& r, std::string_view max_key, Duration max,
                      std::string_view base_key, Duration base) {
  if (max.count() == 0 || max >= base || r.HasProblem(max_key) || r.HasProblem(base_key)) return;
  r.AddProblem(max_key, "must be 0 or at least " + std::string(base_key) + " (" +
                            std::to_string(base.count()) + ") (got " + std::to_string(max.count()) +
                            ")");
}

void Validate(YamlMapReader& r, const MinionConfig& c) {
  internal::CheckId(r, "id", c.id);
  if (!r.Has("master")) {
    r.AddWarning(
        "master: not set; Salt's default 'salt' is a host name and halite never "
        "resolves host names, so set master to the master's IP address");
  } else if (c.master.empty()) {
    r.AddProblem("master", "must list at least one master");
  } else if (!r.HasProblem("master")) {
    for (std::size_t i = 0; i < c.master.size(); ++i) {
      Result<MasterAddress> address = ParseMasterAddress(c.master[i], c.master_port);
      if (address.ok()) continue;
      r.AddProblem(c.master.size() == 1 ? "master" : "master[" + std::to_string(i) + "]",
                   address.error().message);
    }
  }
  internal::CheckAbsolutePath(r, "root_dir", c.root_dir, /*may_be_empty=*/true);
  internal::CheckAbsolutePath(r, "pki_dir", c.pki_dir, /*may_be_empty=*/false);
  internal::CheckAbsolutePath(r, "cachedir", c.cachedir, /*may_be_empty=*/false);
  internal::CheckAbsolutePath(r, "sock_dir", c.sock_dir, /*may_be_empty=*/false);
  internal::CheckAbsolutePath(r, "log_file", c.log_file, /*may_be_empty=*/true);
  internal::CheckLogLevel(r, "log_level", c.log_level);
  internal::CheckNotEmpty(r, "user", c.user);
  CheckMaxNotBelow(r, "acceptance_wait_time_max", c.acceptance_wait_time_max,
                   "acceptance_wait_time", c.acceptance_wait_time);
  CheckMaxNotBelow(r, "return_retry_timer_max", c.return_retry_timer_max, "return_retry_timer",
                   c.return_retry_timer);
  internal::WarnWeakKeysize(r, "keysize", c.keysize);
  internal::CheckOneOf(r, "encryption_algorithm", c.encryption_algorithm,
                       {"OAEP-SHA1", "OAEP-SHA224"});
  internal::CheckOneOf(r, "signing_algorithm", c.signing_algorithm,
                       {"PKCS1v15-SHA1", "PKCS1v15-SHA224"});
}

void Derive(MinionConfig& c) {
  for (std::string* path : {&c.pki_dir, &c.cachedir, &c.sock_dir, &c.log_file}) {
    *path = internal::PrefixRootDir(c.root_dir, *path);
  }
}

Result<std::uint16_t> ParsePort(std::string_view entry, std::string_view text) {
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0 ||
      value > kMaxPort) {
    return Error::InvalidArgument("port must be between 1 and 65535 (got " +
                                  internal::Quoted(entry) + ")");
  }
  return static_cast<std::uint16_t>(value);
}

}  // namespace

Result<MasterAddress> ParseMasterAddress(std::string_view entry, std::uint16_t default_port) {
  MasterAddress address{.host = "", .port = default_port};
  std::string_view host = entry;
  if (entry.starts_with('[')) {  // "[v6]" or "[v6]:port"
    const std::size_t close = entry.find(']');
    if (close != std::string_view::npos) {
      host = entry.substr(1, close - 1);
      const std::string_view rest = entry.substr(close + 1);
      if (!rest.empty()) {
        if (rest.front() != ':') {
          return Error::InvalidArgument("expected '[address]:port' (got " +
                                        internal::Quoted(entry) + ")");
        }
        HALITE_ASSIGN_OR_RETURN(address.port, ParsePort(entry, rest.substr(1)));
      }
      if (!internal::IsIpv6Literal(host)) host = entry;  // reported below
    }
  } else if (const std::size_t colon = entry.find(':');
             colon != std::string_view::npos &&
             entry.find(':', colon + 1) == std::string_view::npos) {
    host = entry.substr(0, colon);  // "v4:port"; more than one ':' is a bare IPv6 address
    HALITE_ASSIGN_OR_RETURN(address.port, ParsePort(entry, entry.substr(colon + 1)));
  }
  if (!internal::IsIpv4Literal(host) && !internal::IsIpv6Literal(host)) {
    return Error::InvalidArgument(
        "must be an IP address, optionally with ':port' (IPv6 as '[address]:port'); halite "
        "never resolves host names (got " +
        internal::Quoted(entry) + ")");
  }
  address.host = std::string(host);
  return address;
}

Result<Loaded<MinionConfig>> MinionConfigFromYaml(const YAML::Node& root) {
  YamlMapReader reader(root);
  MinionConfig config;
  ReadAll(reader, config);
  Validate(reader, config);
  reader.WarnUnknownKeys();
  HALITE_RETURN_IF_ERROR(ProblemsToStatus(reader.problems()));
  Derive(config);
  return Loaded<MinionConfig>{std::move(config), std::move(reader.warnings())};
}

Result<Loaded<MinionConfig>> ParseMinionConfig(std::string_view yaml_text) {
  HALITE_ASSIGN_OR_RETURN(YAML::Node root, ParseYaml(yaml_text));
  return MinionConfigFromYaml(root);
}

Result<Loaded<MinionConfig>> LoadMinionConfig(const std::filesystem::path& path) {
  std::vector<std::string> include_warnings;
  HALITE_ASSIGN_OR_RETURN(YAML::Node root,
                          LoadYamlFileWithIncludes(path, "minion.d/*.conf", include_warnings));
  HALITE_ASSIGN_OR_RETURN(Loaded<MinionConfig> loaded, MinionConfigFromYaml(root));
  loaded.warnings.insert(loaded.warnings.begin(), include_warnings.begin(), include_warnings.end());
  return loaded;
}

}  // namespace halite::config
