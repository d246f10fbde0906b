// Salt's file eauth (salt/auth/file.py) for ^filetype text: one "user<sep>password" line per
// user (fields numbered from 1), the password as written (^hashtype plaintext) or as the hex
// digest of a hashlib algorithm. The file is re-read on every login, as Salt does.
#include <openssl/evp.h>
#include <spdlog/spdlog.h>

#include "halite/auth/eauth.h"
#include "halite/keys/fs.h"
#include "halite/wire/encoding.h"

namespace halite::auth {

namespace {

Result<std::string> HexDigest(std::string_view algorithm, std::string_view data) {
  const EVP_MD* md = EVP_get_digestbyname(std::string(algorithm).c_str());
  if (!md) return Error::InvalidArgument("unknown ^hashtype '" + std::string(algorithm) + "'");
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), out, &len, md, nullptr) != 1) {
    return Error::Internal("digest failed");
  }
  return wire::HexEncode(std::string_view(reinterpret_cast<const char*>(out), len));
}

std::vector<std::string> Split(std::string_view line, std::string_view sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t at = sep.empty() ? std::string_view::npos : line.find(sep, start);
    if (at == std::string_view::npos) {
      out.emplace_back(line.substr(start));
      return out;
    }
    out.emplace_back(line.substr(start, at - start));
    start = at + sep.size();
  }
}

class FileEauth : public Eauth {
 public:
  explicit FileEauth(FileEauthOptions options) : options_(std::move(options)) {}

  // Eauth:
  Result<bool> Authenticate(const std::string& user, const std::string& password) override {
    auto text = keys::ReadFile(options_.filename);
    if (!text.ok()) {
      spdlog::error("eauth file: cannot read {}: {}", options_.filename, text.error().message);
      return Error::Unavailable("eauth file unreadable");
    }
    std::string given = password;
    if (options_.hashtype != "plaintext") {
      HALITE_ASSIGN_OR_RETURN(given, HexDigest(options_.hashtype, password));
    }
    std::size_t start = 0;
    while (start < text->size()) {
      std::size_t end = text->find('\n', start);
      if (end == std::string::npos) end = text->size();
      std::string_view line(text->data() + start, end - start);
      start = end + 1;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (line.empty() || line[0] == '#') continue;
      auto fields = Split(line, options_.field_separator);
      const auto u = static_cast<std::size_t>(options_.username_field - 1);
      const auto p = static_cast<std::size_t>(options_.password_field - 1);
      if (fields.size() <= std::max(u, p) || fields[u] != user) continue;
      return wire::ConstantTimeEquals(fields[p], given);
    }
    return false;
  }

 private:
  const FileEauthOptions options_;
};

}  // namespace

Result<std::unique_ptr<Eauth>> MakeFileEauth(const FileEauthOptions& options) {
  if (options.filename.empty()) {
    return Error::InvalidArgument("external_auth.file: ^filename is required");
  }
  if (options.filetype != "text") {
    return Error::InvalidArgument("external_auth.file: ^filetype '" + options.filetype +
                                  "' is not supported (text)");
  }
  if (options.hashtype != "plaintext") {
    HALITE_RETURN_IF_ERROR(HexDigest(options.hashtype, ""));
  }
  return std::unique_ptr<Eauth>(std::make_unique<FileEauth>(options));
}

}  // namespace halite::auth
