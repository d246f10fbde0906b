// EtcdClient over etcd's v3 JSON gateway: one short HTTP/1.1 request per call, each bounded
// by the options' timeout (connect, write and read together); a watch reads its stream of
// newline-separated messages until the first changes or its wait ends.
#include "halite/cluster/etcd_client.h"

#include <openssl/x509v3.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/stream.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>

#include "halite/wire/encoding.h"

namespace halite::cluster {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using nlohmann::json;

namespace {

constexpr std::size_t kMaxResponseBytes = 16u << 20;

struct Endpoint {
  std::string text;  // as configured, for messages
  tcp::endpoint address;
  std::string host;  // for the Host header
  bool tls = false;
};

Result<Endpoint> ParseEndpoint(const std::string& text) {
  const bool tls = text.rfind("https://", 0) == 0;
  if (!tls && text.rfind("http://", 0) != 0) {
    return Error::InvalidArgument("'" + text + "' must start with http:// or https://");
  }
  std::string rest = text.substr(tls ? 8 : 7);
  if (!rest.empty() && rest.back() == '/') rest.pop_back();
  std::string host;
  std::string port;
  if (!rest.empty() && rest.front() == '[') {
    const auto close = rest.find(']');
    if (close == std::string::npos || close + 1 >= rest.size() || rest[close + 1] != ':') {
      return Error::InvalidArgument("'" + text + "' must be http://[IPv6]:port");
    }
    host = rest.substr(1, close - 1);
    port = rest.substr(close + 2);
  } else {
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos) {
      return Error::InvalidArgument("'" + text + "' has no port (http://IP:2379)");
    }
    host = rest.substr(0, colon);
    port = rest.substr(colon + 1);
  }
  boost::system::error_code ec;
  const auto ip = asio::ip::make_address(host, ec);
  if (ec) {
    return Error::InvalidArgument(
        "'" + text + "': the host must be an IP address (halite never resolves names)");
  }
  int number = 0;
  for (char c : port) {
    if (c < '0' || c > '9' || number > 65535) {
      number = -1;
      break;
    }
    number = number * 10 + (c - '0');
  }
  if (port.empty() || number <= 0 || number > 65535) {
    return Error::InvalidArgument("'" + text + "': bad port '" + port + "'");
  }
  return Endpoint{text, tcp::endpoint(ip, static_cast<unsigned short>(number)),
                  rest.substr(0, rest.size()), tls};
}

std::int64_t ToInt(const json& value) {
  // The gateway writes 64-bit integers as strings ("ID": "7587..."); small ones may be numbers.
  if (value.is_string()) {
    try {
      return std::stoll(value.get<std::string>());
    } catch (...) {
      return 0;
    }
  }
  if (value.is_number_integer()) return value.get<std::int64_t>();
  return 0;
}

// The TLS context for https endpoints: peer verification on, the CA bundle, the client pair.
Result<std::shared_ptr<asio::ssl::context>> MakeTlsContext(const EtcdOptions& options) {
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_client);
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                   asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                   asio::ssl::context::no_tlsv1_1);
  ctx->set_verify_mode(asio::ssl::verify_peer);
  boost::system::error_code ec;
  if (options.cacert.empty()) {
    ctx->set_default_verify_paths(ec);
  } else {
    ctx->load_verify_file(options.cacert, ec);
  }
  if (ec) return Error::InvalidArgument("etcd_cacert '" + options.cacert + "': " + ec.message());
  if (options.cert.empty() != options.key.empty()) {
    return Error::InvalidArgument("etcd_cert and etcd_key go together");
  }
  if (!options.cert.empty()) {
    ctx->use_certificate_chain_file(options.cert, ec);
    if (ec) return Error::InvalidArgument("etcd_cert '" + options.cert + "': " + ec.message());
    ctx->use_private_key_file(options.key, asio::ssl::context::pem, ec);
    if (ec) return Error::InvalidArgument("etcd_key '" + options.key + "': " + ec.message());
  }
  return ctx;
}

