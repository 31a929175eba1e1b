#include "bench/bench_options.h"

#include <CLI/CLI.hpp>

#include <sstream>

#include "client/client_settings.h"
#include "common/cli_parse.h"
#include "common/units.h"
#include "protocol/auth.h"
#include "protocol/wire.h"

namespace rs::bench {
namespace {

// The settings only reducer-bench has; the client's shared ones are
// client::setting's.
namespace setting {
inline constexpr SettingKey<std::string> kReducers{"--reducers", "REDUCER_ADDRS"};
inline constexpr SettingKey<int64_t> kWorld{"--world", "WORLD_SIZE"};
inline constexpr SettingKey<int64_t> kRank{"--rank", "RANK"};
inline constexpr SettingKey<std::string> kSession{"--session", "REDUCER_SESSION"};
inline constexpr SettingKey<std::string> kJobTokenFile{"--job-token-file", "REDUCER_JOB_TOKEN_FILE"};
inline constexpr SettingKey<std::string> kJobToken{"", "REDUCER_JOB_TOKEN"};
}  // namespace setting

constexpr DataType kAllTypes[] = {DataType::kFloat32, DataType::kFloat16, DataType::kBfloat16,
                                  DataType::kFloat64, DataType::kInt8,    DataType::kUint8,
                                  DataType::kInt32,   DataType::kUint32,  DataType::kInt64,
                                  DataType::kUint64};

StatusOr<std::vector<DataType>> ParseTypes(const std::string& list) {
  std::vector<DataType> out;
  std::istringstream in(list);
  for (std::string name; std::getline(in, name, ',');) {
    if (name == "all") {
      out.insert(out.end(), std::begin(kAllTypes), std::end(kAllTypes));
    } else if (auto type = ParseDataType(name)) {
      out.push_back(*type);
    } else {
      return Status(Code::kInvalidArgument, "--dtype: unknown data type '" + name +
                                                "'; use float32, float16, bfloat16, float64, int8, uint8, "
                                                "int32, uint32, int64, uint64, a comma list of them, or all");
    }
  }
  if (out.empty()) return Status(Code::kInvalidArgument, "--dtype: no data type given");
  return out;
}

// Stores a parsed value, or passes its error on.
template <typename T, typename U>
Status Assign(StatusOr<U> value, T* dest) {
  if (!value.ok()) return value.status();
  *dest = static_cast<T>(*value);
  return Status::Ok();
}

// The flags without a variable or an old name, as typed on the command line.
struct RawFlags {
  std::string min_bytes = "4K", max_bytes = "64M", dtype = "float32", op = "sum";
};

Status Validate(const RawFlags& raw, const Settings& s, Options* out) {
  const SettingValue& reducers = s.Get(setting::kReducers);
  if (reducers.is_default) return Status(Code::kInvalidArgument, "--reducers (or REDUCER_ADDRS) is required");
  auto list = client::ParseEndpoints(reducers.text);
  if (!list.ok()) return list.status().Prefixed(reducers.source);
  out->reducers = *list;
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kWorld, 1, 65535), &out->world));
  RS_RETURN_IF_ERROR(Assign(s.Int(setting::kRank, 0, 65534), &out->rank));
  if (out->rank >= out->world) {
    return Status(Code::kInvalidArgument, "--rank " + std::to_string(out->rank) + " is not below --world " +
                                              std::to_string(out->world));
  }
  out->session = s.Get(setting::kSession).text;
  out->client.reducers = out->reducers;  // REDUCER_MIN_REDUCERS is bounded by them
  RS_RETURN_IF_ERROR(client::ApplyClientSettings(s, &out->client, reducers.source));

  for (auto [flag, text, dest] : {std::tuple{"--min-bytes", &raw.min_bytes, &out->min_bytes},
                                  std::tuple{"--max-bytes", &raw.max_bytes, &out->max_bytes}}) {
    auto size = ParseSize(*text);
    if (!size.ok()) return size.status().Prefixed(flag);
    *dest = *size;
  }
  if (out->min_bytes == 0 || out->min_bytes > out->max_bytes) {
    return Status(Code::kInvalidArgument, "--min-bytes must be at least 1 and at most --max-bytes");
  }
  auto types = ParseTypes(raw.dtype);
  if (!types.ok()) return types.status();
  out->dtypes = *types;
  auto op = ParseReduceOp(raw.op);
  if (!op) return Status(Code::kInvalidArgument, "--op: unknown operation '" + raw.op + "'; use sum, prod, max or min");
  out->op = *op;

  if (const SettingValue& file = s.Get(setting::kJobTokenFile); !file.is_default) {
    auto token = protocol::ReadTokenFile(file.text);
    if (!token.ok()) return token.status().Prefixed(file.source);
    out->job_token = *token;
  } else {
    out->job_token = s.Get(setting::kJobToken).text;
  }
  out->notices = s.notices();
  return Status::Ok();
}

}  // namespace

