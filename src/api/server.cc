// The Beast adapter: every Boost exception of the HTTP and TLS code stops in this file.
#include "halite/api/server.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <deque>
#include <optional>
#include <thread>

#include "halite/api/event_bus.h"
#include "halite/api/http_codec.h"
#include "halite/api/netapi.h"
#include "halite/common/logging.h"

namespace halite::api {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

constexpr std::uint32_t kMaxHeader = 16 * 1024;

// Requests per client address: a token bucket. Touched on the io thread only.
class RateLimiter {
 public:
  RateLimiter(double per_second, double burst) : rate_(per_second), burst_(burst) {}
  bool Allow(const std::string& key) {
    const auto now = std::chrono::steady_clock::now();
    if (buckets_.size() > 100000) buckets_.clear();
    auto [it, fresh] = buckets_.try_emplace(key, Bucket{burst_, now});
    Bucket& b = it->second;
    if (!fresh) {
      const double elapsed = std::chrono::duration<double>(now - b.at).count();
      b.tokens = std::min(burst_, b.tokens + elapsed * rate_);
      b.at = now;
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

 private:
  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point at;
  };
  const double rate_;
  const double burst_;
  std::map<std::string, Bucket> buckets_;
};

}  // namespace

// A failed accept is tried again after this (the connection waits in the backlog).
constexpr std::chrono::milliseconds kAcceptRetry{100};

struct ApiServer::Impl {
  Impl(const config::MasterConfig& c, ApiOptions o, auth::Authenticator& a)
      : config(c),
        options(std::move(o)),
        authenticator(a),
        netapi(config, options, authenticator),
        router(config, options, authenticator, netapi, counters),
        bus(config.sock_dir, config.cachedir, static_cast<std::size_t>(config.max_event_size)),
        pool(static_cast<std::size_t>(options.worker_threads)),
        limiter(options.rate_limit_per_second, options.rate_limit_burst) {}

  const config::MasterConfig& config;
  const ApiOptions options;
  auth::Authenticator& authenticator;
  ApiCounters counters;
  Netapi netapi;
  Router router;
  EventBus bus;
  asio::io_context io{1};
  asio::thread_pool pool;
  std::optional<ssl::context> tls;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::thread thread;
  std::atomic<int> connections{0};
  RateLimiter limiter;  // io thread only
  std::uint16_t port = 0;
  asio::steady_timer accept_retry{io};
  LogLimiter accept_log{std::chrono::seconds(10)};

  void Accept();
};

namespace {

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(Stream stream, ApiServer::Impl& server, std::string remote_ip)
      : stream_(std::move(stream)),
        server_(server),
        remote_ip_(std::move(remote_ip)),
        timer_(server.io) {
    server_.connections++;
  }
  ~Session() {
    if (subscription_) server_.bus.Unsubscribe(subscription_);
    if (streaming_) server_.counters.events_clients--;
    server_.connections--;
  }

  void Start() {
    if constexpr (std::is_same_v<Stream, beast::tcp_stream>) {
      Read();
    } else {
      beast::get_lowest_layer(stream_).expires_after(std::chrono::seconds(30));
      stream_.async_handshake(
          ssl::stream_base::server, [self = this->shared_from_this()](beast::error_code ec) {
            if (ec) {
              spdlog::debug("TLS handshake from {}: {}", self->remote_ip_, ec.message());
              return;
            }
            self->Read();
          });
    }
  }

 private:
  void Read() {
    parser_.emplace();
    parser_->header_limit(kMaxHeader);
    parser_->body_limit(server_.options.max_request_body_size);
    beast::get_lowest_layer(stream_).expires_after(server_.options.idle_timeout);
    http::async_read(
        stream_, buffer_, *parser_,
        [self = this->shared_from_this()](beast::error_code ec, std::size_t) { self->OnRead(ec); });
  }