// The server's certificate must name the endpoint's address (IP literals only: no names).
Status VerifyAddress(SSL* ssl, const Endpoint& endpoint) {
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  X509_VERIFY_PARAM_set_hostflags(param, 0);
  if (X509_VERIFY_PARAM_set1_ip_asc(param, endpoint.address.address().to_string().c_str()) != 1) {
    return Error::Internal(endpoint.text + ": cannot set the address to verify");
  }
  return OkStatus();
}

class GatewayClient final : public EtcdClient {
 public:
  GatewayClient(std::vector<Endpoint> endpoints, std::chrono::milliseconds timeout,
                std::shared_ptr<asio::ssl::context> tls)
      : endpoints_(std::move(endpoints)), timeout_(timeout), tls_(std::move(tls)) {}

  Result<std::int64_t> GrantLease(std::chrono::seconds ttl) override {
    HALITE_ASSIGN_OR_RETURN(json reply, Call("/v3/lease/grant", json{{"TTL", ttl.count()}}));
    const std::int64_t id = reply.contains("ID") ? ToInt(reply["ID"]) : 0;
    if (id == 0) return Error::Internal("etcd lease grant: no lease id in " + reply.dump());
    return id;
  }

  Result<std::int64_t> KeepAlive(std::int64_t lease) override {
    HALITE_ASSIGN_OR_RETURN(json reply,
                            Call("/v3/lease/keepalive", json{{"ID", std::to_string(lease)}}));
    // A stream of one answer: {"result": {"ID": .., "TTL": ..}}; no TTL: the lease is gone.
    const json& result = reply.contains("result") ? reply["result"] : reply;
    const std::int64_t ttl = result.contains("TTL") ? ToInt(result["TTL"]) : 0;
    if (ttl <= 0) return Error::NotFound("etcd lease " + std::to_string(lease) + " has expired");
    return ttl;
  }

  Status Revoke(std::int64_t lease) override {
    auto reply = Call("/v3/lease/revoke", json{{"ID", std::to_string(lease)}});
    if (!reply.ok()) return reply.error();
    return OkStatus();
  }

  Status Put(const std::string& key, const std::string& value, std::int64_t lease) override {
    json body{{"key", wire::Base64Encode(key)}, {"value", wire::Base64Encode(value)}};
    if (lease != 0) body["lease"] = std::to_string(lease);
    auto reply = Call("/v3/kv/put", body);
    if (!reply.ok()) return reply.error();
    return OkStatus();
  }

  Status Delete(const std::string& key) override {
    auto reply = Call("/v3/kv/deleterange", json{{"key", wire::Base64Encode(key)}});
    if (!reply.ok()) return reply.error();
    return OkStatus();
  }

  Result<std::vector<EtcdKeyValue>> RangePrefix(const std::string& prefix) override {
    HALITE_ASSIGN_OR_RETURN(EtcdRange range, RangePrefixAt(prefix));
    return std::move(range.kvs);
  }

  Result<EtcdRange> RangePrefixAt(const std::string& prefix) override {
    HALITE_ASSIGN_OR_RETURN(json reply,
                            Call("/v3/kv/range", json{{"key", wire::Base64Encode(prefix)},
                                                      {"range_end", RangeEnd(prefix)}}));
    EtcdRange range;
    HALITE_ASSIGN_OR_RETURN(range.kvs, KeyValues(reply));
    range.revision = Revision(reply);
    return range;
  }

  Result<EtcdWatchBatch> WatchRange(const std::string& from, const std::string& to,
                                    std::int64_t start_revision,
                                    std::chrono::milliseconds wait) override {
    const std::string body = json{{"create_request",
                                   {{"key", wire::Base64Encode(from)},
                                    {"range_end", wire::Base64Encode(to)},
                                    {"start_revision", std::to_string(start_revision)}}}}
                                 .dump();
    std::string failures;
    for (std::size_t n = 0; n < endpoints_.size(); ++n) {
      const std::size_t i = (current_ + n) % endpoints_.size();
      auto batch = WatchOne(endpoints_[i], body, start_revision, wait);
      if (batch.ok()) {
        current_ = i;
        return batch;
      }
      if (batch.error().code != ErrorCode::kUnavailable) return batch.error();
      failures += (failures.empty() ? "" : "; ") + batch.error().message;
    }
    return Error::Unavailable("etcd /v3/watch: no endpoint answered: " + failures);
  }