const std::vector<SettingInfo>& BenchSettings() {
  static const std::vector<SettingInfo> kSettings = [] {
    std::vector<SettingInfo> out = {
        Entry(setting::kReducers, "HOST:PORT,...", "", "", "Reducers (the same list on every rank)"),
        Entry(setting::kWorld, "N", "1", "", "Number of ranks"),
        Entry(setting::kRank, "N", "0", "", "This process's rank, 0 to world-1"),
        Entry(setting::kSession, "NAME", "reducer-bench", "",
              "Session name; ranks with the same name form one all-reduce group"),
        Entry(setting::kJobTokenFile, "FILE", "", "", "File holding the job token"),
        Entry(setting::kJobToken, "", "", "", "The job token itself, used when no token file is given"),
    };
    for (SettingInfo& info : client::ClientSettingInfos()) out.push_back(std::move(info));
    // A run is a benchmark, not a job: it may wait longer for slow ranks.
    FindSetting(out, client::setting::kConnectTimeout).default_value = "90s";
    // --timeout / REDUCER_TIMEOUT set both timeouts and read a bare number
    // as seconds: so do their aliases.
    for (const SettingName& key : {client::setting::kOpTimeout, client::setting::kConnectTimeout}) {
      SettingInfo& info = FindSetting(out, key);
      info.old_flags.push_back({"--timeout", "s"});
      info.old_envs.push_back({"REDUCER_TIMEOUT", "s"});
    }
    return out;
  }();
  return kSettings;
}

StatusOr<Options> ParseOptions(int argc, char** argv, const EnvLookup& env) {
  CLI::App app{
      "reducer-bench: all-reduce bandwidth and correctness against reducerd, one process per rank,\n"
      "in the style of nccl-tests' all_reduce_perf. Every rank checks every element of its results;\n"
      "rank 0 prints one line per size. algbw = size / time; busbw = algbw * 2(n-1)/n is nccl-tests'\n"
      "convention for peer-to-peer all-reduce and reads above the line rate with reducers.\n"
      "Flags shown with an environment variable take their value from it when absent.\n"
      "Sizes take units (4096, 64K, 1MiB); durations must (500ms, 30s, 2m)."};
  // The last of a repeated flag wins, so scripts can append overrides.
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  Options o;
  RawFlags raw;
  SettingFlags settings(app, BenchSettings());
  app.add_option("-b,--min-bytes", raw.min_bytes, "Smallest size (suffixes K, M, G = KiB, MiB, GiB)")
      ->capture_default_str();
  app.add_option("-e,--max-bytes", raw.max_bytes, "Largest size")->capture_default_str();
  app.add_option("-f,--step-factor", o.step_factor, "Multiply the size by this from one line to the next")
      ->check(CLI::Range(2, 1024))
      ->capture_default_str();
  app.add_option("-d,--dtype", raw.dtype, "Data type, a comma list of them, or 'all'")->capture_default_str();
  app.add_option("-o,--op", raw.op, "Reduction: sum, prod, max or min")->capture_default_str();
  app.add_option("-n,--iters", o.iters, "Timed operations per size")->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("-w,--warmup", o.warmup, "Untimed operations per size before timing")
      ->check(CLI::Range(0, 1 << 20))
      ->capture_default_str();
  app.add_option("-c,--check", o.check,
                 "1: verify every element the timed operations return; 0: don't")
      ->capture_default_str();
  app.add_option("--inflight", o.inflight, "Operations kept in flight at once, each with its own buffers")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  app.add_option("--csv", o.csv, "Rank 0 also writes the results to this CSV file");
  app.add_flag("--op-times", o.op_times,
               "Rank 0 also prints, under each size's row, how its timed operations spread: the first one's "
               "time, then the others' min, max and median, and up to 50 of them in order (the time from one "
               "operation's end to the next's; with --inflight 1, each operation's own time)");
  app.add_flag("-v,--verbose", o.verbose,
               "Also print the client's info lines (to stderr, like its warnings): the transport it chose, "
               "a raised retransmission floor, a failover's progress");
  WorkloadFlags workload;
  AddWorkloadFlags(app, &workload);
  app.footer(app.get_footer() + (app.get_footer().empty() ? "" : "\n") + kPatternHelp);
  RS_RETURN_IF_ERROR(ParseCommandLine(app, argc, argv));
  RS_RETURN_IF_ERROR(Validate(raw, Settings::Resolve(BenchSettings(), settings.Given(), env), &o));
  RS_RETURN_IF_ERROR(ParseWorkloadFlags(workload, &o.workload));
  return o;
}

}  // namespace rs::bench