  void OnRead(beast::error_code ec) {
    if (ec == http::error::body_limit) {
      spdlog::warn("request from {}: body over max_request_body_size", remote_ip_);
      return Send(Page(413, "Request Entity Too Large"), false);
    }
    if (ec == http::error::header_limit || ec == http::error::bad_target ||
        ec == http::error::bad_method || ec == http::error::bad_version ||
        ec == http::error::bad_field || ec == http::error::bad_value ||
        ec == http::error::bad_chunk || ec == http::error::bad_content_length) {
      spdlog::warn("request from {}: {}", remote_ip_, ec.message());
      return Send(Page(400, "Malformed request: " + ec.message()), false);
    }
    if (ec) return;  // closed, timed out
    const auto& msg = parser_->get();
    keep_alive_ = msg.keep_alive();
    Request req;
    req.method = std::string(msg.method_string());
    const auto raw_target = msg.target();
    std::string_view target(raw_target.data(), raw_target.size());
    const std::size_t q = target.find('?');
    req.path = UrlDecode(target.substr(0, q));
    while (req.path.size() > 1 && req.path.back() == '/') req.path.pop_back();
    if (q != std::string_view::npos) req.query = ParseQuery(target.substr(q + 1));
    for (const auto& field : msg) {
      if (req.headers.size() < 100) {
        req.headers.emplace(std::string(field.name_string()), std::string(field.value()));
      }
    }
    req.accept = std::string(msg[http::field::accept]);
    req.content_type = std::string(msg[http::field::content_type]);
    origin_ = std::string(msg[http::field::origin]);
    preflight_method_ = std::string(msg["Access-Control-Request-Method"]);
    req.auth_token = std::string(msg["X-Auth-Token"]);
    if (req.auth_token.empty()) {
      const auto cookie = msg[http::field::cookie];
      auto cookies = ParseCookies(std::string_view(cookie.data(), cookie.size()));
      if (auto it = cookies.find("session_id"); it != cookies.end()) req.auth_token = it->second;
    }
    req.body = msg.body();
    req.remote_ip = remote_ip_;
    head_ = req.method == "HEAD";
    if (!server_.limiter.Allow(remote_ip_)) {
      server_.counters.rate_limited++;
      spdlog::warn("request from {} refused: over the rate limit", remote_ip_);
      return Send(Page(429, "Too many requests"), false);
    }
    if (req.method == "GET" && server_.router.IsEvents(req)) return StartEvents(std::move(req));
    asio::post(server_.pool, [self = this->shared_from_this(), req = std::move(req)]() {
      Response r = self->server_.router.Handle(req);
      asio::post(self->server_.io, [self, r = std::move(r)]() mutable {
        self->Send(std::move(r), self->keep_alive_);
      });
    });
  }

  static Response Page(int status, std::string_view message) {
    return Response{status, "text/html;charset=utf-8", ErrorPage(status, message), {}, {}};
  }

  void Cors(http::response<http::string_body>& res) const {
    res.set("Access-Control-Allow-Origin", origin_.empty() ? "*" : origin_);
    res.set("Access-Control-Expose-Headers", "GET, POST");
    res.set("Access-Control-Allow-Credentials", "true");
    if (preflight_method_ == "GET" || preflight_method_ == "POST") {
      res.set("Access-Control-Allow-Methods", "GET, POST");
      res.set("Access-Control-Allow-Headers", "Content-Type, X-Auth-Token, X-Requested-With");
      res.set("Access-Control-Max-Age", "1400");
    }
  }

  void Send(Response r, bool keep_alive) {
    if (r.delay.count() > 0) {
      const auto delay = r.delay;
      r.delay = {};
      timer_.expires_after(delay);
      timer_.async_wait([self = this->shared_from_this(), r = std::move(r), keep_alive](
                            beast::error_code) mutable { self->Send(std::move(r), keep_alive); });
      return;
    }
    auto res = std::make_shared<http::response<http::string_body>>();
    res->version(11);
    res->result(static_cast<unsigned>(r.status));
    res->set(http::field::server, "halite-api");
    if (!r.content_type.empty()) res->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->insert(k, v);
    Cors(*res);
    res->keep_alive(keep_alive);
    const std::size_t length = r.body.size();
    if (!head_) res->body() = std::move(r.body);
    res->prepare_payload();
    if (head_) res->content_length(length);
    http::async_write(
        stream_, *res,
        [self = this->shared_from_this(), res, keep_alive](beast::error_code ec, std::size_t) {
          if (ec) return;
          if (keep_alive) {
            self->Read();
          } else {
            beast::error_code ignored;
            beast::get_lowest_layer(self->stream_)
                .socket()
                .shutdown(tcp::socket::shutdown_both, ignored);
          }
        });
  }

  // /events: the token is checked on a worker; then the stream is subscribed to the bus
  // before its first bytes go out, so the client sees every event after "retry: 400".
  void StartEvents(Request req) {
    asio::post(server_.pool, [self = this->shared_from_this(), req = std::move(req)]() {
      auto token = self->server_.router.EventsToken(req);
      const bool bus_up = self->server_.bus.WaitConnected(std::chrono::seconds(5));
      asio::post(self->server_.io, [self, token = std::move(token), bus_up]() {
        if (!token.ok()) {
          spdlog::info("/events from {} refused: {}", self->remote_ip_, token.error().message);
          return self->Send(Page(401, ""), false);
        }
        if (!bus_up) return self->Send(Page(503, "Salt Master is not available."), false);
        self->StartStream(token->expire);
      });
    });
  }