  std::unique_ptr<EtcdClient> Clone() const override {
    return std::make_unique<GatewayClient>(endpoints_, timeout_, tls_);
  }

  void InterruptWatches() override {
    std::lock_guard lock(watch_mu_);
    interrupted_ = true;
    if (watch_io_ != nullptr) watch_io_->stop();
  }

  Result<EtcdKeyValue> Get(const std::string& key) override {
    HALITE_ASSIGN_OR_RETURN(json reply,
                            Call("/v3/kv/range", json{{"key", wire::Base64Encode(key)}}));
    HALITE_ASSIGN_OR_RETURN(std::vector<EtcdKeyValue> kvs, KeyValues(reply));
    if (kvs.empty()) return Error::NotFound("etcd: no key " + key);
    return std::move(kvs.front());
  }

  Result<bool> PutIfRevision(const std::string& key, const std::string& value,
                             std::int64_t expected) override {
    const json put{
        {"request_put", {{"key", wire::Base64Encode(key)}, {"value", wire::Base64Encode(value)}}}};
    return Txn(key, expected, put);
  }

  Result<bool> DeleteIfRevision(const std::string& key, std::int64_t expected) override {
    if (expected <= 0) return Error::InvalidArgument("etcd delete: no revision to compare");
    const json del{{"request_delete_range", {{"key", wire::Base64Encode(key)}}}};
    return Txn(key, expected, del);
  }

 private:
  // range_end for every key under `prefix`: the prefix with its last byte incremented
  // (etcd's "prefix" convention), base64.
  static std::string RangeEnd(const std::string& prefix) {
    return wire::Base64Encode(PrefixEnd(prefix));
  }

  static std::int64_t Revision(const json& reply) {
    if (!reply.contains("header") || !reply["header"].is_object()) return 0;
    const json& header = reply["header"];
    return header.contains("revision") ? ToInt(header["revision"]) : 0;
  }

  // If `key`'s mod_revision equals `expected` then `op`; whether it did. (A key that does not
  // exist has mod_revision 0 in etcd's comparisons.)
  Result<bool> Txn(const std::string& key, std::int64_t expected, const json& op) {
    const json compare{{"key", wire::Base64Encode(key)},
                       {"target", "MOD"},
                       {"result", "EQUAL"},
                       {"mod_revision", std::to_string(expected)}};
    HALITE_ASSIGN_OR_RETURN(json reply, Call("/v3/kv/txn", json{{"compare", json::array({compare})},
                                                                {"success", json::array({op})}}));
    // The gateway leaves `succeeded` out when it is false.
    return reply.contains("succeeded") && reply["succeeded"].is_boolean() &&
           reply["succeeded"].get<bool>();
  }

  static Result<std::vector<EtcdKeyValue>> KeyValues(const json& reply) {
    std::vector<EtcdKeyValue> out;
    if (!reply.contains("kvs")) return out;  // none: the gateway leaves the field out
    if (!reply["kvs"].is_array()) return Error::Internal("etcd range: kvs is not a list");
    for (const json& kv : reply["kvs"]) {
      if (!kv.is_object() || !kv.contains("key") || !kv["key"].is_string()) {
        return Error::Internal("etcd range: an entry without a key");
      }
      EtcdKeyValue entry;
      HALITE_ASSIGN_OR_RETURN(entry.key, wire::Base64Decode(kv["key"].get<std::string>()));
      if (kv.contains("value") && kv["value"].is_string()) {
        HALITE_ASSIGN_OR_RETURN(entry.value, wire::Base64Decode(kv["value"].get<std::string>()));
      }
      if (kv.contains("lease")) entry.lease = ToInt(kv["lease"]);
      if (kv.contains("mod_revision")) entry.mod_revision = ToInt(kv["mod_revision"]);
      out.push_back(std::move(entry));
    }
    return out;
  }

