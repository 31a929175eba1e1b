// CLUSTER_SPEC parsing: the documented Vertex AI format, and malformed or
// hostile input rejected with a message rather than a crash.
#include "common/cluster_spec.h"

#include <string>

#include <gtest/gtest.h>


namespace rs {
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

TEST(ClusterSpec, FindsItsOwnEntry) {
  StatusOr<ClusterSpec> spec = ClusterSpec::Parse(kVertexSpec);
  ASSERT_TRUE(spec.ok());
  ASSERT_NE(spec->Self(), nullptr);
  EXPECT_EQ(*spec->Self(), "cmle-training-workerpool1-ab12-1:2222");
  spec = ClusterSpec::Parse(R"({"cluster":{"workerpool2":["r:1"]},"task":{"type":"workerpool2","index":1}})");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->Self(), nullptr);  // index outside the pool
}

TEST(ClusterSpec, RejectsMalformedJsonWithThePosition) {
  const char* cases[] = {
      "",          " ",          "{",           "}",          "[1,]",        "{\"a\":1,}",   "{\"a\" 1}",
      "{a:1}",     "[1 2]",      "\"abc",       "\"a\\q\"",   "\"\\u12\"",   "\"\\ud800\"",  "\"\\udc00\"",
      "\"a\nb\"",  "01",         "1.",          "-",          "1e",          "tru",          "nul",
      "{} x",      "[\"a\"]]",   "NaN",         "'a'",        "{\"a\":[1,{]}", "\"\\ud800\\u0041\"",
  };
  for (const char* text : cases) {
    StatusOr<ClusterSpec> v = ClusterSpec::Parse(text);
    EXPECT_FALSE(v.ok()) << "accepted: " << text;
    if (!v.ok()) {
      EXPECT_NE(v.status().message().find("CLUSTER_SPEC: not valid JSON"), std::string::npos) << v.status().message();
      EXPECT_NE(v.status().message().find("column"), std::string::npos) << v.status().message();
    }
  }
}

TEST(ClusterSpec, BoundsDepthAndSize) {
  std::string deep = R"({"cluster":{},"job":)" + std::string(200, '[') + std::string(200, ']') + "}";
  StatusOr<ClusterSpec> spec = ClusterSpec::Parse(deep);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("nested deeper"), std::string::npos) << spec.status().message();
  std::string ok_depth = R"({"cluster":{},"job":)" + std::string(20, '[') + std::string(20, ']') + "}";
  EXPECT_TRUE(ClusterSpec::Parse(ok_depth).ok());
  std::string huge = R"({"cluster":{},"job":")" + std::string(ClusterSpec::kMaxInputBytes, 'a') + "\"}";
  spec = ClusterSpec::Parse(huge);
  ASSERT_FALSE(spec.ok());
  EXPECT_NE(spec.status().message().find("longer than"), std::string::npos);
  // A truncated spec (as from a length-limited variable) fails cleanly.
  std::string text = kVertexSpec;
  for (size_t cut = 0; cut < text.size(); cut += 7) {
    EXPECT_FALSE(ClusterSpec::Parse(text.substr(0, cut)).ok()) << cut;
  }
}

TEST(ClusterSpec, DuplicatePoolsAndUnicodeNames) {
  StatusOr<ClusterSpec> spec =
      ClusterSpec::Parse(R"({"cluster":{"workerpool2":["a:1"],"workerpool2":["h\u00e9:2"]},"environment":"cloud"})");
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  ASSERT_NE(spec->Pool("workerpool2"), nullptr);
  EXPECT_EQ(*spec->Pool("workerpool2"), (std::vector<std::string>{"h\xC3\xA9:2"}));  // last wins
}

}  // namespace
}  // namespace rs
