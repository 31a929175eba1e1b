#include "common/settings.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "common/units.h"

namespace rs {
namespace {

std::string Join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& item : items) out += (out.empty() ? "" : sep) + item;
  return out;
}

void AddUnique(std::vector<std::string>* list, const std::string& item) {
  for (const std::string& have : *list) {
    if (have == item) return;
  }
  list->push_back(item);
}

bool IsBareNumber(std::string_view text) {
  if (text.empty()) return false;
  bool digit = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      digit = true;
    } else if (c != '.') {
      return false;
    }
  }
  return digit;
}

std::string Trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return std::string(text);
}

// "90s", "1500ms", "24h": the shortest exact way to write a bound.
std::string FormatMs(std::chrono::milliseconds d) {
  const int64_t ms = d.count();
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

Status OutOfRange(const SettingValue& v, const char* what, const std::string& bound) {
  return Status(Code::kInvalidArgument, v.source + ": '" + v.text + "' is " + what + ", " + bound);
}

// How one old name was met while resolving, possibly for several settings
// (reducer-bench's --timeout stood for two).
struct OldNameUse {
  std::vector<std::string> replacements;  // the new names
  std::vector<std::string> winners;       // what took precedence where it was ignored
  std::vector<std::string> ignored_for;   // the new names it was ignored for
};

// Old names in the order they were met, with how each was used.
struct OldNames {
  std::vector<std::string> order;
  std::map<std::string, OldNameUse> uses;

  void Note(const std::string& old_name, const std::string& new_name, const SettingValue& chosen) {
    if (!uses.count(old_name)) order.push_back(old_name);
    OldNameUse& use = uses[old_name];
    AddUnique(&use.replacements, new_name);
    if (chosen.source != old_name) {
      AddUnique(&use.winners, chosen.source);
      AddUnique(&use.ignored_for, new_name);
    }
  }

  // One line per old name.
  std::vector<std::string> Notices() const {
    std::vector<std::string> out;
    for (const std::string& old_name : order) {
      const OldNameUse& use = uses.at(old_name);
      const std::string instead = "use " + Join(use.replacements, " and ") + " instead";
      const std::string winners = Join(use.winners, " and ");
      if (use.ignored_for.size() == use.replacements.size()) {
        out.push_back(old_name + " is deprecated and was ignored: " + winners + " takes precedence (" + instead + ")");
      } else if (!use.ignored_for.empty()) {
        out.push_back(old_name + " is deprecated; " + instead + " (ignored for " + Join(use.ignored_for, " and ") +
                      ": " + winners + " takes precedence)");
      } else {
        out.push_back(old_name + " is deprecated; " + instead);
      }
    }
    return out;
  }
};

// A variable's value, or nullptr when unset or empty.
const char* EnvValue(const EnvLookup& env, const std::string& name) {
  if (name.empty()) return nullptr;
  const char* v = env(name.c_str());
  return v != nullptr && *v != '\0' ? v : nullptr;
}

// The first of: the flag, an old flag, the variable, an old variable, the
// default. Notes every old name that is set in `olds`.
SettingValue ResolveOne(const SettingInfo& info, const std::map<std::string, std::string>& given,
                        const EnvLookup& env, OldNames* olds) {
  SettingValue value;
  value.source = "default";
  value.text = info.default_value;
  auto choose = [&](const std::string& name, const std::string& text, const std::string& bare_unit) {
    if (!value.is_default) return;
    value.text = text;  // as given: a token may hold any byte
    if (!bare_unit.empty() && IsBareNumber(Trimmed(text))) value.text = Trimmed(text) + bare_unit;
    value.source = name;
    value.is_default = false;
  };
  if (auto it = given.find(info.flag); !info.flag.empty() && it != given.end()) choose(info.flag, it->second, "");
  for (const SettingAlias& old : info.old_flags) {
    if (auto it = given.find(old.name); it != given.end()) choose(old.name, it->second, old.bare_unit);
  }
  if (const char* v = EnvValue(env, info.env)) choose(info.env, v, "");
  for (const SettingAlias& old : info.old_envs) {
    if (const char* v = EnvValue(env, old.name)) choose(old.name, v, old.bare_unit);
  }
  for (const SettingAlias& old : info.old_flags) {
    if (given.count(old.name)) olds->Note(old.name, info.flag, value);
  }
  for (const SettingAlias& old : info.old_envs) {
    if (EnvValue(env, old.name) != nullptr) olds->Note(old.name, info.env, value);
  }
  return value;
}

// A key read from a registry that lacks it: a programming error, which each
// program's keys test (tests/support/setting_keys.h) catches in CI; the last
// resort, so it says what to fix.
[[noreturn]] void NotInRegistry(std::string_view name) {
  std::fprintf(stderr,
               "internal error: setting '%.*s' is not in the registry: add its Entry to the program's registry "
               "(a programming error; its keys test in tests/ should have failed)\n",
               static_cast<int>(name.size()), name.data());
  std::abort();
}

}  // namespace

