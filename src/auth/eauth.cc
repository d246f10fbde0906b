#include "halite/auth/eauth.h"

#include <grp.h>
#include <pwd.h>
#include <spdlog/spdlog.h>

#include <vector>

#include "halite/config/config.h"
#include "halite/config/yaml.h"

namespace halite::auth {

namespace {

class AutoEauth : public Eauth {
 public:
  // Eauth:
  Result<bool> Authenticate(const std::string& user, const std::string&) override {
    return !user.empty();
  }
};

}  // namespace

std::vector<std::string> SystemGroups(const std::string& user) {
  std::vector<char> buf(16384);
  struct passwd pw {};
  struct passwd* found = nullptr;
  if (::getpwnam_r(user.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || !found) return {};
  int n = 64;
  std::vector<gid_t> gids(static_cast<std::size_t>(n));
  if (::getgrouplist(user.c_str(), pw.pw_gid, gids.data(), &n) < 0) {
    if (n > 65536) return {};
    gids.resize(static_cast<std::size_t>(n));
    if (::getgrouplist(user.c_str(), pw.pw_gid, gids.data(), &n) < 0) return {};
  }
  gids.resize(static_cast<std::size_t>(n));
  std::vector<std::string> out;
  std::vector<char> gbuf(65536);
  for (gid_t gid : gids) {
    struct group gr {};
    struct group* g = nullptr;
    if (::getgrgid_r(gid, &gr, gbuf.data(), gbuf.size(), &g) == 0 && g)
      out.emplace_back(g->gr_name);
  }
  return out;
}

std::vector<std::string> Eauth::Groups(const std::string& user) { return SystemGroups(user); }

std::unique_ptr<Eauth> MakeAutoEauth() { return std::make_unique<AutoEauth>(); }

wire::Value AclYamlToValue(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return wire::Value();
  if (node.IsScalar()) return wire::Value(node.Scalar());
  if (node.IsSequence()) {
    wire::Array a;
    for (const auto& item : node) a.push_back(AclYamlToValue(item));
    return wire::Value(std::move(a));
  }
  wire::Value m = wire::Value::EmptyMap();
  for (const auto& kv : node)
    m.map()->emplace_back(AclYamlToValue(kv.first), AclYamlToValue(kv.second));
  return m;
}

Result<AuthOptions> ParseAuthOptions(const YAML::Node& root, const std::string& cachedir) {
  AuthOptions o;
  config::YamlMapReader reader(root);
  YAML::Node external;
  if (reader.ReadMap("external_auth", external)) {
    o.external_auth = AclYamlToValue(external);
    for (const auto& [backend, users] : *o.external_auth.map()) {
      if (!users.is_map() && !users.is_nil()) {
        reader.AddProblem("external_auth", "each backend needs a map of users and groups (got " +
                                               (backend.str() ? *backend.str() : std::string("?")) +
                                               ")");
      }
    }
  }
  reader.ReadDuration("token_expire", o.token_expire, 1, 10LL * 365 * 86400);
  reader.ReadString("token_dir", o.token_dir);
  reader.ReadBool("permissive_acl", o.permissive_acl);
  reader.ReadString("auth.pam.service", o.pam_service);
  reader.ReadBool("halite_eauth_auto", o.allow_auto);
  YAML::Node publisher;
  if (reader.ReadMap("publisher_acl", publisher)) {
    o.publisher_acl = AclYamlToValue(publisher);
    for (const auto& [user, entries] : *o.publisher_acl.map()) {
      if (!user.str() || !entries.is_array()) {
        reader.AddProblem("publisher_acl", "each user needs a list of functions (got " +
                                               (user.str() ? *user.str() : user.ToJson()) + ")");
      }
    }
  }
  if (reader.ReadMap("publisher_acl_blacklist", publisher)) {
    o.publisher_acl_blacklist = AclYamlToValue(publisher);
  }
  reader.ReadBool("client_acl_verify", o.client_acl_verify);
  HALITE_RETURN_IF_ERROR(config::ProblemsToStatus(reader.problems()));
  if (o.token_dir.empty()) o.token_dir = cachedir + "/tokens";
  return o;
}

Result<std::unique_ptr<Eauth>> MakeEauth(std::string_view name, const AuthOptions& options) {
  if (name == "pam") return MakePamEauth(options.pam_service);
  if (name == "auto") {
    if (!options.allow_auto) {
      return Error::PermissionDenied(
          "eauth 'auto' accepts any password; it is for tests and needs halite_eauth_auto: True");
    }
    return MakeAutoEauth();
  }
  if (name == "file") {
    FileEauthOptions f;
    const wire::Value* section = options.external_auth.Find("file");
    auto text = [&](const char* key, std::string& out) {
      if (!section) return;
      if (const wire::Value* v = section->Find(key); v && v->str()) out = *v->str();
    };
    auto number = [&](const char* key, int& out) -> Status {
      std::string s;
      text(key, s);
      if (s.empty()) return OkStatus();
      char* end = nullptr;
      long n = std::strtol(s.c_str(), &end, 10);
      if (*end != '\0' || n < 1 || n > 64) {
        return Error::InvalidArgument(std::string("external_auth.file.") + key +
                                      ": a field number from 1 (got '" + s + "')");
      }
      out = static_cast<int>(n);
      return OkStatus();
    };
    text("^filename", f.filename);
    text("^filetype", f.filetype);
    text("^hashtype", f.hashtype);
    text("^field_separator", f.field_separator);
    HALITE_RETURN_IF_ERROR(number("^username_field", f.username_field));
    HALITE_RETURN_IF_ERROR(number("^password_field", f.password_field));
    return MakeFileEauth(f);
  }
  return Error::InvalidArgument("eauth backend '" + std::string(name) +
                                "' is not available (pam, file, auto)");
}

}  // namespace halite::auth
