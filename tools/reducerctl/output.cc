#include "tools/reducerctl/output.h"

#include <google/protobuf/util/json_util.h>

#include <cstdio>

#include "common/units.h"
#include "tools/reducerctl/table.h"

namespace rs::reducerctl {
namespace {

std::string Format(const char* fmt, double value) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, value);
  return buf;
}

std::string Count(uint64_t n) { return std::to_string(n); }

std::string SessionState(v1::SessionInfo::State state) {
  switch (state) {
    case v1::SessionInfo::JOINING: return "joining";
    case v1::SessionInfo::RUNNING: return "running";
    case v1::SessionInfo::FAILED: return "failed";
    case v1::SessionInfo::ENDED: return "ended";
    default: return "unknown";
  }
}

// "3 (97%)": the rank most often last to arrive and its share of the pieces.
std::string Slowest(const v1::SessionInfo& s) {
  if (s.slowest_ranks_size() == 0 || s.pieces_completed() == 0) return "-";
  const auto& top = s.slowest_ranks(0);
  const double share = 100.0 * static_cast<double>(top.last_arrivals()) / static_cast<double>(s.pieces_completed());
  return std::to_string(top.rank()) + " (" + Format("%.0f", share) + "%)";
}

std::string Gbps(double gbps) { return Format("%.4g Gbps", gbps) + " = " + Format("%.4g GB/s", gbps / 8); }

}  // namespace

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out + "\n";
}

std::string FormatSeconds(double seconds) {
  const auto s = static_cast<long long>(seconds);
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof(buf), "%.3gs", seconds);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", s / 3600, s % 3600 / 60);
  }
  return buf;
}

std::string RenderStatus(const v1::ServerStatus& s) {
  Table t;
  t.AddRow({"version", s.version()});
  t.AddRow({"state", s.state() == v1::ServerStatus::DRAINING ? "draining (no new sessions)" : "serving"});
  t.AddRow({"uptime", FormatSeconds(s.uptime_seconds())});
  t.AddRow({"data plane", s.data_address() + ", " + std::to_string(s.io_threads()) + " I/O threads"});
  t.AddRow({"sessions", Count(s.sessions_active()) + " active, " + Count(s.sessions_started()) + " started, " +
                            Count(s.sessions_failed()) + " failed"});
  t.AddRow({"connections", Count(s.connections_active()) + " active, " + Count(s.connections_accepted()) +
                               " accepted"});
  t.AddRow({"operations", Count(s.operations_completed()) + " (" + Count(s.pieces_completed()) + " pieces, " +
                              Count(s.pieces_in_parts()) + " of them sent in parts)"});
  t.AddRow({"bytes", FormatBytes(s.bytes_received()) + " received, " + FormatBytes(s.bytes_sent()) + " sent"});
  t.AddRow({"memory", FormatBytes(s.memory_in_use_bytes()) + " in use of " + FormatBytes(s.memory_limit_bytes()) +
                          " (peak " + FormatBytes(s.memory_peak_bytes()) + "), " + Count(s.memory_waits()) +
                          " waits"});
  if (s.tcp_send_busy_seconds() > 0) {
    char waits[160];
    std::snprintf(waits, sizeof(waits), "%.1f %% for the ranks' receive windows, %.1f %% for the send buffer",
                  100.0 * s.tcp_receive_window_wait_seconds() / s.tcp_send_busy_seconds(),
                  100.0 * s.tcp_send_buffer_wait_seconds() / s.tcp_send_busy_seconds());
    t.AddRow({"tcp waits", std::string(waits) + " (of " + FormatSeconds(s.tcp_send_busy_seconds()) +
                               " sending results)"});
  }
  return t.Render();
}

std::string RenderSessions(const v1::ListSessionsResponse& list) {
  if (list.sessions_size() == 0) return "no sessions\n";
  Table t({"SESSION", "STATE", "RANKS", "OPS", "PIECES", "RECEIVED", "AGE", "STRAGGLER WAIT", "SLOWEST RANK"});
  for (const auto& s : list.sessions()) {
    t.AddRow({s.id(), SessionState(s.state()), Count(s.ranks_joined()) + "/" + Count(s.world_size()),
              Count(s.operations_completed()), Count(s.pieces_completed()), FormatBytes(s.bytes_received()),
              FormatSeconds(s.age_seconds()), FormatSeconds(s.straggler_wait_seconds()), Slowest(s)});
  }
  return t.Render();
}

