// rest_cherrypy's body processors and lowdata_fmt (salt/netapi/rest_cherrypy/app.py).
#include "halite/api/http_codec.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "halite/api/event_bus.h"

namespace halite::api {
namespace {

TEST(HttpCodecTest, JsonBodiesKeepTheirTypes) {
  auto v = ParseBody(
      "application/json; charset=utf-8",
      R"([{"client": "local", "tgt": "*", "fun": "test.arg", "arg": [1, 2.5, true, null, "x"]}])");
  ASSERT_TRUE(v.ok());
  const wire::Value& arg = *v->array()->front().Find("arg");
  EXPECT_EQ(arg, wire::Value(wire::Array{1, 2.5, true, wire::Value(), "x"}));
  auto bad = ParseBody("application/json", "{nope");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "Invalid JSON document");
}

TEST(HttpCodecTest, DeepJsonAndYamlAreRefused) {
  std::string deep(10000, '[');
  deep += std::string(10000, ']');
  EXPECT_FALSE(ParseBody("application/json", deep).ok());
  // The scan that refuses deep JSON before it is parsed keeps the parse's own limit exactly:
  // a value under 64 containers, or an empty container as the 65th, is read; one more is not.
  for (int levels : {63, 64, 65, 66, 67}) {
    const std::string with_value = std::string(levels, '[') + "1" + std::string(levels, ']');
    EXPECT_EQ(ParseBody("application/json", with_value).ok(), levels <= 64) << levels;
    EXPECT_EQ(ParseJson(std::string(levels, '[') + std::string(levels, ']')).ok(), levels <= 65)
        << levels;
  }
  // Brackets inside strings, escaped quotes included, are text.
  const std::string in_string = "[\"\\\"" + std::string(200, '[') + "\"]";
  auto text = ParseBody("application/json", in_string);
  ASSERT_TRUE(text.ok()) << in_string;
  EXPECT_EQ((*text->array())[0], wire::Value("\"" + std::string(200, '[')));
  // YAML past 64 levels was read with nil in place of what lay deeper: refused, as JSON is.
  for (int levels : {64, 100}) {
    const std::string yaml = std::string(levels, '[') + "x" + std::string(levels, ']');
    auto parsed = ParseBody("application/x-yaml", yaml);
    EXPECT_EQ(parsed.ok(), levels == 64) << levels;
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.error().message, "Invalid YAML document");
    }
  }
}

TEST(HttpCodecTest, YamlAndTextBodies) {
  auto y = ParseBody("application/x-yaml", "client: local\ntgt: '*'\nfun: test.ping\n");
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(*y->FindStr("tgt"), "*");
  EXPECT_FALSE(ParseBody("text/yaml", "a: [1\n").ok());
  auto t = ParseBody("text/plain", R"({"a": 1})");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(*t->Find("a"), wire::Value(1));
  auto raw = ParseBody("text/plain", "not json");
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(*raw->str(), "not json");
}

TEST(HttpCodecTest, FormBodiesRepeatKeysAndYamlifyArgs) {
  auto f = ParseBody("application/x-www-form-urlencoded",
                     "client=local&tgt=%2A&fun=test.kwarg&arg=one%3D1&arg=2&username=a+b");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f->FindStr("tgt"), "*");
  EXPECT_EQ(*f->FindStr("username"), "a b");
  EXPECT_EQ(*f->Find("arg"), wire::Value(wire::Array{"one=1", 2}));
  auto one = ParseBody("application/x-www-form-urlencoded", "fun=test.echo&arg=hello");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one->Find("arg"), wire::Value(wire::Array{"hello"}));
  // Keys keep their first place; a repeated key's values are a list in order.
  auto order = ParseBody("application/x-www-form-urlencoded", "b=1&a=x&b=2&kwarg=3&c=&b=3");
  ASSERT_TRUE(order.ok());
  ASSERT_EQ(order->map()->size(), 4u);
  EXPECT_EQ(*order->map()->at(0).first.str(), "b");
  EXPECT_EQ(*order->map()->at(1).first.str(), "a");
  EXPECT_EQ(*order->map()->at(2).first.str(), "kwarg");
  EXPECT_EQ(*order->map()->at(3).first.str(), "c");
  EXPECT_EQ(*order->Find("b"), wire::Value(wire::Array{"1", "2", "3"}));
  EXPECT_EQ(*order->Find("kwarg"), wire::Value(3));
  EXPECT_EQ(*order->FindStr("c"), "");
}

