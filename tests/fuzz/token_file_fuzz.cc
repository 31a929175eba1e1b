// Fuzz target: the job-token file reader every component shares
// (protocol::ReadTokenFile: reducerd, the NCCL plugin, reducer-bench,
// rs-train). The input is the file's content. Properties: a token comes
// back exactly when the file holds something other than blanks (space,
// tab, CR, LF); it is the file's content without the blanks around it, so
// it neither starts nor ends with one; an error names the file.
#include <unistd.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "protocol/auth.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

bool Blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// One file for the whole run, removed when the process exits.
struct TokenFile {
  TokenFile() {
    char name[] = "/tmp/rs-token-fuzz-XXXXXX";
    const int fd = mkstemp(name);
    FUZZ_CHECK(fd >= 0);
    close(fd);
    path = name;
  }
  ~TokenFile() { unlink(path.c_str()); }
  std::string path;
};

const std::string& Path() {
  static const TokenFile file;
  return file.path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view content(reinterpret_cast<const char*>(data), size);
  FILE* f = std::fopen(Path().c_str(), "wb");
  FUZZ_CHECK(f != nullptr);
  // An empty input may come as NULL, which fwrite must not be given.
  FUZZ_CHECK(size == 0 || std::fwrite(data, 1, size, f) == size);
  std::fclose(f);

  size_t begin = 0;
  size_t end = content.size();
  while (begin < end && Blank(content[begin])) ++begin;
  while (end > begin && Blank(content[end - 1])) --end;
  const rs::StatusOr<std::string> token = rs::protocol::ReadTokenFile(Path());
  if (begin == end) {
    FUZZ_CHECK(!token.ok());
    FUZZ_CHECK(token.status().message().find(Path()) != std::string::npos);
    return 0;
  }
  FUZZ_CHECK(token.ok());
  FUZZ_CHECK(*token == content.substr(begin, end - begin));
  FUZZ_CHECK(!Blank(token->front()) && !Blank(token->back()));
  return 0;
}