  // POSTs `body` to `path` on the endpoints in turn until one answers.
  Result<json> Call(const std::string& path, const json& body) {
    std::string failures;
    for (std::size_t n = 0; n < endpoints_.size(); ++n) {
      const std::size_t i = (current_ + n) % endpoints_.size();
      auto reply = CallOne(endpoints_[i], path, body.dump());
      if (reply.ok()) {
        current_ = i;
        return reply;
      }
      if (reply.error().code != ErrorCode::kUnavailable) return reply.error();
      failures += (failures.empty() ? "" : "; ") + reply.error().message;
    }
    return Error::Unavailable("etcd " + path + ": no endpoint answered: " + failures);
  }

  Result<json> CallOne(const Endpoint& endpoint, const std::string& path, std::string body) {
    asio::io_context io;
    beast::tcp_stream tcp_stream(io);
    tcp_stream.expires_after(timeout_);
    beast::error_code ec = asio::error::would_block;
    auto wait = [&](const char* what) -> Status {
      io.restart();
      io.run();
      if (ec) {
        const std::string why = ec == beast::error::timeout
                                    ? "no answer within " + std::to_string(timeout_.count()) + " ms"
                                    : ec.message();
        return Error::Unavailable(endpoint.text + ": " + what + ": " + why);
      }
      return OkStatus();
    };
    const http::request<http::string_body> request = Request(endpoint, path, std::move(body));
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBytes);
    auto exchange = [&](auto& stream) -> Status {
      ec = asio::error::would_block;
      http::async_write(stream, request, [&](beast::error_code e, std::size_t) { ec = e; });
      HALITE_RETURN_IF_ERROR(wait("send"));
      beast::flat_buffer buffer;
      ec = asio::error::would_block;
      http::async_read(stream, buffer, parser, [&](beast::error_code e, std::size_t) { ec = e; });
      return wait("read");
    };
    HALITE_RETURN_IF_ERROR(OverStream(endpoint, tcp_stream, ec, wait, exchange));
    const auto& response = parser.get();
    json reply = json::parse(response.body(), nullptr, /*allow_exceptions=*/false);
    if (response.result() != http::status::ok) {
      std::string why = reply.is_object() && reply.contains("error") && reply["error"].is_string()
                            ? reply["error"].get<std::string>()
                            : response.body().substr(0, 200);
      return Error::Internal("etcd " + path + " at " + endpoint.text + ": HTTP " +
                             std::to_string(response.result_int()) + ": " + why);
    }
    if (!reply.is_object()) {
      return Error::Internal("etcd " + path + " at " + endpoint.text + ": not a JSON object");
    }
    if (reply.contains("error")) {  // a streaming call's error arrives with status 200
      return Error::Internal("etcd " + path + " at " + endpoint.text + ": " + reply.dump());
    }
    return reply;
  }

  // One watch on one endpoint: the stream of newline-separated JSON messages
  // ({"result": {...}}) read until a message with events (or a cancellation) or `wait`.
  Result<EtcdWatchBatch> WatchOne(const Endpoint& endpoint, const std::string& body,
                                  std::int64_t start_revision, std::chrono::milliseconds wait) {
    asio::io_context io;
    {
      std::lock_guard lock(watch_mu_);
      if (interrupted_) return Error::Unavailable("etcd watch interrupted");
      watch_io_ = &io;
    }
    struct Unregister {
      GatewayClient* self;
      ~Unregister() {
        std::lock_guard lock(self->watch_mu_);
        self->watch_io_ = nullptr;
      }
    } unregister{this};
    beast::tcp_stream tcp_stream(io);
    tcp_stream.expires_after(timeout_);
    beast::error_code ec = asio::error::would_block;
    auto run = [&]() {
      std::unique_lock lock(watch_mu_);
      if (interrupted_) {
        ec = asio::error::operation_aborted;
        return;
      }
      io.restart();  // under the lock, so that a stop() from now on is not undone
      lock.unlock();
      io.run();
      // Stopped by InterruptWatches with the operation still pending.
      if (ec == asio::error::would_block) ec = asio::error::operation_aborted;
    };
    auto failed = [&](const char* what) {
      const std::string why = ec == beast::error::timeout
                                  ? "no answer within " + std::to_string(timeout_.count()) + " ms"
                                  : ec.message();
      return Error::Unavailable(endpoint.text + ": watch: " + what + ": " + why);
    };
    auto step = [&](const char* what) -> Status {
      run();
      if (ec) return failed(what);
      return OkStatus();
    };
    const http::request<http::string_body> request = Request(endpoint, "/v3/watch", body);
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBytes);
    auto exchange = [&](auto& stream) -> Result<EtcdWatchBatch> {
      ec = asio::error::would_block;
      http::async_write(stream, request, [&](beast::error_code e, std::size_t) { ec = e; });
      HALITE_RETURN_IF_ERROR(step("send"));
      beast::flat_buffer buffer;
      ec = asio::error::would_block;
      http::async_read_header(stream, buffer, parser,
                              [&](beast::error_code e, std::size_t) { ec = e; });
      HALITE_RETURN_IF_ERROR(step("read"));
      if (parser.get().result() != http::status::ok) {
        return Error::Internal("etcd /v3/watch at " + endpoint.text + ": HTTP " +
                               std::to_string(parser.get().result_int()));
      }
      EtcdWatchBatch batch;
      batch.next_revision = start_revision;
      const auto deadline = std::chrono::steady_clock::now() + wait;
      std::size_t consumed = 0;
      for (;;) {
        const std::string& text = parser.get().body();
        for (auto nl = text.find('\n', consumed); nl != std::string::npos;
             nl = text.find('\n', consumed)) {
          json message = json::parse(text.substr(consumed, nl - consumed), nullptr,
                                     /*allow_exceptions=*/false);
          consumed = nl + 1;
          if (!message.is_object() || !message.contains("result") ||
              !message["result"].is_object()) {
            return Error::Internal("etcd /v3/watch at " + endpoint.text + ": " +
                                   message.dump().substr(0, 200));
          }
          const json& result = message["result"];
          if (result.contains("canceled") && result["canceled"] == true) {
            if (result.contains("compact_revision")) {
              batch.compacted = true;
              return batch;
            }
            return Error::Internal("etcd /v3/watch at " + endpoint.text +
                                   ": canceled: " + result.dump().substr(0, 200));
          }
          if (!result.contains("events") || !result["events"].is_array()) continue;  // created
          for (const json& event : result["events"]) {
            if (!event.is_object() || !event.contains("kv") || !event["kv"].is_object() ||
                !event["kv"].contains("key") || !event["kv"]["key"].is_string()) {
              return Error::Internal("etcd /v3/watch: an event without a key");
            }
            const json& kv = event["kv"];
            EtcdEvent e;
            e.deleted = event.contains("type") && event["type"] == "DELETE";
            HALITE_ASSIGN_OR_RETURN(e.kv.key, wire::Base64Decode(kv["key"].get<std::string>()));
            if (kv.contains("value") && kv["value"].is_string()) {
              HALITE_ASSIGN_OR_RETURN(e.kv.value,
                                      wire::Base64Decode(kv["value"].get<std::string>()));
            }
            if (kv.contains("lease")) e.kv.lease = ToInt(kv["lease"]);
            if (kv.contains("mod_revision")) e.kv.mod_revision = ToInt(kv["mod_revision"]);
            batch.next_revision = std::max(batch.next_revision, e.kv.mod_revision + 1);
            batch.events.push_back(std::move(e));
          }
          if (!batch.events.empty()) return batch;
        }
        if (parser.is_done()) return Error::Unavailable(endpoint.text + ": watch stream ended");
        const auto left = deadline - std::chrono::steady_clock::now();
        if (left <= std::chrono::steady_clock::duration::zero()) return batch;  // no change
        tcp_stream.expires_after(left);
        ec = asio::error::would_block;
        http::async_read_some(stream, buffer, parser,
                              [&](beast::error_code e, std::size_t) { ec = e; });
        run();
        if (ec == beast::error::timeout) return batch;  // waited: nothing changed
        if (ec == http::error::body_limit) {
          return Error::ResourceExhausted("etcd /v3/watch: more changes than one read holds");
        }
        if (ec) return failed("read");
      }
    };
    return OverStream(endpoint, tcp_stream, ec, step, exchange);
  }

  static http::request<http::string_body> Request(const Endpoint& endpoint, const std::string& path,
                                                  std::string body) {
    http::request<http::string_body> request{http::verb::post, path, 11};
    request.set(http::field::host, endpoint.host);
    request.set(http::field::content_type, "application/json");
    request.body() = std::move(body);
    request.prepare_payload();
    return request;
  }

  // Connects `tcp_stream` to the endpoint, shakes hands over TLS for an https one, runs
  // `exchange` over the stream (a Status or a Result) and shuts the socket down. `step(what)`
  // runs the io_context until the pending operation set `ec`, and says what failed.
  template <class Step, class Fn>
  auto OverStream(const Endpoint& endpoint, beast::tcp_stream& tcp_stream, beast::error_code& ec,
                  Step& step, Fn& exchange) -> decltype(exchange(tcp_stream)) {
    tcp_stream.async_connect(endpoint.address, [&](beast::error_code e) { ec = e; });
    HALITE_RETURN_IF_ERROR(step("connect"));
    auto shut = [&](auto result) {
      beast::error_code ignored;
      tcp_stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
      return result;
    };
    if (!endpoint.tls) return shut(exchange(tcp_stream));
    if (!tls_) return Error::InvalidArgument(endpoint.text + ": no TLS context");
    asio::ssl::stream<beast::tcp_stream&> stream(tcp_stream, *tls_);
    HALITE_RETURN_IF_ERROR(VerifyAddress(stream.native_handle(), endpoint));
    ec = asio::error::would_block;
    stream.async_handshake(asio::ssl::stream_base::client, [&](beast::error_code e) { ec = e; });
    HALITE_RETURN_IF_ERROR(step("TLS handshake"));
    return shut(exchange(stream));
  }

  const std::vector<Endpoint> endpoints_;
  const std::chrono::milliseconds timeout_;
  const std::shared_ptr<asio::ssl::context> tls_;  // null without https endpoints
  std::mutex watch_mu_;
  asio::io_context* watch_io_ = nullptr;  // guarded by watch_mu_: the watch running now
  bool interrupted_ = false;              // guarded by watch_mu_
  std::size_t current_ = 0;
};

}  // namespace

