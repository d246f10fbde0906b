#include "halite/cluster/health_server.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

#include "halite/common/logging.h"

namespace halite::cluster {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::chrono::milliseconds kAcceptRetry{100};

using Parser = http::request_parser<http::string_body>;

void ConfigureParser(Parser& parser) {
  parser.header_limit(static_cast<std::uint32_t>(kHealthMaxHeader));
  parser.body_limit(kHealthMaxBody);
}

HealthRequest ToHealthRequest(const http::request<http::string_body>& request) {
  return HealthRequest{std::string(request.method_string()), std::string(request.target()),
                       request.version()};
}

// One connection: read a request, answer, close (HAProxy's checks are one-shot).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HealthServer::HealthFn& health,
          const HealthServer::MetricsFn& metrics)
      : stream_(std::move(socket)), health_(health), metrics_(metrics) {
    ConfigureParser(parser_);
  }

  void Start() {
    stream_.expires_after(std::chrono::seconds(5));
    http::async_read(stream_, buffer_, parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (!ec) self->Answer();
                     });
  }

 private:
  void Answer() {
    const auto& request = parser_.get();
    HealthResponse answer = HealthServer::Route(ToHealthRequest(request), health_, metrics_);
    auto response = std::make_shared<http::response<http::string_body>>();
    response->version(request.version());
    response->keep_alive(false);
    response->result(static_cast<unsigned>(answer.status));
    if (!answer.content_type.empty()) {
      response->set(http::field::content_type, answer.content_type);
    }
    response->body() = std::move(answer.body);
    response->prepare_payload();
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response](beast::error_code, std::size_t) {
                        beast::error_code ignored;
                        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  Parser parser_;
  const HealthServer::HealthFn& health_;
  const HealthServer::MetricsFn& metrics_;
};

}  // namespace

Result<HealthRequest> ParseHealthRequest(std::string_view bytes) {
  Parser parser;
  ConfigureParser(parser);
  parser.eager(true);
  beast::error_code ec;
  std::size_t used = 0;
  // Feed what is there as Beast's read loop does: again after progress, but after need_more
  // only with more bytes (a precondition of put), which the input does not have; never
  // with no bytes at all.
  while (!parser.is_done() && used < bytes.size()) {
    const std::size_t n = parser.put(asio::buffer(bytes.data() + used, bytes.size() - used), ec);
    used += n;
    if (ec == http::error::need_more) {
      ec = {};
      break;
    }
    if (ec || n == 0) break;
  }
  if (!ec && !parser.is_done()) {
    // End of input, as when the client shuts down its side: incomplete unless nothing more
    // was due. put_eof may only be called once the parser has seen a byte.
    if (parser.got_some()) {
      parser.put_eof(ec);
    } else {
      ec = http::error::partial_message;
    }
    if (!ec && !parser.is_done()) ec = http::error::partial_message;
  }
  if (ec == http::error::header_limit || ec == http::error::body_limit ||
      ec == http::error::buffer_overflow) {
    return Error::ResourceExhausted("health request: " + ec.message());
  }
  if (ec) return Error::InvalidArgument("health request: " + ec.message());
  return ToHealthRequest(parser.get());
}

HealthResponse HealthServer::Route(const HealthRequest& request, const HealthFn& health,
                                   const MetricsFn& metrics) {
  if (request.method != "GET" && request.method != "HEAD") {
    return {405, "", "GET only\n"};
  }
  if (request.target == "/health" || request.target == "/") {
    HealthReport report = health();
    return {report.healthy ? 200 : 503, "application/json", report.json + "\n"};
  }
  if (request.target == "/metrics") return {200, "text/plain; version=0.0.4", metrics()};
  return {404, "", "not found\n"};
}

struct HealthServer::Impl {
  std::string address;
  HealthFn health;
  MetricsFn metrics;
  asio::io_context io{1};
  std::unique_ptr<tcp::acceptor> acceptor;
  std::thread thread;

  // A failed accept (EMFILE when the master is out of descriptors) is retried after
  // kAcceptRetry, not at once: the connection waits in the backlog, and an immediate retry
  // would spin and log as fast as it fails.
  asio::steady_timer accept_retry{io};
  LogLimiter accept_log{std::chrono::seconds(10)};

  void Accept() {
    acceptor->async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) {
        if (ec == asio::error::operation_aborted) return;
        if (auto held = accept_log.Pass()) {
          spdlog::warn(
              "health endpoint accept: {} ({} more since the last line); retrying in {} ms",
              ec.message(), *held, kAcceptRetry.count());
        }
        accept_retry.expires_after(kAcceptRetry);
        accept_retry.async_wait([this](beast::error_code wait_ec) {
          if (!wait_ec) Accept();
        });
        return;
      }
      std::make_shared<Session>(std::move(socket), health, metrics)->Start();
      Accept();
    });
  }
};

HealthServer::HealthServer(std::string address, std::uint16_t port, HealthFn health,
                           MetricsFn metrics)
    : impl_(std::make_unique<Impl>()), port_(port) {
  impl_->address = std::move(address);
  impl_->health = std::move(health);
  impl_->metrics = std::move(metrics);
}

HealthServer::~HealthServer() { Stop(); }

Status HealthServer::Start() {
  beast::error_code ec;
  auto addr = asio::ip::make_address(impl_->address, ec);
  if (ec) return Error::InvalidArgument("health endpoint address '" + impl_->address + "'");
  auto acceptor = std::make_unique<tcp::acceptor>(impl_->io);
  tcp::endpoint endpoint(addr, port_);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Error::Unavailable("health endpoint cannot listen on " + impl_->address + ":" +
                              std::to_string(port_) + ": " + ec.message());
  }
  port_ = acceptor->local_endpoint().port();
  impl_->acceptor = std::move(acceptor);
  impl_->Accept();
  impl_->thread = std::thread([this] {
    pthread_setname_np(pthread_self(), "health");
    impl_->io.run();
  });
  return OkStatus();
}

void HealthServer::Stop() {
  if (!impl_->thread.joinable()) return;
  asio::post(impl_->io, [this] {
    beast::error_code ignored;
    if (impl_->acceptor) impl_->acceptor->close(ignored);
    impl_->io.stop();
  });
  impl_->thread.join();
}

}  // namespace halite::cluster
