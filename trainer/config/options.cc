#include "trainer/config/options.h"

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>

#include "common/cli_parse.h"
#include "common/cluster_spec.h"
#include "common/units.h"
#include "protocol/auth.h"

namespace rs::trainer {
namespace {

constexpr int64_t kMaxMs = 24LL * 3600 * 1000;

// A setting's text and where it came from ("--rank" or "RANK").
struct Setting {
  std::string text;
  std::string source;
  bool from_env = false;
};

// The flags as CLI11 leaves them: text, validated afterwards.
struct RawFlags {
  std::string backend = "cpu", rank, world, local_rank, master_addr, master_port, reducers, token_file, session;
  std::string streams, piece_bytes, send_window, io_threads, timeout, connect_timeout, rendezvous_timeout = "120s";
  std::string grad_dtype = "float32";
};

class Resolver {
 public:
  Resolver(const CLI::App& app, const TrainerEnv& env) : app_(app), env_(env) {}

  // The flag if given, else its variable if set.
  std::optional<Setting> Pick(const std::string& flag, const std::string& value, EnvKey key) const {
    if (app_.count(flag) > 0) return Setting{value, flag, false};
    if (env_.IsSet(key)) return Setting{env_.Get(key), env_.Name(key), true};
    return std::nullopt;
  }