std::string EtcdClient::PrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (end.empty()) return std::string(1, '\0');  // every key
  end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

Status CheckEtcdEndpoint(const std::string& endpoint) {
  auto parsed = ParseEndpoint(endpoint);
  if (!parsed.ok()) return parsed.error();
  return OkStatus();
}

Result<std::unique_ptr<EtcdClient>> MakeEtcdClient(EtcdOptions options) {
  if (options.endpoints.empty()) return Error::InvalidArgument("no etcd endpoints");
  if (options.timeout.count() <= 0) return Error::InvalidArgument("etcd timeout must be > 0");
  std::vector<Endpoint> endpoints;
  bool any_tls = false;
  for (const std::string& text : options.endpoints) {
    HALITE_ASSIGN_OR_RETURN(Endpoint endpoint, ParseEndpoint(text));
    any_tls = any_tls || endpoint.tls;
    endpoints.push_back(std::move(endpoint));
  }
  std::shared_ptr<asio::ssl::context> tls;
  if (any_tls) {
    HALITE_ASSIGN_OR_RETURN(tls, MakeTlsContext(options));
  } else if (!options.cert.empty() || !options.cacert.empty()) {
    return Error::InvalidArgument(
        "etcd TLS files are set but no endpoint is https://: the keys would cross in the clear");
  }
  return std::unique_ptr<EtcdClient>(
      new GatewayClient(std::move(endpoints), options.timeout, std::move(tls)));
}

}  // namespace halite::cluster
