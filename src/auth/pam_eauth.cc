// Salt's pam eauth (salt/auth/pam.py): pam_authenticate, then pam_acct_mgmt, with the
// password answered to every echo-off prompt and the user name to echo-on ones.
#include <security/pam_appl.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <cstring>

#include "halite/auth/eauth.h"

namespace halite::auth {

namespace {

struct Credentials {
  const std::string* user;
  const std::string* password;
};

char* Dup(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (p) std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

int Converse(int n, const struct pam_message** msg, struct pam_response** resp, void* data) {
  if (n <= 0 || n > PAM_MAX_NUM_MSG) return PAM_CONV_ERR;
  auto* creds = static_cast<Credentials*>(data);
  auto* replies = static_cast<struct pam_response*>(
      std::calloc(static_cast<std::size_t>(n), sizeof(struct pam_response)));
  if (!replies) return PAM_BUF_ERR;
  for (int i = 0; i < n; ++i) {
    switch (msg[i]->msg_style) {
      case PAM_PROMPT_ECHO_OFF:
        replies[i].resp = Dup(*creds->password);
        break;
      case PAM_PROMPT_ECHO_ON:
        replies[i].resp = Dup(*creds->user);
        break;
      default:  // PAM_ERROR_MSG, PAM_TEXT_INFO: nothing to answer
        break;
    }
  }
  *resp = replies;
  return PAM_SUCCESS;
}

class PamEauth : public Eauth {
 public:
  explicit PamEauth(std::string service) : service_(std::move(service)) {}

  // Eauth:
  Result<bool> Authenticate(const std::string& user, const std::string& password) override {
    if (user.empty() || user.find('\0') != std::string::npos ||
        password.find('\0') != std::string::npos) {
      return false;
    }
    Credentials creds{&user, &password};
    struct pam_conv conv {
      &Converse, &creds
    };
    pam_handle_t* handle = nullptr;
    int rc = pam_start(service_.c_str(), user.c_str(), &conv, &handle);
    if (rc != PAM_SUCCESS) {
      return Error::Unavailable("pam_start(" + service_ + "): " + std::to_string(rc));
    }
    rc = pam_authenticate(handle, 0);
    if (rc == PAM_SUCCESS) rc = pam_acct_mgmt(handle, 0);
    const std::string why = rc == PAM_SUCCESS ? "" : pam_strerror(handle, rc);
    pam_end(handle, rc);
    if (rc != PAM_SUCCESS) {
      spdlog::info("pam ({}): {} not authenticated: {}", service_, user, why);
      return false;
    }
    return true;
  }

 private:
  const std::string service_;
};

}  // namespace

std::unique_ptr<Eauth> MakePamEauth(std::string service) {
  return std::make_unique<PamEauth>(std::move(service));
}

}  // namespace halite::auth
