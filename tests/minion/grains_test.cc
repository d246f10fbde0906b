#include "halite/minion/grains.h"

#include <gtest/gtest.h>

#include <fstream>

#include "test_util.h"

namespace halite::minion {
namespace {

void Write(const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; }

TEST(GrainsTest, ReadsOsHostAndMemoryWithoutDns) {
  testing::TempDir dir;
  GrainSources s;
  s.os_release = dir.path() / "os-release";
  s.hostname = dir.path() / "hostname";
  s.meminfo = dir.path() / "meminfo";
  Write(s.os_release,
        "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\n"
        "VERSION_ID=\"12\"\nVERSION_CODENAME=bookworm\nID=debian\n");
  Write(s.hostname, "web1.example.com\n");
  Write(s.meminfo, "MemTotal:       24684312 kB\nMemFree:  1 kB\n");
  wire::Value g = SystemGrains(s);
  EXPECT_EQ(*g.FindStr("os"), "Debian");
  EXPECT_EQ(*g.FindStr("os_family"), "Debian");
  EXPECT_EQ(*g.FindStr("osrelease"), "12");
  EXPECT_EQ(*g.FindStr("oscodename"), "bookworm");
  EXPECT_EQ(*g.FindStr("kernel"), "Linux");
  EXPECT_EQ(*g.FindStr("fqdn"), "web1.example.com");
  EXPECT_EQ(*g.FindStr("host"), "web1");
  EXPECT_EQ(*g.FindStr("domain"), "example.com");
  EXPECT_EQ(g.Find("mem_total")->int64(), 24105);
  EXPECT_GE(g.Find("num_cpus")->int64().value_or(0), 1);
  const wire::Value* ipv4 = g.Find("ipv4");
  ASSERT_NE(ipv4, nullptr);
  bool loopback = false;
  for (const auto& a : *ipv4->array()) loopback = loopback || *a.str() == "127.0.0.1";
  EXPECT_TRUE(loopback);
}

TEST(GrainsTest, DerivedFamiliesAndFallbacks) {
  EXPECT_EQ(OsNameForId("ubuntu"), "Ubuntu");
  EXPECT_EQ(OsFamilyFor("Ubuntu", ""), "Debian");
  EXPECT_EQ(OsFamilyFor("Rocky", ""), "RedHat");
  EXPECT_EQ(OsFamilyFor("Foo", "rhel centos fedora"), "RedHat");
  EXPECT_EQ(OsFamilyFor("Foo", ""), "Foo");
  testing::TempDir dir;
  GrainSources s;
  s.os_release = dir.path() / "missing";
  s.hostname = dir.path() / "missing";
  s.meminfo = dir.path() / "missing";
  s.read_interfaces = false;
  wire::Value g = SystemGrains(s);
  EXPECT_NE(g.FindStr("os"), nullptr);
  EXPECT_NE(g.FindStr("host"), nullptr);
  EXPECT_EQ(g.Find("ipv4"), nullptr);
}

TEST(GrainsTest, StaticGrainsAndIdWin) {
  wire::Value base = wire::Value::MapOf({{"os", "Debian"}, {"id", "old"}, {"role", "x"}});
  wire::Value over = wire::Value::MapOf({{"role", "web"}, {"dc", "eu"}});
  wire::Value g = MergeGrains(base, over, "m1");
  EXPECT_EQ(*g.FindStr("role"), "web");
  EXPECT_EQ(*g.FindStr("dc"), "eu");
  EXPECT_EQ(*g.FindStr("os"), "Debian");
  EXPECT_EQ(*g.FindStr("id"), "m1");
}

}  // namespace
}  // namespace halite::minion
