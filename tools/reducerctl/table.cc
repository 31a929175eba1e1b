#include "tools/reducerctl/table.h"

#include <algorithm>

namespace rs::reducerctl {

std::string Table::Render() const {
  std::vector<const std::vector<std::string>*> lines;
  if (!header_.empty()) lines.push_back(&header_);
  for (const auto& r : rows_) lines.push_back(&r);
  std::vector<size_t> width;
  for (const auto* line : lines) {
    if (width.size() < line->size()) width.resize(line->size(), 0);
    for (size_t c = 0; c < line->size(); ++c) width[c] = std::max(width[c], (*line)[c].size());
  }
  std::string out;
  for (const auto* line : lines) {
    std::string text;
    for (size_t c = 0; c < line->size(); ++c) {
      text += (*line)[c];
      if (c + 1 < line->size()) text.append(width[c] - (*line)[c].size() + 2, ' ');
    }
    out += text + "\n";
  }
  return out;
}

}  // namespace rs::reducerctl
