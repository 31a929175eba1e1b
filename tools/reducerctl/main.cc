// reducerctl: the command-line client of reducerd's control plane (status,
// sessions, health, drain), the fleet sizing calculator (plan) and the
// training image's self-check (doctor).
// Exit status: 0 ok, 1 the request failed (doctor: the reducers would not be
// used), 2 bad usage, 3 not SERVING.
#include <CLI/CLI.hpp>
#include <grpc/support/log.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "common/units.h"
#include "tools/reducerctl/control_client.h"
#include "tools/reducerctl/doctor_cli.h"
#include "tools/reducerctl/output.h"
#include "tools/reducerctl/sizing.h"

namespace {

constexpr int kFailed = 1;
constexpr int kUsage = 2;
constexpr int kNotServing = 3;

int Fail(const std::string& what, const rs::Status& status) {
  std::fprintf(stderr, "reducerctl: %s: %s\n", what.c_str(), status.message().c_str());
  return kFailed;
}

// Prints a successful response as JSON or as text.
template <typename Response, typename Render>
int Print(const std::string& what, const rs::StatusOr<Response>& response, bool json, Render render) {
  if (!response.ok()) return Fail(what, response.status());
  std::cout << (json ? rs::reducerctl::ToJson(*response) : render(*response));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"reducerctl: talk to a reducerd's control plane (--grpc-listen), or size a reducer fleet."};
  app.set_version_flag("--version", "reducerctl 0.1.0");
  app.require_subcommand(1);
  app.fallthrough();  // --json, --target and the --tls-* flags also after the command

  std::string target = "127.0.0.1:7451";
  std::string timeout_text = "5s";
  bool json = false;
  app.add_option("--target", target, "reducerd's gRPC address HOST:PORT")
      ->envname("REDUCERCTL_TARGET")
      ->capture_default_str();
  app.add_option("--timeout", timeout_text, "Deadline for the call")->capture_default_str();
  rs::reducerctl::TlsFiles tls;
  app.add_option("--tls-ca", tls.ca_file,
                 "TLS: PEM CA bundle that signed reducerd's --grpc-tls-cert (without it, gRPC's default roots)")
      ->envname("REDUCERCTL_TLS_CA")
      ->type_name("FILE");
  app.add_option("--tls-cert", tls.cert_file,
                 "TLS: PEM client certificate, for a reducerd with --grpc-tls-client-ca (mutual TLS); with --tls-key")
      ->envname("REDUCERCTL_TLS_CERT")
      ->type_name("FILE");
  app.add_option("--tls-key", tls.key_file, "TLS: PEM private key of --tls-cert, not encrypted")
      ->envname("REDUCERCTL_TLS_KEY")
      ->type_name("FILE");
  app.add_option("--tls-server-name", tls.server_name,
                 "TLS: the name to expect in reducerd's certificate instead of --target's host (e.g. with an IP "
                 "target and a certificate that names only DNS names)")
      ->envname("REDUCERCTL_TLS_SERVER_NAME")
      ->type_name("NAME");
  app.add_flag("--json", json, "Print JSON (one object per line) instead of tables");

  auto* status = app.add_subcommand("status", "Version, uptime, totals, memory and state of the reducer");
  auto* sessions = app.add_subcommand("sessions", "Live and recently ended sessions, or one with --id");
  std::string session_id;
  sessions->add_option("--id", session_id, "One session in detail: its id, 32 hex digits as in the log");
  auto* health = app.add_subcommand("health", "grpc.health.v1 check: SERVING (exit 0) or NOT_SERVING (exit 3)");
  auto* drain = app.add_subcommand(
      "drain", "Stop accepting sessions, let running ones finish (up to --drain-timeout), then exit");
  auto* plan = app.add_subcommand("plan", "How many reducers a job needs, and the speedup over a ring");
  rs::reducerctl::PlanInput plan_input;
  plan->add_option("--workers", plan_input.workers, "Worker (GPU) nodes")->required();
  plan->add_option("--worker-gbps", plan_input.worker_gbps, "Each worker node's NIC bandwidth, Gbit/s")->required();
  plan->add_option("--reducer-gbps", plan_input.reducer_gbps,
                   "Each reducer machine's NIC bandwidth, Gbit/s (default: --reducer-machine's)");
  plan->add_option("--reducer-machine", plan_input.reducer_machine,
                   "The reducers' Compute Engine machine type (" + rs::reducerctl::KnownMachineTypes() +
                       "): its bandwidth and vCPUs size the fleet, and the plan names it for Vertex AI and the "
                       "JobSet");
  plan->add_option("--reducers", plan_input.reducers, "Evaluate this many reducers instead of the recommended count");
  plan->add_option("--reducer-cores", plan_input.reducer_cores,
                   "Each reducer machine's CPU cores (vCPUs); with it the plan also counts the reducers the CPU needs");
  plan->add_option("--gb-per-core-second", plan_input.gb_per_core_second,
                   "A reducer core's rate: GB of worker input reduced per CPU-second, kernel included "
                   "(measured: bench/cpu_per_byte.sh)")
      ->capture_default_str();
  plan->add_option("--worker-gb-per-core-second", plan_input.worker_gb_per_core_second,
                   "The client library's rate on a worker node, GB per CPU-second")
      ->capture_default_str();
  std::string rtt_text;
  plan->add_option("--rtt", rtt_text,
                   "Round trip between workers and reducers (e.g. 300us, 20ms); with it the plan also sizes the "
                   "socket buffers");