const SettingInfo& FindSetting(const std::vector<SettingInfo>& registry, const SettingName& key) {
  for (const SettingInfo& info : registry) {
    // A registry may drop a key's flag (environment only), never rename it.
    if ((!info.flag.empty() && info.flag == key.flag) || (!info.env.empty() && info.env == key.env)) return info;
  }
  NotInRegistry(key.name());
}

SettingInfo& FindSetting(std::vector<SettingInfo>& registry, const SettingName& key) {
  return const_cast<SettingInfo&>(FindSetting(std::as_const(registry), key));
}

EnvLookup ProcessEnv() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

Settings Settings::Resolve(const std::vector<SettingInfo>& registry, const std::map<std::string, std::string>& given,
                           const EnvLookup& env) {
  Settings out;
  OldNames olds;
  for (const SettingInfo& info : registry) {
    out.values_[info.flag.empty() ? info.env : info.flag] = ResolveOne(info, given, env, &olds);
  }
  out.notices_ = olds.Notices();
  return out;
}

const SettingValue* Settings::Find(std::string_view name) const {
  auto it = name.empty() ? values_.end() : values_.find(name);
  return it == values_.end() ? nullptr : &it->second;
}

const SettingValue& Settings::Get(std::string_view name) const {
  if (const SettingValue* v = Find(name)) return *v;
  NotInRegistry(name);
}

const SettingValue& Settings::Get(const SettingName& key) const {
  if (const SettingValue* v = Find(key.flag)) return *v;
  if (const SettingValue* v = Find(key.env)) return *v;
  return Get(key.name());  // aborts, naming it
}

StatusOr<int64_t> Settings::Int(const SettingKey<int64_t>& key, int64_t min, int64_t max) const {
  const SettingValue& v = Get(key);
  const std::string text = Trimmed(v.text);
  int64_t n = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, n);
  if (text.empty() || ec != std::errc() || ptr != end) {
    return Status(Code::kInvalidArgument, v.source + ": '" + v.text + "' is not a whole number");
  }
  if (n < min || n > max) {
    return Status(Code::kInvalidArgument, v.source + ": " + v.text + " is outside [" + std::to_string(min) + ", " +
                                              std::to_string(max) + "]");
  }
  return n;
}

StatusOr<uint64_t> Settings::Size(const SettingKey<uint64_t>& key, uint64_t min, uint64_t max) const {
  const SettingValue& v = Get(key);
  StatusOr<uint64_t> size = ParseSize(v.text);
  if (!size.ok()) return size.status().Prefixed(v.source);
  if (*size < min) return OutOfRange(v, "below the minimum", FormatBytes(min));
  if (*size > max) return OutOfRange(v, "above the maximum", FormatBytes(max));
  return size;
}

StatusOr<std::chrono::milliseconds> Settings::Duration(const SettingKey<std::chrono::milliseconds>& key,
                                                       std::chrono::milliseconds min,
                                                       std::chrono::milliseconds max) const {
  const SettingValue& v = Get(key);
  StatusOr<std::chrono::milliseconds> d = ParseDuration(v.text);
  if (!d.ok()) return d.status().Prefixed(v.source);
  if (*d < min) return OutOfRange(v, "below the minimum", FormatMs(min));
  if (*d > max) return OutOfRange(v, "above the maximum", FormatMs(max));
  return d;
}

StatusOr<std::string> Settings::OneOf(const SettingKey<std::string>& key,
                                      const std::vector<std::string>& choices) const {
  const SettingValue& v = Get(key);
  for (const std::string& c : choices) {
    if (v.text == c) return v.text;
  }
  return Status(Code::kInvalidArgument, v.source + ": '" + v.text + "' is not one of " + Join(choices, ", "));
}

std::string SettingsMarkdownTable(const std::vector<SettingInfo>& registry, unsigned table_bit) {
  std::string out = "| flag | environment | default | meaning |\n|---|---|---|---|\n";
  for (const SettingInfo& s : registry) {
    if ((s.tables & table_bit) == 0) continue;
    std::vector<std::string> old;
    for (const SettingAlias& a : s.old_flags) old.push_back("`" + a.name + "`");
    for (const SettingAlias& a : s.old_envs) old.push_back("`" + a.name + "`");
    out += "| " + (s.flag.empty() ? std::string("(none)") : "`" + s.flag + " " + s.value_name + "`");
    out += " | " + (s.env.empty() ? std::string("(none)") : "`" + s.env + "`");
    out += " | " + (!s.default_doc.empty()      ? s.default_doc
                    : !s.default_value.empty() ? "`" + s.default_value + "`"
                                               : std::string("none"));
    out += " | " + s.doc;
    if (!old.empty()) out += "; deprecated old names: " + Join(old, ", ");
    out += " |\n";
  }
  return out;
}

std::string SettingHelp(const SettingInfo& info) {
  std::string out;
  for (char c : info.doc) {
    if (c != '`') out += c;
  }
  if (!info.env.empty() && !info.flag.empty()) out += " [env " + info.env + "]";
  std::vector<std::string> old;
  for (const SettingAlias& a : info.old_flags) old.push_back(a.name);
  for (const SettingAlias& a : info.old_envs) old.push_back(a.name);
  if (!old.empty()) out += " (was " + Join(old, ", ") + ")";
  return out;
}

}  // namespace rs
