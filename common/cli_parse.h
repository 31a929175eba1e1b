// Command-line parsing with CLI11 turned into a Status, shared by reducerd
// and reducer-bench: --help/--version print and give kCancelled (exit 0),
// a bad flag gives kInvalidArgument with CLI11's message naming it.
// SettingFlags puts a settings registry (settings.h) on the command line.
// Header-only: only programs that link CLI11 include it.
#pragma once

#include <CLI/CLI.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "common/settings.h"
#include "common/status.h"

namespace rs {

inline Status ParseCommandLine(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    app.exit(e);
    return Status(Code::kCancelled, "help printed");
  } catch (const CLI::ParseError& e) {
    return Status(Code::kInvalidArgument, e.what());
  }
  return Status::Ok();
}

// Adds every setting's flag to `app` as a text option (the registry's
// description, variable and default in --help), each old flag in a
// "Deprecated" group, and the environment-only settings to the help's
// footer. Values are checked later, by Settings, against the names they came
// from. Keep this object alive until Given() has been read.
class SettingFlags {
 public:
  SettingFlags(CLI::App& app, const std::vector<SettingInfo>& registry) {
    std::string env_only;
    std::vector<std::string> old_order;
    std::map<std::string, std::pair<std::string, std::string>> olds;  // name -> (value name, new names)
    for (const SettingInfo& s : registry) {
      if (s.flag.empty()) {
        env_only += "\n  " + s.env + ": " + SettingHelp(s);
        continue;
      }
      CLI::Option* o = Add(app, s.flag, SettingHelp(s))->type_name(s.value_name);
      const std::string& shown = s.default_doc.empty() ? s.default_value : s.default_doc;
      if (!shown.empty()) o->default_str(shown);
      for (const SettingAlias& old : s.old_flags) {
        auto [it, fresh] = olds.try_emplace(old.name, s.value_name, s.flag);
        if (fresh) {
          old_order.push_back(old.name);
        } else {
          it->second.second += " and " + s.flag;  // one old flag may stand for two settings
        }
      }
    }
    for (const std::string& name : old_order) {
      Add(app, name, "use " + olds[name].second)->type_name(olds[name].first)->group("Deprecated, still accepted");
    }
    if (!env_only.empty()) app.footer("Environment only:" + env_only + "\n");
  }
  SettingFlags(const SettingFlags&) = delete;
  SettingFlags& operator=(const SettingFlags&) = delete;

  // The flags that appeared on the command line, with their text.
  std::map<std::string, std::string> Given() const {
    std::map<std::string, std::string> out;
    for (const Slot& slot : slots_) {
      if (slot.option->count() > 0) out[slot.name] = *slot.text;
    }
    return out;
  }

 private:
  struct Slot {
    std::string name;
    std::unique_ptr<std::string> text;
    CLI::Option* option = nullptr;
  };

  CLI::Option* Add(CLI::App& app, const std::string& name, const std::string& help) {
    Slot slot{name, std::make_unique<std::string>(), nullptr};
    slot.option = app.add_option(name, *slot.text, help);
    slots_.push_back(std::move(slot));
    return slots_.back().option;
  }

  std::vector<Slot> slots_;
};

}  // namespace rs
