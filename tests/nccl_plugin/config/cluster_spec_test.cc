// CLUSTER_SPEC parsing: the documented Vertex AI format, and malformed or
// hostile input rejected with a message rather than a crash.
#include "nccl_plugin/config/cluster_spec.h"

#include <string>

#include <gtest/gtest.h>

#include "nccl_plugin/config/json_value.h"

namespace rs::plugin {
namespace {

constexpr const char* kVertexSpec = R"({
  "cluster": {
    "workerpool0": ["cmle-training-workerpool0-ab12-0:2222"],
    "workerpool1": ["cmle-training-workerpool1-ab12-0:2222", "cmle-training-workerpool1-ab12-1:2222"],
    "workerpool2": ["cmle-training-workerpool2-ab12-0:2222", "cmle-training-workerpool2-ab12-1:2222"]
  },
  "environment": "cloud",
  "task": {"type": "workerpool1", "index": 1, "trial": ""},
  "job": {"python_module": "trainer.task", "args": ["--epochs=3"], "scheduling": {"timeout": 3600.5}, "x": null, "y": true}
})";

TEST(ClusterSpec, ParsesTheDocumentedFormat) {
  StatusOr<ClusterSpec> spec = ClusterSpec::Parse(kVertexSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  const std::vector<std::string>* reducers = spec->Pool(ClusterSpec::kReducerPool);
  ASSERT_NE(reducers, nullptr);
  EXPECT_EQ(*reducers, (std::vector<std::string>{"cmle-training-workerpool2-ab12-0:2222",
                                                 "cmle-training-workerpool2-ab12-1:2222"}));
  EXPECT_EQ(spec->Pool("workerpool1")->size(), 2u);
  EXPECT_EQ(spec->task_type, "workerpool1");
  EXPECT_EQ(spec->task_index, 1);
}

TEST(ClusterSpec, NoReducerPool) {
  StatusOr<ClusterSpec> spec = ClusterSpec::Parse(R"({"cluster":{"workerpool0":["a:1"]},"environment":"cloud"})");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->Pool("workerpool2"), nullptr);
  EXPECT_EQ(spec->task_index, -1);
}

TEST(ClusterSpec, RejectsWrongShapes) {
  const char* cases[] = {
      R"([])",
      R"({"environment":"cloud"})",
      R"({"cluster":5})",
      R"({"cluster":{"workerpool2":"r:1"}})",
      R"({"cluster":{"workerpool2":["r:1", 5]}})",
      R"({"cluster":{},"task":[]})",
      R"({"cluster":{},"task":{"index":-1}})",
      R"({"cluster":{},"task":{"index":1.5}})",
      R"({"cluster":{},"task":{"type":3}})",
  };
  for (const char* text : cases) {
    StatusOr<ClusterSpec> spec = ClusterSpec::Parse(text);
    EXPECT_FALSE(spec.ok()) << text;
    if (!spec.ok()) {
      EXPECT_NE(spec.status().message().find("CLUSTER_SPEC"), std::string::npos);
    }
  }
}

TEST(Json, RejectsMalformedText) {
  const char* cases[] = {
      "",          " ",          "{",           "}",          "[1,]",        "{\"a\":1,}",   "{\"a\" 1}",
      "{a:1}",     "[1 2]",      "\"abc",       "\"a\\q\"",   "\"\\u12\"",   "\"\\ud800\"",  "\"\\udc00\"",
      "\"a\nb\"",  "01",         "1.",          "-",          "1e",          "tru",          "nul",
      "{} x",      "[\"a\"]]",   "NaN",         "'a'",        "{\"a\":[1,{]}", "\"\\ud800\\u0041\"",
  };
  for (const char* text : cases) {
    StatusOr<JsonValue> v = JsonValue::Parse(text);
    EXPECT_FALSE(v.ok()) << "accepted: " << text;
    if (!v.ok()) {
      EXPECT_NE(v.status().message().find("at byte"), std::string::npos) << v.status().message();
    }
  }
}

TEST(Json, BoundsDepthAndSize) {
  std::string deep(200, '[');
  deep += std::string(200, ']');
  EXPECT_FALSE(JsonValue::Parse(deep).ok());
  std::string ok_depth(40, '[');
  ok_depth += std::string(40, ']');
  EXPECT_TRUE(JsonValue::Parse(ok_depth).ok());
  std::string huge = "\"" + std::string(JsonValue::kMaxInputBytes, 'a') + "\"";
  EXPECT_FALSE(JsonValue::Parse(huge).ok());
  // A truncated spec (as from a length-limited variable) fails cleanly.
  std::string spec = kVertexSpec;
  for (size_t cut = 0; cut < spec.size(); cut += 7) {
    EXPECT_FALSE(ClusterSpec::Parse(spec.substr(0, cut)).ok()) << cut;
  }
}

TEST(Json, DecodesStringsAndNumbers) {
  StatusOr<JsonValue> v = JsonValue::Parse(R"({"s":"a\"b\\c\/\n\u00e9\ud83d\ude00","n":-12.5e1,"z":0,"t":true,"f":false,"u":null,"s":"last"})");
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_EQ(v->Find("s")->text(), "last");  // duplicate key: last wins
  EXPECT_EQ(v->items()[0].text(), "a\"b\\c/\n\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_DOUBLE_EQ(v->Find("n")->as_number(), -125.0);
  EXPECT_EQ(v->Find("z")->kind(), JsonValue::Kind::kNumber);
  EXPECT_TRUE(v->Find("t")->as_bool());
  EXPECT_EQ(v->Find("f")->kind(), JsonValue::Kind::kBool);
  EXPECT_EQ(v->Find("u")->kind(), JsonValue::Kind::kNull);
  EXPECT_EQ(v->Find("missing"), nullptr);
}

}  // namespace
}  // namespace rs::plugin
