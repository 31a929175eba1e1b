#include "nccl_plugin/plugin.h"

#include <cstring>

#include "nccl_plugin/p2p/connector.h"
#include "nccl_plugin/log.h"
#include "nccl_plugin/report/report.h"

namespace rs::plugin {

namespace {

// "4 reducers (10.0.0.5:7450, 10.0.0.6:7450, and 2 more)".
std::string ReducersText(const std::vector<client::Endpoint>& reducers) {
  constexpr size_t kShown = 3;
  std::string list;
  for (size_t i = 0; i < reducers.size() && i < kShown; ++i) list += (i ? ", " : "") + reducers[i].ToString();
  if (reducers.size() > kShown) list += ", and " + std::to_string(reducers.size() - kShown) + " more";
  return std::to_string(reducers.size()) + (reducers.size() == 1 ? " reducer (" : " reducers (") + list + ")";
}

std::string WireText(const client::ClientOptions& o) {
  if (o.wire_dtype == DataType::kFloat32) return "float32 sums sent as float32";
  return "float32 sums sent as " + std::string(DataTypeName(o.wire_dtype)) + " (REDUCER_WIRE_DTYPE)";
}

}  // namespace

std::unique_ptr<Plugin> Plugin::Create(const Env& env, const std::vector<InterfaceCandidate>& interfaces,
                                       int nccl_version) {
  for (const std::string& notice : env.notices()) RS_PLOG_WARN("%s", notice.c_str());
  StatusOr<ReportLevel> level = ParseReportLevel(env.Get(setting::kLog));
  SetReportLevel(level.ok() ? *level : ReportLevel::kInfo);
  if (!level.ok()) ReportWarn(level.status().message() + "; using info");
  Status p2p_status;
  P2pConfig p2p;
  std::vector<NetInterface> devices;
  StatusOr<P2pConfig> cfg = P2pConfigFromEnv(env);
  if (cfg.ok()) {
    p2p = std::move(cfg).value();
    StatusOr<std::vector<NetInterface>> nics = SelectInterfaces(interfaces, p2p.ifname_spec, p2p.ifname_source);
    if (nics.ok()) {
      devices = std::move(nics).value();
      for (NetInterface& nic : devices) {
        Describe(&nic);
        if (p2p.nic_speed_mbps) nic.speed_mbps = *p2p.nic_speed_mbps;
      }
    } else {
      p2p_status = nics.status();
    }
  } else {
    p2p_status = cfg.status();
  }
  StatusOr<CollNetConfig> collnet = CollNetConfigFromEnv(env);
  // The speed the user gave for NCCL's sake is the client's too: its I/O
  // threads follow it (otherwise the client reads the NIC's own).
  if (collnet.ok() && p2p.nic_speed_mbps) {
    collnet->client.link_bits_per_second = static_cast<uint64_t>(*p2p.nic_speed_mbps) * 1'000'000;
  }
  std::unique_ptr<Plugin> plugin(
      new Plugin(std::move(p2p_status), std::move(p2p), std::move(devices), std::move(collnet)));

  if (!plugin->p2p_status_.ok()) {
    RS_PLOG_WARN("point-to-point misconfigured: %s", plugin->p2p_status_.message().c_str());
  } else {
    std::string list;
    for (const NetInterface& nic : plugin->devices_) {
      list += (list.empty() ? "" : ", ") + nic.name + " " + nic.addr.HostToString();
    }
    RS_PLOG_INFO("point-to-point over TCP on %s (%d helper thread(s) x %d socket(s) per comm)", list.c_str(),
                 plugin->p2p_.threads, plugin->p2p_.socks_per_thread);
  }
  plugin->collnet_.LogSummary();

  CollNetSetup setup;
  setup.reducers = plugin->collnet_.num_devices() > 0 && !plugin->devices_.empty();
  setup.nccl = NcclCollNetSettingsFromEnv(env);
  setup.nccl_version = nccl_version;
  setup.required = env.Get(setting::kRequired) == "1";
  if (const CollNetConfig* cfg = plugin->collnet_.config()) {
    setup.reducers_text = ReducersText(cfg->reducers);
    setup.wire_text = WireText(cfg->client);
  }
  if (!plugin->devices_.empty()) {
    const NetInterface& nic = plugin->devices_.front();
    setup.nic_name = nic.name;
    setup.nic_speed_mbps = nic.speed_mbps;
    setup.nic_speed_source = plugin->p2p_.nic_speed_mbps ? "set by REDUCER_NIC_SPEED"
                                                         : "/sys/class/net/" + nic.name + "/speed";
  }
  plugin->watch_ = std::make_unique<CollNetWatch>(std::move(setup));
  plugin->watch_->CheckSetup();
  return plugin;
}

Plugin::Plugin(Status p2p_status, P2pConfig p2p, std::vector<NetInterface> devices,
               StatusOr<CollNetConfig> collnet)
    : p2p_status_(std::move(p2p_status)),
      p2p_(std::move(p2p)),
      devices_(std::move(devices)),
      collnet_(std::move(collnet), devices_.empty() ? 0 : devices_.front().speed_mbps) {}

CommContext* Plugin::OpenContext(CommContext::Kind kind, uint64_t comm_id) {
  return contexts_.Add(std::make_unique<CommContext>(kind, comm_id));
}

StatusOr<CommContext*> Plugin::FindContext(void* ctx, CommContext::Kind kind) const {
  CommContext* found = contexts_.Find(ctx);
  if (found == nullptr || found->kind() != kind) {
    return Status(Code::kInternal, std::string("not an open ") + (kind == CommContext::Kind::kNet ? "net" : "CollNet") +
                                       " context of this plugin (finalized already, or another table's)");
  }
  return found;
}

Status Plugin::CloseContext(void* ctx, CommContext::Kind kind) {
  RS_RETURN_IF_ERROR(FindContext(ctx, kind).status());
  contexts_.Remove(ctx);
  return Status::Ok();
}

StatusOr<const CollNetTuner*> Plugin::FindTuner(void* ctx) const {
  const CollNetTuner* tuner = tuners_.Find(ctx);
  if (tuner == nullptr) return Status(Code::kInternal, "not an open tuner context of this plugin");
  return tuner;
}

Status Plugin::DestroyTuner(void* ctx) {
  if (!tuners_.Remove(ctx)) return Status(Code::kInternal, "not an open tuner context of this plugin");
  return Status::Ok();
}

StatusOr<CollNetTuner*> Plugin::CreateTuner(const CommShape& comm) {
  const bool watched = watch_->CheckCommunicator(comm);
  watch_->TunerCreated();
  RS_RETURN_IF_ERROR(watch_->required_failure());
  const CollNetConfig* cfg = collnet_.config();
  if (cfg == nullptr || collnet_.num_devices() == 0 || devices_.empty()) {
    return tuners_.Add(std::make_unique<CollNetTuner>(std::nullopt, "CollNet is off, NCCL's own tuning applies"));
  }
  if (comm.nodes < 2) {
    return tuners_.Add(std::make_unique<CollNetTuner>(std::nullopt, "one node, no network all-reduce to choose"));
  }
  CostModelParams params;
  params.nodes = static_cast<int>(comm.nodes);
  params.ranks = static_cast<int>(comm.ranks);
  params.reducers = static_cast<int>(cfg->reducers.size());
  params.link_gbps = devices_.front().speed_mbps / 1000.0;
  const CostModel model(params);
  if (watched) watch_->CommunicatorReady(comm, model);
  return tuners_.Add(
      std::make_unique<CollNetTuner>(model, "", watched ? std::make_unique<CollNetUsage>(comm.comm_id) : nullptr));
}

Status Plugin::CheckDevice(int dev) const {
  RS_RETURN_IF_ERROR(p2p_status_);
  if (dev < 0 || dev >= num_devices()) {
    return Status(Code::kInvalidArgument,
                  "device " + std::to_string(dev) + " does not exist (" + std::to_string(num_devices()) + " devices)");
  }
  return Status::Ok();
}

StatusOr<DeviceProperties> Plugin::Properties(int dev) const {
  RS_RETURN_IF_ERROR(CheckDevice(dev));
  const NetInterface& nic = devices_[static_cast<size_t>(dev)];
  DeviceProperties props;
  props.index = dev;
  props.name = nic.name.c_str();
  props.pci_path = nic.pci_path.empty() ? nullptr : nic.pci_path.c_str();
  props.guid = static_cast<uint64_t>(dev);
  props.speed_mbps = nic.speed_mbps;
  props.max_comms = 65536;
  props.max_recvs = 1;
  return props;
}

StatusOr<std::unique_ptr<ListenComm>> Plugin::Listen(int dev, void* handle) const {
  RS_RETURN_IF_ERROR(CheckDevice(dev));
  if (handle == nullptr) return Status(Code::kInvalidArgument, "listen: NULL handle");
  P2pHandle h{};
  StatusOr<std::unique_ptr<ListenComm>> comm = ListenComm::Create(devices_[static_cast<size_t>(dev)].addr, p2p_, &h);
  if (comm.ok()) std::memcpy(handle, &h, sizeof(h));
  return comm;
}

StatusOr<std::unique_ptr<SendComm>> Plugin::Connect(int dev, void* handle) const {
  RS_RETURN_IF_ERROR(CheckDevice(dev));
  if (handle == nullptr) return Status(Code::kInvalidArgument, "connect: NULL handle");
  P2pHandle h;
  std::memcpy(&h, handle, sizeof(h));
  // The connector outlives this call inside NCCL's handle buffer.
  Connector* connector = reinterpret_cast<Connector*>(static_cast<uintptr_t>(h.connect_stage));
  if (connector == nullptr) {
    StatusOr<std::unique_ptr<Connector>> created = Connector::Create(h, p2p_);
    if (!created.ok()) return created.status();
    connector = std::move(created).value().release();
    h.connect_stage = reinterpret_cast<uintptr_t>(connector);
    std::memcpy(handle, &h, sizeof(h));
  }
  StatusOr<std::unique_ptr<SendComm>> step = connector->Step();
  if (!step.ok() || *step != nullptr) {
    delete connector;
    h.connect_stage = 0;
    std::memcpy(handle, &h, sizeof(h));
  }
  return step;
}

}  // namespace rs::plugin