std::string RenderSession(const v1::SessionInfo& s) {
  Table t;
  t.AddRow({"session", s.id()});
  t.AddRow({"state", SessionState(s.state())});
  t.AddRow({"ranks", Count(s.ranks_joined()) + " of " + Count(s.world_size()) + " connected, " +
                         Count(s.streams_per_rank()) + " streams each"});
  t.AddRow({"operations", Count(s.operations_completed()) + " (" + Count(s.pieces_completed()) + " pieces)"});
  t.AddRow({"bytes", FormatBytes(s.bytes_received()) + " received, " + FormatBytes(s.bytes_sent()) + " sent"});
  if (s.state() != v1::SessionInfo::JOINING) {
    std::string results = "in parts of at least " + FormatBytes(s.result_part_bytes()) +
                          " (large operations on short paths: whole pieces)";
    if (s.result_part_bytes() == 0) {
      results = s.has_rank_without_parts() ? "whole pieces: rank " + Count(s.rank_without_parts()) +
                                                 "'s client does not take parts (an older client)"
                                           : "whole pieces";
    }
    t.AddRow({"results", results});
  }
  t.AddRow({"age", FormatSeconds(s.age_seconds())});
  t.AddRow({"straggler wait", FormatSeconds(s.straggler_wait_seconds()) + " in total"});
  if (!s.failure().empty()) t.AddRow({"failure", s.failure()});
  std::string out = t.Render();
  if (s.slowest_ranks_size() > 0) {
    Table ranks({"RANK", "LAST TO ARRIVE", "SHARE OF PIECES"});
    for (const auto& r : s.slowest_ranks()) {
      const double share = s.pieces_completed() ? 100.0 * static_cast<double>(r.last_arrivals()) /
                                                      static_cast<double>(s.pieces_completed())
                                                : 0;
      ranks.AddRow({Count(r.rank()), Count(r.last_arrivals()), Format("%.1f%%", share)});
    }
    out += "\n" + ranks.Render();
  }
  return out;
}

std::string RenderDrain(const v1::DrainResponse& d) {
  return "draining: no new sessions; waiting for " + Count(d.sessions_running()) + " running session(s) for up to " +
         FormatSeconds(d.drain_timeout_seconds()) + ", then the reducer exits\n";
}

