// The typed setting keys a source file declares, read from the file itself,
// for the tests that assert each program's registry holds every key the
// program declares. A key left out of its registry compiles (keys and
// entries are written apart) and would abort the first time a user's
// process reads it (Settings::Get); these tests make it fail in CI instead.
//
// C++ cannot list a namespace's constants, so the keys are taken from the
// declaring source with a pattern, and the reader fails the test when the
// file declares none or makes a key the pattern did not read: a change of
// declaration style cannot make a test pass with nothing checked.
//
// Header only: RS_SOURCE_DIR is defined for each test binary.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "common/settings.h"

namespace rs::testing {

struct DeclaredKey {
  std::string file;  // "server/reducerd_settings.h"
  std::string type;  // "int64_t", "milliseconds", "std::string"
  std::string name;  // "kIoThreads"
  std::string flag;  // "--io-threads"; empty: environment only
  std::string env;   // "REDUCER_IO_THREADS"

  std::string Describe() const { return file + ": " + name + " {\"" + flag + "\", \"" + env + "\"}"; }
};

// Every `SettingKey<T> kName{"flag", "ENV"}` in `path` (relative to the
// source tree). Adds a test failure when there are none or when a key
// made another way was not read.
inline std::vector<DeclaredKey> DeclaredSettingKeys(const std::string& path) {
  std::ifstream in(std::string(RS_SOURCE_DIR) + "/" + path);
  std::ostringstream text;
  text << in.rdbuf();
  const std::string source = text.str();
  EXPECT_FALSE(source.empty()) << path << " could not be read";

  static const std::regex kDeclaration(
      R"re(constexpr\s+SettingKey<([^;{}]+?)>\s+(\w+)\s*\{\s*"([^"]*)"\s*(?:,\s*"([^"]*)"\s*)?\})re");
  std::vector<DeclaredKey> keys;
  for (std::sregex_iterator it(source.begin(), source.end(), kDeclaration), end; it != end; ++it) {
    std::string type = (*it)[1].str();
    if (type.rfind("std::chrono::", 0) == 0) type = type.substr(13);
    keys.push_back({path, type, (*it)[2].str(), (*it)[3].str(), (*it)[4].str()});
  }
  // Every key made in the file, however declared: `SettingKey<T>` then a
  // brace or parenthesis, with or without a name between (not a reference
  // parameter, `const SettingKey<T>& key`).
  static const std::regex kConstruction(R"re(SettingKey<[^;{}()&]+?>\s*(?:\w+\s*)?[{(])re");
  const auto written = static_cast<size_t>(
      std::distance(std::sregex_iterator(source.begin(), source.end(), kConstruction), std::sregex_iterator()));
  EXPECT_GT(keys.size(), 0u) << path << " declares no setting key this test can read: "
                             << "update the pattern in tests/support/setting_keys.h to the new declaration style";
  EXPECT_EQ(keys.size(), written) << path << " makes " << written << " setting keys but the pattern read "
                                  << keys.size() << ": update the pattern in tests/support/setting_keys.h";
  return keys;
}

// Every key of `files` is in `registry`, found as Settings::Get and
// FindSetting find it: by its flag or by its variable.
inline void ExpectAllInRegistry(const std::vector<std::string>& files, const std::vector<SettingInfo>& registry) {
  for (const std::string& file : files) {
    for (const DeclaredKey& key : DeclaredSettingKeys(file)) {
      bool found = false;
      for (const SettingInfo& info : registry) {
        found |= (!info.flag.empty() && info.flag == key.flag) || (!info.env.empty() && info.env == key.env);
      }
      EXPECT_TRUE(found) << key.Describe() << " is declared but not in the program's registry: add its Entry "
                         << "(reading it would abort the user's process)";
    }
  }
}

// Keys of `files` that name the same setting (a flag or a variable in
// common) read it as the same type: the registry holds text, and a setting
// read as a size by one key and a duration by another has no one meaning.
inline void ExpectOneTypePerSetting(const std::vector<std::string>& files) {
  std::map<std::string, DeclaredKey> seen;  // by flag and by variable
  for (const std::string& file : files) {
    for (const DeclaredKey& key : DeclaredSettingKeys(file)) {
      for (const std::string& name : {key.flag, key.env}) {
        if (name.empty()) continue;
        auto it = seen.emplace(name, key).first;
        EXPECT_EQ(it->second.type, key.type) << name << " is read as " << it->second.type << " by "
                                             << it->second.Describe() << " and as " << key.type << " by "
                                             << key.Describe();
      }
    }
  }
}

}  // namespace rs::testing
