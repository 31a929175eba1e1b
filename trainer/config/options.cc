#include "trainer/config/options.h"

#include <CLI/CLI.hpp>
#include <cmath>
#include <optional>

#include "client/client_settings.h"
#include "common/cli_parse.h"
#include "common/cluster_spec.h"
#include "common/units.h"
#include "protocol/auth.h"
#include "protocol/wire.h"
#include "trainer/config/trainer_settings.h"

namespace rs::trainer {
namespace {

using std::chrono::milliseconds;
using client::kMaxTimeout;

// The trainer's flags without a variable, as CLI11 leaves them: text,
// validated afterwards.
struct RawFlags {
  std::string backend = "cpu", rendezvous_timeout = "120s", grad_dtype = "float32";
};

// Stores a parsed value, or passes its error on.
template <typename T, typename U>
Status Assign(StatusOr<U> value, T* dest) {
  if (!value.ok()) return value.status();
  *dest = static_cast<T>(*value);
  return Status::Ok();
}

// "--rank 4" or "RANK=4", for messages about a value that parsed.
std::string Show(const SettingValue& v) {
  return v.source.rfind("--", 0) == 0 ? v.source + " " + v.text : v.source + "=" + v.text;
}

// Rank and world from the flags or variables, else from CLUSTER_SPEC's
// task: workerpool0 is rank 0, workerpool1[i] rank 1 + i.
Status ResolveRanks(const Settings& s, const ClusterSpec* spec, TrainOptions* o) {
  const SettingValue& rank = s.Get(setting::kRank);
  const SettingValue& world = s.Get(setting::kWorld);
  if (rank.is_default && world.is_default && spec != nullptr && !spec->task_type.empty()) {
    const auto* chief = spec->Pool(ClusterSpec::kChiefPool);
    const auto* workers = spec->Pool(ClusterSpec::kWorkerPool);
    const size_t n_chief = chief ? chief->size() : 0, n_workers = workers ? workers->size() : 0;
    if (spec->task_type == ClusterSpec::kReducerPool) {
      return Status(Code::kInvalidArgument,
                    "CLUSTER_SPEC says this replica is a reducer (workerpool2): run reducerd here, not rs-train");
    }
    if (n_chief + n_workers == 0 || spec->Self() == nullptr ||
        (spec->task_type != ClusterSpec::kChiefPool && spec->task_type != ClusterSpec::kWorkerPool)) {
      return Status(Code::kInvalidArgument,
                    "CLUSTER_SPEC: task " + spec->task_type + "[" + std::to_string(spec->task_index) +
                        "] is not a workerpool0 or workerpool1 replica; set RANK and WORLD_SIZE");
    }
    o->world = static_cast<uint32_t>(n_chief + n_workers);
    o->rank = static_cast<uint32_t>(spec->task_type == ClusterSpec::kChiefPool ? spec->task_index
                                                                               : n_chief + spec->task_index);
    return Status::Ok();
  }
  if (!world.is_default) RS_RETURN_IF_ERROR(Assign(s.Int(setting::kWorld, 1, protocol::kMaxWorld), &o->world));
  if (!rank.is_default) RS_RETURN_IF_ERROR(Assign(s.Int(setting::kRank, 0, protocol::kMaxWorld - 1), &o->rank));
  if (o->rank >= o->world) {
    return Status(Code::kInvalidArgument, (rank.is_default ? std::string("rank 0") : Show(rank)) + " is not below " +
                                              (world.is_default ? std::string("a world size of 1") : Show(world)));
  }
  return Status::Ok();
}

Status ResolveMaster(const Settings& s, const ClusterSpec* spec, TrainOptions* o) {
  const SettingValue& addr = s.Get(setting::kMasterAddr);
  const SettingValue& port = s.Get(setting::kMasterPort);
  if (addr.is_default != port.is_default) {
    const char* missing = addr.is_default ? "MASTER_ADDR (--master-addr)" : "MASTER_PORT (--master-port)";
    return Status(Code::kInvalidArgument, (addr.is_default ? port.source : addr.source) + " is set but " + missing +
                                              " is not; the rendezvous needs both");
  }
  if (!addr.is_default) {
    RS_RETURN_IF_ERROR(Assign(s.Int(setting::kMasterPort, 1, 65535), &o->master_port));
    o->master_host = addr.text;
    o->master_source = addr.source + ":" + port.source;
    // torchrun's agent serves its own store on MASTER_PORT.
    if (port.source == "MASTER_PORT" && s.Get(setting::kTorchelasticAgentStore).text == "True") {
      if (o->master_port == 65535)
        return Status(Code::kInvalidArgument, "MASTER_PORT=65535 leaves no port for the rendezvous");
      ++o->master_port;
      o->master_source += "+1 (torchrun holds MASTER_PORT)";
    }
    return Status::Ok();
  }
  if (spec != nullptr) {
    const auto* chief = spec->Pool(ClusterSpec::kChiefPool);
    if (chief != nullptr && !chief->empty()) {
      StatusOr<HostPort> hp = ParseHostPort((*chief)[0], "");
      if (!hp.ok() || hp->host.empty() || hp->port == 0) {
        return Status(Code::kInvalidArgument, "CLUSTER_SPEC workerpool0[0] '" + (*chief)[0] + "' is not HOST:PORT");
      }
      o->master_host = hp->host;
      o->master_port = hp->port;
      o->master_source = "CLUSTER_SPEC workerpool0[0]";
    }
  }
  return Status::Ok();
}

Status ResolveReducers(const Settings& s, const ClusterSpec* spec, TrainOptions* o) {
  if (const SettingValue& list = s.Get(setting::kReducers); !list.is_default) {
    StatusOr<std::vector<client::Endpoint>> eps = client::ParseEndpoints(list.text);
    if (!eps.ok()) return eps.status().Prefixed(list.source);
    o->reducers = std::move(eps).value();
    o->reducers_source = list.source;
    return Status::Ok();
  }
  const auto* pool = spec ? spec->Pool(ClusterSpec::kReducerPool) : nullptr;
  if (pool == nullptr) return Status::Ok();
  for (const std::string& entry : *pool) {
    StatusOr<std::vector<client::Endpoint>> ep = client::ParseEndpoints(entry);
    if (!ep.ok() || ep->size() != 1 || entry.find(',') != std::string::npos) {
      return Status(Code::kInvalidArgument, "CLUSTER_SPEC workerpool2: '" + entry + "' is not HOST:PORT");
    }
    o->reducers.push_back(ep->front());
  }
  o->reducers_source = "CLUSTER_SPEC workerpool2";
  return Status::Ok();
}

// The token file named by the flag, else the token, else the file named by
// the variable.
Status ReadToken(const Settings& s, std::string* token) {
  const SettingValue& file = s.Get(setting::kJobTokenFile);
  const SettingValue& value = s.Get(setting::kJobToken);
  if (!file.is_default && (file.source != "REDUCER_JOB_TOKEN_FILE" || value.is_default)) {
    StatusOr<std::string> t = protocol::ReadTokenFile(file.text);
    if (!t.ok()) return t.status().Prefixed(file.source);
    *token = std::move(t).value();
  } else if (!value.is_default) {
    *token = value.text;
  }
  return Status::Ok();
}

// The client's settings, from their shared list (client/client_settings.h).
Status ResolveClient(const Settings& s, TrainOptions* o) {
  o->session = s.Get(setting::kSession).text;
  o->session_source = s.Get(setting::kSession).is_default ? "REDUCER_SESSION" : s.Get(setting::kSession).source;
  o->client.reducers = o->reducers;  // REDUCER_MIN_REDUCERS is bounded by them
  return client::ApplyClientSettings(s, &o->client, o->reducers_source);
}

// Settings that only make sense together.
Status CheckCombination(const TrainOptions& o, bool gpu_built) {
  if (o.backend == BackendKind::kGpu) {
    if (!gpu_built) {
      return Status(Code::kInvalidArgument,
                    "--backend gpu: this rs-train was built without CUDA and NCCL (CMake did not find them)");
    }
    if (o.verify) {
      return Status(Code::kInvalidArgument,
                    "--verify needs --backend cpu: the reference recomputes every rank's gradients on this CPU");
    }
    if (o.world > 1 && o.master_host.empty()) {
      return Status(Code::kInvalidArgument,
                    "the GPU backend with WORLD_SIZE > 1 needs MASTER_ADDR and MASTER_PORT (or --master-addr and "
                    "--master-port, or CLUSTER_SPEC) to hand out NCCL's id");
    }
  } else if (o.world > 1 && o.reducers.empty()) {
    return Status(Code::kInvalidArgument,
                  "no reducers: set REDUCER_ADDRS (or --reducers, or CLUSTER_SPEC with workerpool2) for " +
                      std::to_string(o.world) + " ranks");
  }
  if (o.bucket_mb <= 0 || !std::isfinite(o.bucket_mb) || o.bucket_mb > 1 << 20) {
    return Status(Code::kInvalidArgument, "--bucket-mb must be above 0 (and at most 1 TiB)");
  }
  if (!std::isfinite(o.sgd.lr) || o.sgd.lr <= 0 || !std::isfinite(o.sgd.momentum) || o.sgd.momentum < 0 ||
      o.sgd.momentum >= 1) {
    return Status(Code::kInvalidArgument, "--lr must be above 0 and --momentum in [0, 1)");
  }
  return Status::Ok();
}

// The CPU backend's client settings (all the shared ones but the two
// timeouts): a flag for one of them under --backend gpu would be silently
// ignored (the NCCL plugin reads the variables).
Status CheckGpuFlags(const Settings& s) {
  for (const client::ClientSetting& setting : client::ClientSettings()) {
    const SettingInfo& info = setting.info;
    if (info.flag == client::setting::kOpTimeout.flag || info.flag == client::setting::kConnectTimeout.flag) continue;
    const SettingValue& v = s.Get(info.flag);
    if (!v.is_default && v.source.rfind("--", 0) == 0) {
      return Status(Code::kInvalidArgument, v.source + " is for --backend cpu; under --backend gpu the NCCL plugin "
                                            "reads " + info.env + " from the environment instead");
    }
  }
  return Status::Ok();
}

constexpr char kHelpFooter[] =
    "Sizes take units (4096, 64KiB, 1MiB); durations must (500ms, 30s, 2m). Old names still work\n"
    "and are reported once as deprecated.\n"
    "Failures: with --failover 1 (the default) a lost reducer (killed, frozen, cut off) is survived:\n"
    "the ranks agree on the remaining reducers, redo what was in flight and train on with the same\n"
    "bits; rank 0's summary says so (epoch, live reducers, operations redone). With --failover 0, or\n"
    "below --min-reducers, it ends every rank naming the reducer. A lost rank always ends the run,\n"
    "naming it.\n"
    "Exit status: 0 trained and every check passed; 1 training failed (a lost rank, too few reducers,\n"
    "a check that failed); 2 bad flags or environment.\n";

}  // namespace

std::string TrainOptions::AgreedSettings() const {
  std::string reducer_list;
  for (const auto& e : reducers) reducer_list += (reducer_list.empty() ? "" : ",") + e.ToString();
  const std::string lines[] = {
      std::string("backend=") + (backend == BackendKind::kGpu ? "gpu" : "cpu"),
      "world=" + std::to_string(world),
      "model=" + shape.ToString(),
      "batch=" + std::to_string(batch),
      "seed=" + std::to_string(seed),
      "steps=" + std::to_string(steps),
      "lr=" + std::to_string(sgd.lr) + " momentum=" + std::to_string(sgd.momentum),
      "bucket_mb=" + std::to_string(bucket_mb),
      "grad_dtype=" + std::string(DataTypeName(grad_dtype)),
      "check_every=" + std::to_string(check_every),
      "log_every=" + std::to_string(log_every),
      "reducers=" + reducer_list,
      // The client's settings that the reducers or the failover protocol
      // compare across ranks: caught here, by name, before any traffic.
      "streams=" + (client.streams_per_reducer ? std::to_string(*client.streams_per_reducer) : std::string("auto")),
      "max_piece=" + (client.max_piece_bytes ? std::to_string(*client.max_piece_bytes) : std::string("auto")) +
          " min_piece=" + (client.min_piece_bytes ? std::to_string(*client.min_piece_bytes) : std::string("auto")),
      "failover=" + std::to_string(client.failover) + " min_reducers=" + std::to_string(client.min_reducers),
      "crc=" + std::to_string(client.crc),
      "wire_dtype=" + std::string(protocol::WireTypeName(client.wire_dtype)),
  };
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

StatusOr<TrainOptions> ParseOptions(int argc, char** argv, const EnvLookup& env, bool gpu_built) {
  CLI::App app{
      "rs-train: data-parallel training of a multi-layer perceptron on synthetic data, the way PyTorch DDP\n"
      "does it: gradients in buckets, each bucket all-reduced as soon as backward has produced it, then\n"
      "averaged and applied with SGD + momentum. One process per rank. The CPU backend all-reduces\n"
      "through the reducers with the client library; the GPU backend (CUDA, cuBLAS) through NCCL, and\n"
      "so through the reducer NCCL plugin when it is loaded (which reads the REDUCER_* variables\n"
      "itself). Every few steps the ranks compare a checksum of their parameters; --verify also\n"
      "checks, bit for bit, every step against a single-process reference. Rank 0 prints progress\n"
      "and a summary. Flags shown with an environment variable take their value from it when absent."};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  TrainOptions o;
  RawFlags raw;
  app.add_option("--backend", raw.backend, std::string("cpu or gpu") + (gpu_built ? "" : " (not built here)"))
      ->capture_default_str();
  app.add_option("--steps", o.steps, "Training steps")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--batch", o.batch, "Examples per rank and step")
      ->check(CLI::Range(1, 1 << 16))
      ->capture_default_str();
  app.add_option("--width", o.shape.width, "Hidden layer width: sets the gradient size (~ (depth-2) x width^2 x 4 B)")
      ->capture_default_str();
  app.add_option("--depth", o.shape.depth, "Linear layers")->capture_default_str();
  app.add_option("--input-dim", o.shape.input_dim, "Input features")->capture_default_str();
  app.add_option("--output-dim", o.shape.output_dim, "Outputs")->capture_default_str();
  app.add_option("--seed", o.seed, "Seed of the data, the teacher network and the initial parameters")
      ->capture_default_str();
  app.add_option("--lr", o.sgd.lr, "Learning rate")->capture_default_str();
  app.add_option("--momentum", o.sgd.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--bucket-mb", o.bucket_mb, "Gradient bucket cap in MiB, as DDP's bucket_cap_mb (first bucket: 1 MiB)")
      ->capture_default_str();
  app.add_option("--grad-dtype", raw.grad_dtype, "Gradients travel as float32 or bfloat16")->capture_default_str();
  app.add_option("--check-every", o.check_every,
                 "Compare the parameters' checksum across ranks every N steps (0: first and last only)")
      ->capture_default_str();
  app.add_flag("--verify", o.verify,
               "CPU backend: rank 0 also trains a single-process reference of every rank and checks every step\n"
               "bit for bit (costs rank 0 WORLD_SIZE times the compute)");
  app.add_option("--log-every", o.log_every, "Print a progress line every N steps")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40))
      ->capture_default_str();
  app.add_flag("--json", o.json, "Machine-readable output: one JSON object per line");
  app.add_option("--rendezvous-timeout", raw.rendezvous_timeout, "How long rank 0 waits for every rank")
      ->capture_default_str();
  SettingFlags settings(app, TrainerSettings());
  app.footer(app.get_footer() + "\n" + kHelpFooter);
  RS_RETURN_IF_ERROR(ParseCommandLine(app, argc, argv));

  if (raw.backend == "cpu") {
    o.backend = BackendKind::kCpu;
  } else if (raw.backend == "gpu") {
    o.backend = BackendKind::kGpu;
  } else {
    return Status(Code::kInvalidArgument, "--backend '" + raw.backend + "': use cpu or gpu");
  }
  const std::optional<DataType> dtype = ParseDataType(raw.grad_dtype);
  if (!dtype || (*dtype != DataType::kFloat32 && *dtype != DataType::kBfloat16)) {
    return Status(Code::kInvalidArgument, "--grad-dtype '" + raw.grad_dtype + "': use float32 or bfloat16");
  }
  o.grad_dtype = *dtype;
  RS_RETURN_IF_ERROR(MlpLayout::Create(o.shape).status());
  {
    StatusOr<milliseconds> t = ParseDuration(raw.rendezvous_timeout);
    if (!t.ok()) return t.status().Prefixed("--rendezvous-timeout");
    if (t->count() <= 0 || *t > kMaxTimeout) {
      return Status(Code::kInvalidArgument, "--rendezvous-timeout must be between 1ms and 24h");
    }
    o.rendezvous_timeout = *t;
  }

  const Settings s = Settings::Resolve(TrainerSettings(), settings.Given(), env);
  std::optional<ClusterSpec> spec;
  if (const SettingValue& json = s.Get(setting::kClusterSpec); !json.is_default) {
    StatusOr<ClusterSpec> parsed = ClusterSpec::Parse(json.text);
    if (!parsed.ok()) return parsed.status();
    spec = std::move(parsed).value();
  }
  const ClusterSpec* spec_ptr = spec ? &*spec : nullptr;
  RS_RETURN_IF_ERROR(ResolveRanks(s, spec_ptr, &o));
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kLocalRank, 0, 1 << 16), &o.local_rank));
  RS_RETURN_IF_ERROR(ResolveMaster(s, spec_ptr, &o));
  RS_RETURN_IF_ERROR(ResolveReducers(s, spec_ptr, &o));
  RS_RETURN_IF_ERROR(ReadToken(s, &o.job_token));
  RS_RETURN_IF_ERROR(ResolveClient(s, &o));
  if (o.backend == BackendKind::kGpu) RS_RETURN_IF_ERROR(CheckGpuFlags(s));
  RS_RETURN_IF_ERROR(CheckCombination(o, gpu_built));
  o.notices = s.notices();
  return o;
}

}  // namespace rs::trainer