  auto* doctor = app.add_subcommand("doctor", rs::reducerctl::kDoctorDescription);
  rs::reducerctl::DoctorCommandLine doctor_line;
  rs::reducerctl::AddDoctorFlags(*doctor, doctor_line);

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "reducerctl: %s\nRun 'reducerctl --help' for the commands and flags.\n", e.what());
    return kUsage;
  }

  if (*plan) {
    if (!rtt_text.empty()) {
      auto rtt = rs::ParseFineDuration(rtt_text);
      if (!rtt.ok()) {
        std::fprintf(stderr, "reducerctl plan: --rtt: %s\n", rtt.status().message().c_str());
        return kUsage;
      }
      plan_input.rtt_ms = static_cast<double>(rtt->count()) / 1e3;
    }
    // Neither bandwidth nor machine: size for the machine Google recommends.
    if (plan_input.reducer_gbps == 0 && plan_input.reducer_machine.empty()) {
      plan_input.reducer_machine = rs::reducerctl::kDefaultReducerMachine;
    }
    auto p = rs::reducerctl::ComputePlan(plan_input);
    if (!p.ok()) {
      std::fprintf(stderr, "reducerctl plan: %s\n", p.status().message().c_str());
      return kUsage;
    }
    std::cout << (json ? rs::reducerctl::PlanJson(*p) : rs::reducerctl::RenderPlan(*p));
    return 0;
  }

  if (*doctor) return rs::reducerctl::RunDoctorCommand(doctor_line, json, "reducerctl doctor", std::cout);

  auto timeout = rs::ParseDuration(timeout_text);
  if (!timeout.ok() || timeout->count() <= 0) {
    std::fprintf(stderr, "reducerctl: --timeout: '%s' is not a positive duration (e.g. 5s, 500ms)\n",
                 timeout_text.c_str());
    return kUsage;
  }
  auto made = rs::reducerctl::ControlClient::Create(target, *timeout, tls);
  if (!made.ok()) {
    std::fprintf(stderr, "reducerctl: %s\n", made.status().message().c_str());
    return kUsage;
  }
  rs::reducerctl::ControlClient& client = **made;
  // Each failure is explained in reducerctl's own message, which quotes
  // gRPC's; gRPC's log lines (a failed TLS handshake is one) would only repeat
  // it. They stay when GRPC_VERBOSITY asks for more than errors (read by gRPC
  // when the client above started it).
  if (!gpr_should_log(GPR_LOG_SEVERITY_INFO)) gpr_set_log_function([](gpr_log_func_args*) {});
  if (*status) return Print("status", client.GetStatus(), json, rs::reducerctl::RenderStatus);
  if (*sessions && !session_id.empty()) {
    return Print("sessions --id " + session_id, client.GetSession(session_id), json, rs::reducerctl::RenderSession);
  }
  if (*sessions) return Print("sessions", client.ListSessions(), json, rs::reducerctl::RenderSessions);
  if (*drain) return Print("drain", client.Drain(), json, rs::reducerctl::RenderDrain);
  if (*health) {
    auto h = client.CheckHealth();
    if (!h.ok()) return Fail("health", h.status());
    const std::string name = rs::reducerctl::health::HealthCheckResponse::ServingStatus_Name(h->status());
    std::cout << (json ? rs::reducerctl::ToJson(*h) : name + "\n");
    return h->status() == rs::reducerctl::health::HealthCheckResponse::SERVING ? 0 : kNotServing;
  }
  return kUsage;
}