std::string RenderPlan(const Plan& p) {
  const PlanInput& in = p.input;
  const bool cores = in.reducer_cores > 0;
  Table t;
  t.AddRow({"workers", Count(in.workers) + " x " + Format("%g", in.worker_gbps) + " Gbps = " +
                           Format("%g", p.worker_total_gbps) + " Gbps"});
  std::string limit;
  if (p.cpu_bound) {
    limit = " (their cores are too few for the workers' total: the reducers' CPU is the bottleneck)";
  } else if (p.reducer_bound) {
    limit = " (less than the workers': the reducers are the bottleneck)";
  }
  t.AddRow({"reducers", Count(p.reducers) + " x " + Format("%g", in.reducer_gbps) + " Gbps = " +
                            Format("%g", p.reducer_total_gbps) + " Gbps" + limit});
  if (cores) {
    t.AddRow({"recommended", Count(p.recommended_reducers) + " reducers (NIC: " + Count(p.nic_reducers) +
                                 ", the fewest with total >= the workers' total; CPU: " + Count(p.cpu_reducers) +
                                 ", the fewest with the cores to reduce it)"});
  } else {
    t.AddRow({"recommended", Count(p.recommended_reducers) + " reducers (the fewest with total >= the workers' total)"});
  }
  t.AddRow({"algbw", Gbps(p.algbw_gbps) + " per worker" + (p.reducer_bound ? "" : " (the line rate)")});
  t.AddRow({"ring algbw", Gbps(p.ring_algbw_gbps) + " per worker, for comparison"});
  t.AddRow({"speedup", Format("%.2fx", p.speedup) + " over a ring all-reduce"});
  std::string cpu = Format("%.3g", p.reducer_cores_per_worker) + " cores per worker node at its line rate (" +
                    Format("%.3g", in.worker_gbps / 8) + " GB/s / " + Format("%.3g", in.gb_per_core_second) +
                    " GB per core-second), " + Format("%.3g", p.reducer_cores_needed) + " in all";
  if (cores) {
    cpu += "; " + Count(p.reducers) + " x " + Format("%g", in.reducer_cores) + " = " +
           Format("%g", p.reducer_cores_total) + " cores";
  } else {
    cpu += " (--reducer-cores sizes the fleet for it)";
  }
  t.AddRow({"reducer CPU", cpu});
  t.AddRow({"worker CPU", Format("%.3g", p.worker_cores) + " cores of each worker node for the client library (" +
                              Format("%.3g", in.worker_gb_per_core_second) + " GB per core-second)"});
  t.AddRow({"connections", "each reducer serves all " + Count(in.workers) +
                               " workers (fewer, larger reducers mean fewer connections)"});
  // Where the count goes: Vertex AI's reducer pool and the JobSet's
  // reducers (deploy/), one machine each.
  const std::string machine = in.reducer_machine.empty()
                                  ? "a type with " + Format("%g", in.reducer_gbps) +
                                        " Gbps (--reducer-machine names one; " + std::string(kDefaultReducerMachine) +
                                        " has 32)"
                                  : in.reducer_machine;
  t.AddRow({"vertex", "workerPoolSpecs[2]: replicaCount " + Count(p.reducers) + ", machineSpec.machineType " +
                          machine});
  t.AddRow({"jobset", "replicatedJobs \"reducers\": parallelism and completions " + Count(p.reducers) +
                          ", one per CPU node (" + machine + "); REDUCER_ADDRS train-reducers-0-{0.." +
                          Count(p.reducers - 1) + "}.train:7450 for the JobSet \"train\""});
  if (in.rtt_ms > 0) {
    std::string buffers = Gbps(p.connection_gbps) + " per connection; at a " + Format("%g", in.rtt_ms) +
                          " ms round trip that is " + FormatBytes(static_cast<uint64_t>(p.connection_bdp_bytes)) +
                          " in flight, so the buffers' ceilings need about " +
                          FormatBytes(static_cast<uint64_t>(p.buffer_ceiling_bytes));
    const std::string defaults = "Linux's defaults (" +
                                 FormatBytes(static_cast<uint64_t>(kDefaultSendBufferCeiling)) + " send, " +
                                 FormatBytes(static_cast<uint64_t>(kDefaultReceiveBufferCeiling)) + " receive)";
    if (p.default_buffers_suffice) {
      buffers += ": " + defaults + " suffice";
    } else {
      buffers += ": more than " + defaults + "; raise the third value of "
                 "net.ipv4.tcp_wmem and tcp_rmem to at least that on workers and reducers";
    }
    t.AddRow({"socket buffers", buffers});
  }
  return t.Render();
}

std::string PlanJson(const Plan& p) {
  char buf[1536];
  std::snprintf(buf, sizeof(buf),
                "{\"workers\":%u,\"worker_gbps\":%.10g,\"reducer_gbps\":%.10g,\"reducer_machine\":\"%s\","
                "\"reducers\":%u,"
                "\"recommended_reducers\":%u,\"worker_total_gbps\":%.10g,\"reducer_total_gbps\":%.10g,"
                "\"algbw_gbps\":%.10g,\"ring_algbw_gbps\":%.10g,\"speedup\":%.10g,\"reducer_bound\":%s,"
                "\"reducer_cores\":%.10g,\"gb_per_core_second\":%.10g,\"worker_gb_per_core_second\":%.10g,"
                "\"nic_reducers\":%u,\"cpu_reducers\":%u,\"reducer_cores_per_worker\":%.10g,"
                "\"reducer_cores_needed\":%.10g,\"reducer_cores_total\":%.10g,\"worker_cores\":%.10g,"
                "\"cpu_bound\":%s,\"rtt_ms\":%.10g,\"connection_gbps\":%.10g,\"connection_bdp_bytes\":%.10g,"
                "\"buffer_ceiling_bytes\":%.10g,\"default_buffers_suffice\":%s}\n",
                p.input.workers, p.input.worker_gbps, p.input.reducer_gbps, p.input.reducer_machine.c_str(),
                p.reducers, p.recommended_reducers,
                p.worker_total_gbps, p.reducer_total_gbps, p.algbw_gbps, p.ring_algbw_gbps, p.speedup,
                p.reducer_bound ? "true" : "false", p.input.reducer_cores, p.input.gb_per_core_second,
                p.input.worker_gb_per_core_second, p.nic_reducers, p.cpu_reducers, p.reducer_cores_per_worker,
                p.reducer_cores_needed, p.reducer_cores_total, p.worker_cores, p.cpu_bound ? "true" : "false",
                p.input.rtt_ms, p.connection_gbps, p.connection_bdp_bytes, p.buffer_ceiling_bytes,
                p.default_buffers_suffice ? "true" : "false");
  return buf;
}

}  // namespace rs::reducerctl
