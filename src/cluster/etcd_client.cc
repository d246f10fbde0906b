// EtcdClient over etcd's v3 JSON gateway: one short HTTP/1.1 request per call, each bounded
// by the options' timeout (connect, write and read together).
#include "halite/cluster/etcd_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
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
};

Result<Endpoint> ParseEndpoint(const std::string& text) {
  constexpr std::string_view kScheme = "http://";
  if (text.rfind("https://", 0) == 0) {
    return Error::InvalidArgument("'" + text + "': https (TLS) endpoints are not supported yet");
  }
  if (text.rfind(kScheme, 0) != 0) {
    return Error::InvalidArgument("'" + text + "' must start with http://");
  }
  std::string rest = text.substr(kScheme.size());
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
                  rest.substr(0, rest.size())};
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

class GatewayClient final : public EtcdClient {
 public:
  GatewayClient(std::vector<Endpoint> endpoints, std::chrono::milliseconds timeout)
      : endpoints_(std::move(endpoints)), timeout_(timeout) {}

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
    // range_end: the prefix with its last byte incremented (etcd's "prefix" convention).
    std::string end = prefix;
    while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
    if (end.empty()) {
      end = std::string(1, '\0');
    } else {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
    }
    HALITE_ASSIGN_OR_RETURN(json reply,
                            Call("/v3/kv/range", json{{"key", wire::Base64Encode(prefix)},
                                                      {"range_end", wire::Base64Encode(end)}}));
    return KeyValues(reply);
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
    beast::tcp_stream stream(io);
    stream.expires_after(timeout_);
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
    stream.async_connect(endpoint.address, [&](beast::error_code e) { ec = e; });
    HALITE_RETURN_IF_ERROR(wait("connect"));
    http::request<http::string_body> request{http::verb::post, path, 11};
    request.set(http::field::host, endpoint.host);
    request.set(http::field::content_type, "application/json");
    request.body() = std::move(body);
    request.prepare_payload();
    ec = asio::error::would_block;
    http::async_write(stream, request, [&](beast::error_code e, std::size_t) { ec = e; });
    HALITE_RETURN_IF_ERROR(wait("send"));
    beast::flat_buffer buffer;
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBytes);
    ec = asio::error::would_block;
    http::async_read(stream, buffer, parser, [&](beast::error_code e, std::size_t) { ec = e; });
    HALITE_RETURN_IF_ERROR(wait("read"));
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
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

  const std::vector<Endpoint> endpoints_;
  const std::chrono::milliseconds timeout_;
  std::size_t current_ = 0;
};

}  // namespace

Status CheckEtcdEndpoint(const std::string& endpoint) {
  auto parsed = ParseEndpoint(endpoint);
  if (!parsed.ok()) return parsed.error();
  return OkStatus();
}

Result<std::unique_ptr<EtcdClient>> MakeEtcdClient(EtcdOptions options) {
  if (options.endpoints.empty()) return Error::InvalidArgument("no etcd endpoints");
  if (options.timeout.count() <= 0) return Error::InvalidArgument("etcd timeout must be > 0");
  std::vector<Endpoint> endpoints;
  for (const std::string& text : options.endpoints) {
    HALITE_ASSIGN_OR_RETURN(Endpoint endpoint, ParseEndpoint(text));
    endpoints.push_back(std::move(endpoint));
  }
  return std::unique_ptr<EtcdClient>(new GatewayClient(std::move(endpoints), options.timeout));
}

}  // namespace halite::cluster
