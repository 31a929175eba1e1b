// A session member that drops whatever it is sent: for tests of a session's
// bookkeeping (roster, counters, stragglers), where what reaches the ranks
// does not matter.
#pragma once

#include <cstdint>
#include <vector>

#include "server/core/session_member.h"

namespace rs::server {

class NullMember : public SessionMember {
 public:
  void SendReady() override {}
  void SendResult(const ResultPart&) override {}
  void SendErrorAndClose(const Status&) override {}
  void SendControl(std::vector<uint8_t>) override {}
  void CloseQuietly() override {}
};

}  // namespace rs::server
