// salt-run's printing of a whole runner value (expected texts from stock salt-run 3007.8,
// tests/data/salt/salt_run/expected/26-30.txt).
#include "halite/runners/print.h"

#include <gtest/gtest.h>

namespace halite::runners {
namespace {

using client::OutputFormat;
using wire::Value;

TEST(FormatRunnerValueTest, NestedSortsKeysAndPrintsListsAndScalarsBare) {
  // manage.status: keys sorted ("down" before "up"), empty lists print nothing.
  Value status = Value::MapOf({{"up", Value(wire::Array{"m001"})}, {"down", Value::EmptyArray()}});
  EXPECT_EQ(FormatRunnerValue(status, OutputFormat::kNested), "down:\nup:\n    - m001\n");
  EXPECT_EQ(FormatRunnerValue(Value(wire::Array{"m001", "m002"}), OutputFormat::kNested),
            "- m001\n- m002\n");
  EXPECT_EQ(FormatRunnerValue(Value(true), OutputFormat::kNested), "True\n");
  EXPECT_EQ(FormatRunnerValue(Value::EmptyMap(), OutputFormat::kNested), "");
  EXPECT_EQ(FormatRunnerValue(Value::MapOf({{"m2", false}, {"m1", true}}), OutputFormat::kNested),
            "m1:\n    True\nm2:\n    False\n");
}

TEST(FormatRunnerValueTest, JsonKeepsTheRunnersOrder) {
  EXPECT_EQ(FormatRunnerValue(Value::MapOf({{"up", 1}, {"down", 2}}), OutputFormat::kJson),
            "{\n    \"up\": 1,\n    \"down\": 2\n}\n");
  EXPECT_EQ(FormatRunnerValue(Value::EmptyArray(), OutputFormat::kJson), "[]\n");
}

TEST(FormatRunnerValueTest, TxtAndYamlOfScalarsAndLists) {
  EXPECT_EQ(FormatRunnerValue(Value(true), OutputFormat::kTxt), "True\n");
  EXPECT_EQ(FormatRunnerValue(Value::MapOf({{"m1", "x"}}), OutputFormat::kTxt), "m1: x\n");
  EXPECT_EQ(FormatRunnerValue(Value(wire::Array{"a"}), OutputFormat::kYaml), "- a\n");
  EXPECT_EQ(FormatRunnerValue(Value(true), OutputFormat::kYaml), "true\n");
}

TEST(FormatDocsTest, NameLineThenTheDoc) {
  Runner r;
  r.name = "x.y";
  r.doc = "\n    Does y.\n    ";
  EXPECT_EQ(FormatDocs({&r}), "x.y:\n\n    Does y.\n    \n");
}

}  // namespace
}  // namespace halite::runners
