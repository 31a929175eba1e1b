// Plain-text tables for reducerctl's human-readable output: columns as wide
// as their widest cell, two spaces apart. A value type.
#pragma once

#include <string>
#include <vector>

namespace rs::reducerctl {

class Table {
 public:
  // An empty header gives a table without a header line (key/value lists).
  explicit Table(std::vector<std::string> header = {}) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace rs::reducerctl
