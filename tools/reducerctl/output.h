// What reducerctl prints: human-readable tables by default, JSON (one
// object per line, proto3 JSON mapping with the .proto field names) with
// --json. Pure functions from responses to text.
#pragma once

#include <google/protobuf/message.h>

#include <string>

#include "proto/reducer_control.pb.h"
#include "tools/reducerctl/sizing.h"

namespace rs::reducerctl {

namespace v1 = ::rs::control::v1;

std::string ToJson(const google::protobuf::Message& message);

std::string RenderStatus(const v1::ServerStatus& status);
std::string RenderSessions(const v1::ListSessionsResponse& sessions);
std::string RenderSession(const v1::SessionInfo& session);
std::string RenderDrain(const v1::DrainResponse& drain);
std::string RenderPlan(const Plan& plan);
std::string PlanJson(const Plan& plan);

// "45s", "12m03s", "3h07m".
std::string FormatSeconds(double seconds);

}  // namespace rs::reducerctl
