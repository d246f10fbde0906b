#include "halite/minion/options.h"

#include <vector>

#include "halite/wire/rsa.h"

namespace halite::minion {

Status ValidateOptions(const MinionOptions& o) {
  std::vector<std::string> problems;
  auto need = [&](bool ok, std::string message) {
    if (!ok) problems.push_back(std::move(message));
  };
  need(!o.id.empty(), "id: must not be empty");
  need(o.id.find_first_of(std::string("/\\\0", 3)) == std::string::npos,
       "id: must not contain '/', '\\' or NUL (got " + o.id + ")");
  need(!o.master_ip.empty(), "master_ip: must not be empty");
  need(o.master_port != 0, "master_port: must not be 0");
  need(!o.pki_dir.empty(), "pki_dir: must not be empty");
  need(o.keysize >= 1024 && o.keysize <= 16384, "keysize: must be 1024..16384");
  need(o.acceptance_wait_time.count() > 0, "acceptance_wait_time: must be > 0");
  need(o.acceptance_wait_time_max.count() >= 0, "acceptance_wait_time_max: must be >= 0");
  need(o.auth_timeout.count() > 0, "auth_timeout: must be > 0");
  need(o.auth_tries > 0, "auth_tries: must be > 0");
  need(o.random_reauth_delay.count() >= 0, "random_reauth_delay: must be >= 0");
  need(o.request_timeout.count() > 0, "request_timeout: must be > 0");
  need(o.request_tries > 0, "request_tries: must be > 0");
  need(o.return_retry_timer.count() > 0, "return_retry_timer: must be > 0");
  need(o.return_retry_tries > 0, "return_retry_tries: must be > 0");
  need(o.recon_default.count() >= 0 && o.recon_max.count() >= 0,
       "recon_default, recon_max: must be >= 0");
  need(wire::ParseEncAlgo(o.encryption_algorithm).ok(),
       "encryption_algorithm: must be OAEP-SHA1 or OAEP-SHA224 (got " + o.encryption_algorithm +
           ")");
  need(wire::ParseSigAlgo(o.signing_algorithm).ok(),
       "signing_algorithm: must be PKCS1v15-SHA1 or PKCS1v15-SHA224 (got " + o.signing_algorithm +
           ")");
  need(o.request_protocol_version == 2 || o.request_protocol_version == 3,
       "request_protocol_version: must be 2 or 3");
  need(o.grains.is_map(), "grains: must be a map");
  need(o.job_timeout.count() >= 0, "job_timeout: must be >= 0");
  need(o.function_latency.count() >= 0, "function_latency: must be >= 0");
  need(o.request_idle_close.count() >= 0, "request_idle_close: must be >= 0");
  if (problems.empty()) return OkStatus();
  std::string message;
  for (const auto& p : problems) {
    if (!message.empty()) message += '\n';
    message += p;
  }
  return Error::InvalidArgument(std::move(message));
}

}  // namespace halite::minion
