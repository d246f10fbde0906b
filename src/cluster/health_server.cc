#include "halite/cluster/health_server.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace halite::cluster {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// One connection: read a request, answer, close (HAProxy's checks are one-shot).
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HealthServer::HealthFn& health,
          const HealthServer::MetricsFn& metrics)
      : stream_(std::move(socket)), health_(health), metrics_(metrics) {}

  void Start() {
    stream_.expires_after(std::chrono::seconds(5));
    http::async_read(stream_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (!ec) self->Answer();
                     });
  }

 private:
  void Answer() {
    auto response = std::make_shared<http::response<http::string_body>>();
    response->version(request_.version());
    response->keep_alive(false);
    std::string target(request_.target());
    if (request_.method() != http::verb::get && request_.method() != http::verb::head) {
      response->result(http::status::method_not_allowed);
      response->body() = "GET only\n";
    } else if (target == "/health" || target == "/") {
      HealthReport report = health_();
      response->result(report.healthy ? http::status::ok : http::status::service_unavailable);
      response->set(http::field::content_type, "application/json");
      response->body() = report.json + "\n";
    } else if (target == "/metrics") {
      response->result(http::status::ok);
      response->set(http::field::content_type, "text/plain; version=0.0.4");
      response->body() = metrics_();
    } else {
      response->result(http::status::not_found);
      response->body() = "not found\n";
    }
    response->prepare_payload();
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response](beast::error_code, std::size_t) {
                        beast::error_code ignored;
                        self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
                      });
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  const HealthServer::HealthFn& health_;
  const HealthServer::MetricsFn& metrics_;
};

}  // namespace

struct HealthServer::Impl {
  std::string address;
  HealthFn health;
  MetricsFn metrics;
  asio::io_context io{1};
  std::unique_ptr<tcp::acceptor> acceptor;
  std::thread thread;

  void Accept() {
    acceptor->async_accept([this](beast::error_code ec, tcp::socket socket) {
      if (ec) {
        if (ec != asio::error::operation_aborted) {
          spdlog::warn("health endpoint accept: {}", ec.message());
          Accept();
        }
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