 private:
  const CLI::App& app_;
  const TrainerEnv& env_;
};

std::string Show(const Setting& s) {
  return s.from_env ? s.source + "='" + s.text + "'" : s.source + " '" + s.text + "'";
}

StatusOr<int64_t> ParseInt(const Setting& s, int64_t min, int64_t max) {
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.text.c_str(), &end, 10);
  if (s.text.empty() || *end != '\0' || errno == ERANGE) {
    return Status(Code::kInvalidArgument, Show(s) + " is not an integer");
  }
  if (v < min || v > max) {
    return Status(Code::kInvalidArgument,
                  Show(s) + " is outside [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return static_cast<int64_t>(v);
}

// Durations: "30s", "500ms", "2m"; a variable named *_MS holds milliseconds.
StatusOr<std::chrono::milliseconds> ParseTimeout(const Setting& s) {
  if (s.from_env) {
    StatusOr<int64_t> ms = ParseInt(s, 1, kMaxMs);
    if (!ms.ok()) return ms.status();
    return std::chrono::milliseconds(*ms);
  }
  StatusOr<std::chrono::milliseconds> d = ParseDuration(s.text);
  if (!d.ok()) return d.status().Prefixed(s.source);
  if (d->count() <= 0 || d->count() > kMaxMs) {
    return Status(Code::kInvalidArgument, Show(s) + " must be between 1 ms and 24 h");
  }
  return *d;
}

Status ReadToken(const std::optional<Setting>& file, const TrainerEnv& env, std::string* token) {
  if (file && (!file->from_env || !env.IsSet(EnvKey::kJobToken))) {
    StatusOr<std::string> t = protocol::ReadTokenFile(file->text);
    if (!t.ok()) return t.status().Prefixed(file->source);
    *token = std::move(t).value();
  } else if (env.IsSet(EnvKey::kJobToken)) {
    *token = env.Get(EnvKey::kJobToken);
  }
  return Status::Ok();
}

// Rank and world from the flags or variables, else from CLUSTER_SPEC's
// task: workerpool0 is rank 0, workerpool1[i] rank 1 + i.
Status ResolveRanks(const Resolver& r, const RawFlags& raw, const ClusterSpec* spec, TrainOptions* o) {
  std::optional<Setting> rank = r.Pick("--rank", raw.rank, EnvKey::kRank);
  std::optional<Setting> world = r.Pick("--world", raw.world, EnvKey::kWorldSize);
  if (!rank && !world && spec != nullptr && !spec->task_type.empty()) {
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
  if (world) {
    StatusOr<int64_t> w = ParseInt(*world, 1, protocol::kMaxWorld);
    if (!w.ok()) return w.status();
    o->world = static_cast<uint32_t>(*w);
  }
  if (rank) {
    StatusOr<int64_t> v = ParseInt(*rank, 0, protocol::kMaxWorld - 1);
    if (!v.ok()) return v.status();
    o->rank = static_cast<uint32_t>(*v);
  }
  if (o->rank >= o->world) {
    return Status(Code::kInvalidArgument, (rank ? Show(*rank) : std::string("rank 0")) + " is not below " +
                                              (world ? Show(*world) : std::string("a world size of 1")));
  }
  return Status::Ok();
}

Status ResolveMaster(const Resolver& r, const RawFlags& raw, const TrainerEnv& env, const ClusterSpec* spec,
                     TrainOptions* o) {
  std::optional<Setting> addr = r.Pick("--master-addr", raw.master_addr, EnvKey::kMasterAddr);
  std::optional<Setting> port = r.Pick("--master-port", raw.master_port, EnvKey::kMasterPort);
  if (addr.has_value() != port.has_value()) {
    return Status(Code::kInvalidArgument, (addr ? addr->source : port->source) + " is set but " +
                                              (addr ? "MASTER_PORT (--master-port)" : "MASTER_ADDR (--master-addr)") +
                                              " is not; the rendezvous needs both");
  }
  if (addr) {
    StatusOr<int64_t> p = ParseInt(*port, 1, 65535);
    if (!p.ok()) return p.status();
    o->master_host = addr->text;
    o->master_port = static_cast<uint16_t>(*p);
    o->master_source = addr->source + ":" + port->source;
    // torchrun's agent serves its own store on MASTER_PORT.
    if (port->from_env && env.Get(EnvKey::kTorchAgentStore) == "True") {
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

Status ResolveReducers(const Resolver& r, const RawFlags& raw, const ClusterSpec* spec, TrainOptions* o) {
  if (std::optional<Setting> list = r.Pick("--reducers", raw.reducers, EnvKey::kReducerAddrs)) {
    StatusOr<std::vector<client::Endpoint>> eps = client::ParseEndpoints(list->text);
    if (!eps.ok()) return eps.status().Prefixed(list->source);
    o->reducers = std::move(eps).value();
    o->reducers_source = list->source;
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

Status ResolveClient(const Resolver& r, const RawFlags& raw, TrainOptions* o) {
  if (auto s = r.Pick("--streams", raw.streams, EnvKey::kStreams)) {
    StatusOr<int64_t> v = ParseInt(*s, 1, protocol::kMaxStreams);
    if (!v.ok()) return v.status();
    o->streams = static_cast<int>(*v);
  }
  if (auto s = r.Pick("--io-threads", raw.io_threads, EnvKey::kIoThreads)) {
    StatusOr<int64_t> v = ParseInt(*s, 1, 64);
    if (!v.ok()) return v.status();
    o->io_threads = static_cast<int>(*v);
  }
  if (auto s = r.Pick("--piece-bytes", raw.piece_bytes, EnvKey::kPieceBytes)) {
    StatusOr<uint64_t> v = ParseSize(s->text);
    if (!v.ok()) return v.status().Prefixed(s->source);
    if (*v < 4096 || *v > (uint64_t{1} << 30)) {
      return Status(Code::kInvalidArgument, Show(*s) + " must be between 4 KiB and 1 GiB");
    }
    o->piece_bytes = *v;
  }
  if (auto s = r.Pick("--send-window", raw.send_window, EnvKey::kSendWindow)) {
    StatusOr<uint64_t> v = ParseSize(s->text);
    if (!v.ok()) return v.status().Prefixed(s->source);
    o->send_window = *v;
  }
  if (auto s = r.Pick("--timeout", raw.timeout, EnvKey::kOpTimeoutMs)) {
    StatusOr<std::chrono::milliseconds> v = ParseTimeout(*s);
    if (!v.ok()) return v.status();
    o->op_timeout = *v;
  }
  if (auto s = r.Pick("--connect-timeout", raw.connect_timeout, EnvKey::kConnectTimeoutMs)) {
    StatusOr<std::chrono::milliseconds> v = ParseTimeout(*s);
    if (!v.ok()) return v.status();
    o->connect_timeout = *v;
  }
  if (auto s = r.Pick("--session", raw.session, EnvKey::kSession)) o->session = s->text;
  return Status::Ok();
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

std::string EnvHelp() {
  std::string out = "Environment (a flag wins over its variable):\n";
  for (const EnvVarInfo& v : EnvVars()) {
    out += std::string("  ") + v.name + (v.flag[0] ? std::string(" (") + v.flag + ")" : "") + "\n      " + v.doc + "\n";
  }
  out +=
      "Exit status: 0 trained and every check passed; 1 training failed (a lost reducer or rank, a\n"
      "check that failed); 2 bad flags or environment.\n";
  return out;
}

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
      "streams=" + std::to_string(streams) + " piece_bytes=" + std::to_string(piece_bytes),
  };
  std::string out;
  for (const std::string& l : lines) out += l + "\n";
  return out;
}

StatusOr<TrainOptions> ParseOptions(int argc, char** argv, const TrainerEnv& env, bool gpu_built) {
  CLI::App app{
      "rs-train: data-parallel training of a multi-layer perceptron on synthetic data, the way PyTorch DDP\n"
      "does it: gradients in buckets, each bucket all-reduced as soon as backward has produced it, then\n"
      "averaged and applied with SGD + momentum. One process per rank. The CPU backend all-reduces\n"
      "through the reducers with the client library; the GPU backend (CUDA, cuBLAS) through NCCL, and\n"
      "so through the reducer NCCL plugin when it is loaded. Every few steps the ranks compare a\n"
      "checksum of their parameters; --verify also checks, bit for bit, every step against a\n"
      "single-process reference. Rank 0 prints progress and a summary."};
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  app.footer(EnvHelp());
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
  app.add_option("--rank", raw.rank, "This process's rank [RANK]");
  app.add_option("--world", raw.world, "Number of ranks [WORLD_SIZE]");
  app.add_option("--local-rank", raw.local_rank, "Rank on this machine, picks the GPU [LOCAL_RANK]");
  app.add_option("--master-addr", raw.master_addr, "Rank 0's host for the rendezvous [MASTER_ADDR]");
  app.add_option("--master-port", raw.master_port, "Rendezvous port [MASTER_PORT]");
  app.add_option("--rendezvous-timeout", raw.rendezvous_timeout, "How long rank 0 waits for every rank")
      ->capture_default_str();
  app.add_option("--session", raw.session, "Session name when there is no rendezvous [REDUCER_SESSION]");
  app.add_option("--reducers", raw.reducers, "Reducers HOST:PORT,... [REDUCER_ADDRS, CLUSTER_SPEC]");
  app.add_option("--job-token-file", raw.token_file, "File with the job token [REDUCER_JOB_TOKEN_FILE]");
  app.add_option("--streams", raw.streams, "TCP streams per reducer (default 2) [REDUCER_STREAMS]");
  app.add_option("--piece-bytes", raw.piece_bytes, "Largest piece per reducer (default 1M) [REDUCER_PIECE_BYTES]");
  app.add_option("--send-window", raw.send_window,
                 "Bytes in flight per stream, 0: no limit (default 4M) [REDUCER_SEND_WINDOW]");
  app.add_option("--io-threads", raw.io_threads, "Client I/O threads (default 1) [REDUCER_IO_THREADS]");
  app.add_option("--timeout", raw.timeout, "An all-reduce with no result this long fails the run (default 90s)");
  app.add_option("--connect-timeout", raw.connect_timeout, "Bound on joining the reducers (default 60s)");
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

  std::optional<ClusterSpec> spec;
  if (env.IsSet(EnvKey::kClusterSpec)) {
    StatusOr<ClusterSpec> parsed = ClusterSpec::Parse(env.Get(EnvKey::kClusterSpec));
    if (!parsed.ok()) return parsed.status();
    spec = std::move(parsed).value();
  }
  const ClusterSpec* spec_ptr = spec ? &*spec : nullptr;
  const Resolver r(app, env);
  RS_RETURN_IF_ERROR(ResolveRanks(r, raw, spec_ptr, &o));
  if (auto s = r.Pick("--local-rank", raw.local_rank, EnvKey::kLocalRank)) {
    StatusOr<int64_t> v = ParseInt(*s, 0, 1 << 16);
    if (!v.ok()) return v.status();
    o.local_rank = static_cast<int>(*v);
  }
  RS_RETURN_IF_ERROR(ResolveMaster(r, raw, env, spec_ptr, &o));
  {
    StatusOr<std::chrono::milliseconds> t = ParseTimeout(Setting{raw.rendezvous_timeout, "--rendezvous-timeout"});
    if (!t.ok()) return t.status();
    o.rendezvous_timeout = *t;
  }
  RS_RETURN_IF_ERROR(ResolveReducers(r, raw, spec_ptr, &o));
  RS_RETURN_IF_ERROR(ReadToken(r.Pick("--job-token-file", raw.token_file, EnvKey::kJobTokenFile), env, &o.job_token));
  RS_RETURN_IF_ERROR(ResolveClient(r, raw, &o));
  RS_RETURN_IF_ERROR(CheckCombination(o, gpu_built));
  return o;
}

}  // namespace rs::trainer