  void StartStream(double expire) {
    expire_ = expire;
    streaming_ = true;
    server_.counters.events_clients++;
    beast::get_lowest_layer(stream_).expires_never();
    std::weak_ptr<Session> weak = this->shared_from_this();
    auto queued = queued_;
    auto queued_bytes = queued_bytes_;
    auto cut = cut_;
    const std::size_t max = server_.options.events_max_queue;
    const std::size_t max_bytes = server_.options.events_max_queue_bytes;
    asio::io_context& io = server_.io;
    subscription_ = server_.bus.Subscribe(
        [weak, queued, queued_bytes, cut, max, max_bytes, &io](const EventBus::Record& rec) {
          // On the bus thread: count, and hand over to the io thread. Past `max` unwritten
          // events, or `max_bytes` of them, the client is not keeping up; it is cut off rather
          // than buffered without end (the counts stay up: the stream is closing).
          const std::size_t before = queued->fetch_add(1);
          const std::size_t bytes = queued_bytes->fetch_add(rec->size()) + rec->size();
          if (before >= max || bytes > max_bytes) {
            if (!cut->exchange(true)) {
              asio::post(io, [weak] {
                if (auto self = weak.lock()) self->TooSlow();
              });
            }
            return;
          }
          asio::post(io, [weak, rec] {
            if (auto self = weak.lock()) self->Enqueue(rec);
          });
        });
    std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        "Cache-Control: no-cache\r\nConnection: keep-alive\r\n"
        "Transfer-Encoding: chunked\r\nServer: halite-api\r\n"
        "Access-Control-Allow-Origin: " +
        (origin_.empty() ? std::string("*") : origin_) +
        "\r\nAccess-Control-Allow-Credentials: true\r\n\r\n";
    pending_.emplace_back(std::make_shared<const std::string>(std::move(head)), 0);
    pending_.emplace_back(Chunk("retry: 400\n"), 0);
    WriteNext();
    WatchClose();
  }

  static EventBus::Record Chunk(const std::string& data) {
    char size[20];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    return std::make_shared<const std::string>(size + data + "\r\n");
  }

  void Enqueue(const EventBus::Record& rec) {
    if (closed_) return;
    pending_.emplace_back(Chunk(*rec), rec->size());
    if (!writing_) WriteNext();
  }

  void TooSlow() {
    if (closed_) return;
    server_.counters.events_slow_disconnects++;
    spdlog::warn("/events client {} disconnected: more than {} events or {} bytes behind",
                 remote_ip_, server_.options.events_max_queue,
                 server_.options.events_max_queue_bytes);
    Close();
  }

  void WriteNext() {
    if (closed_ || pending_.empty()) {
      writing_ = false;
      return;
    }
    using namespace std::chrono;
    if (duration<double>(system_clock::now().time_since_epoch()).count() > expire_) {
      spdlog::info("/events client {}: token expired", remote_ip_);
      return Close();
    }
    writing_ = true;
    // Named copies, not a structured binding: clang before 16 cannot capture a binding.
    auto rec = pending_.front().first;
    const std::size_t counted = pending_.front().second;
    pending_.pop_front();
    asio::async_write(
        stream_, asio::buffer(*rec),
        [self = this->shared_from_this(), rec, counted](beast::error_code ec, std::size_t) {
          if (counted > 0) {
            self->queued_->fetch_sub(1);
            self->queued_bytes_->fetch_sub(counted);
            self->server_.counters.events_sent++;
          }
          if (ec) return self->Close();
          self->WriteNext();
        });
  }

  // A client that goes away is noticed by a read that fails.
  void WatchClose() {
    stream_.async_read_some(asio::buffer(sink_),
                            [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->Close();
                              self->WatchClose();
                            });
  }

  void Close() {
    if (closed_) return;
    closed_ = true;
    if (subscription_) {
      server_.bus.Unsubscribe(subscription_);
      subscription_ = 0;
    }
    beast::error_code ignored;
    beast::get_lowest_layer(stream_).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(stream_).socket().close(ignored);
  }