TEST(HttpCodecTest, AFormOfManyDistinctKeysIsReadInOnePass) {
  // 110,000 keys (880 KB, under the 1 MiB body limit): 29 s of CPU in a release build when
  // each key was searched for among those before it.
  std::string form;
  for (int i = 0; i < 110000; ++i) form += "k" + std::to_string(i) + "=" + std::to_string(i) + "&";
  auto f = ParseBody("application/x-www-form-urlencoded", form);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->map()->size(), 110000u);
  EXPECT_EQ(*f->map()->back().first.str(), "k109999");
  EXPECT_EQ(*f->FindStr("k54321"), "54321");
}

TEST(HttpCodecTest, UnknownContentTypesAre406AndEmptyBodiesNil) {
  auto x = ParseBody("application/xml", "<a/>");
  ASSERT_FALSE(x.ok());
  EXPECT_EQ(x.error().message, "Content type not supported");
  auto empty = ParseBody("application/xml", "");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->is_nil());
}

TEST(HttpCodecTest, LowdataFmtWrapsOneChunk) {
  wire::Value chunk = wire::Value::MapOf({{"fun", "test.echo"}, {"arg", "hi"}});
  wire::Value low = ToLowstate(chunk);
  ASSERT_TRUE(low.array());
  EXPECT_EQ(*low.array()->front().Find("arg"), wire::Value(wire::Array{"hi"}));
  wire::Value list(wire::Array{chunk});
  EXPECT_EQ(ToLowstate(list), list);
  EXPECT_TRUE(ToLowstate(wire::Value("x")).is_str());
}

TEST(HttpCodecTest, QueryCookiesAndAccept) {
  auto q = ParseQuery("token=ab%20c&salt_token=&x");
  EXPECT_EQ(q["token"], "ab c");
  EXPECT_EQ(q["salt_token"], "");
  EXPECT_TRUE(q.count("x"));
  auto c = ParseCookies("a=1; session_id=\"abc\"; other=2");
  EXPECT_EQ(c["session_id"], "abc");
  EXPECT_EQ(c["other"], "2");
  EXPECT_EQ(BestContentType(""), "application/json");
  EXPECT_EQ(BestContentType("*/*"), "application/json");
  EXPECT_EQ(BestContentType("application/x-yaml"), "application/x-yaml");
  EXPECT_EQ(BestContentType("application/json, application/x-yaml"), "application/json");
  EXPECT_EQ(UrlDecode("%zz%4"), "%zz%4");
}

TEST(HttpCodecTest, ErrorPagesEscapeTheMessage) {
  std::string page = ErrorPage(401, "<script>");
  EXPECT_NE(page.find("<title>401 Unauthorized</title>"), std::string::npos);
  EXPECT_NE(page.find("&lt;script&gt;"), std::string::npos);
  EXPECT_EQ(page.find("<script>"), std::string::npos);
}

// /events framing: a CR or LF in a tag cannot end its line and start a record of the
// sender's making (finding 23: a jid suffix carried "\r\rdata: {...}" into a return's tag).
TEST(SseTest, ATagCannotBreakOutOfItsLine) {
  const std::string record =
      FormatSseEvent("salt/job/1_\r\rdata: {\"tag\": \"forged\"}\n\n/ret/x", wire::Value(1));
  EXPECT_EQ(record.find('\r'), std::string::npos) << record;
  EXPECT_EQ(std::count(record.begin(), record.end(), '\n'), 3) << record;  // tag, data, blank
  EXPECT_EQ(record.rfind("tag: salt/job/1_\\r\\rdata: ", 0), 0u) << record;
  EXPECT_EQ(FormatSseEvent("salt/auth", wire::Value(1)),
            "tag: salt/auth\ndata: {\"tag\": \"salt/auth\", \"data\": 1}\n\n");
}

}  // namespace
}  // namespace halite::api