  Stream stream_;
  ApiServer::Impl& server_;
  const std::string remote_ip_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  asio::steady_timer timer_;
  bool keep_alive_ = false;
  bool head_ = false;
  std::string origin_;
  std::string preflight_method_;
  // /events
  bool streaming_ = false;
  bool writing_ = false;
  bool closed_ = false;
  double expire_ = 0;
  std::uint64_t subscription_ = 0;
  std::shared_ptr<std::atomic<std::size_t>> queued_ = std::make_shared<std::atomic<std::size_t>>(0);
  std::shared_ptr<std::atomic<std::size_t>> queued_bytes_ =
      std::make_shared<std::atomic<std::size_t>>(0);
  std::shared_ptr<std::atomic<bool>> cut_ = std::make_shared<std::atomic<bool>>(false);
  // Records to write, each with the size of its event (counted in queued_ and queued_bytes_),
  // or 0 for the head.
  std::deque<std::pair<EventBus::Record, std::size_t>> pending_;
  char sink_[512];
};

}  // namespace

void ApiServer::Impl::Accept() {
  acceptor->async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      // EMFILE and the like: retried after kAcceptRetry, not at once (that would spin).
      if (ec == asio::error::operation_aborted) return;
      if (auto held = accept_log.Pass()) {
        spdlog::warn("halite-api accept: {} ({} more since the last line); retrying in {} ms",
                     ec.message(), *held, kAcceptRetry.count());
      }
      accept_retry.expires_after(kAcceptRetry);
      accept_retry.async_wait([this](beast::error_code wait_ec) {
        if (!wait_ec) Accept();
      });
      return;
    }
    beast::error_code peer_ec;
    auto peer = socket.remote_endpoint(peer_ec);
    std::string ip = peer_ec ? "?" : peer.address().to_string();
    if (connections.load() >= options.max_connections) {
      counters.connections_refused++;
      spdlog::warn("halite-api: connection from {} refused: {} connections open", ip,
                   options.max_connections);
      socket.close(peer_ec);
      return Accept();
    }
    if (tls) {
      using TlsStream = beast::ssl_stream<beast::tcp_stream>;
      std::make_shared<Session<TlsStream>>(TlsStream(beast::tcp_stream(std::move(socket)), *tls),
                                           *this, ip)
          ->Start();
    } else {
      std::make_shared<Session<beast::tcp_stream>>(beast::tcp_stream(std::move(socket)), *this, ip)
          ->Start();
    }
    Accept();
  });
}

ApiServer::ApiServer(const config::MasterConfig& config, ApiOptions options,
                     auth::Authenticator& authenticator)
    : impl_(std::make_unique<Impl>(config, std::move(options), authenticator)) {}

ApiServer::~ApiServer() { Stop(); }

Status ApiServer::Start() {
  Impl& s = *impl_;
  if (!s.options.disable_ssl) {
    try {
      s.tls.emplace(ssl::context::tls_server);
      s.tls->set_options(ssl::context::default_workarounds | ssl::context::no_sslv2 |
                         ssl::context::no_sslv3 | ssl::context::no_tlsv1 |
                         ssl::context::no_tlsv1_1);
      s.tls->use_certificate_chain_file(s.options.ssl_crt);
      s.tls->use_private_key_file(s.options.ssl_key, ssl::context::pem);
    } catch (const boost::system::system_error& e) {
      s.tls.reset();
      return Error::InvalidArgument("rest_cherrypy: cannot load ssl_crt " + s.options.ssl_crt +
                                    " / ssl_key " + s.options.ssl_key + ": " + e.what());
    }
  }
  beast::error_code ec;
  auto addr = asio::ip::make_address(s.options.host, ec);
  if (ec)
    return Error::InvalidArgument("rest_cherrypy.host '" + s.options.host +
                                  "' is not an IP address");
  auto acceptor = std::make_unique<tcp::acceptor>(s.io);
  tcp::endpoint endpoint(addr, s.options.port);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return Error::Unavailable("halite-api cannot listen on " + s.options.host + ":" +
                              std::to_string(s.options.port) + ": " + ec.message());
  }
  s.port = acceptor->local_endpoint().port();
  s.acceptor = std::move(acceptor);
  s.bus.Start();
  s.Accept();
  s.thread = std::thread([&s] {
    pthread_setname_np(pthread_self(), "api-http");
    try {
      s.io.run();
    } catch (const std::exception& e) {
      spdlog::critical("api-http: {}", e.what());
      std::abort();
    }
  });
  return OkStatus();
}

void ApiServer::Stop() {
  Impl& s = *impl_;
  if (!s.thread.joinable()) return;
  s.bus.Stop();
  asio::post(s.io, [&s] {
    beast::error_code ignored;
    if (s.acceptor) s.acceptor->close(ignored);
    s.io.stop();
  });
  s.thread.join();
  s.pool.join();
}

std::uint16_t ApiServer::port() const { return impl_->port; }

const ApiCounters& ApiServer::counters() const { return impl_->counters; }

}  // namespace halite::api
