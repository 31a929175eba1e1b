// The stand-in's plugin search follows NCCL 2.28.9's openPluginLib and
// NCCL_NET_PLUGIN parsing (nccl_loader.h): the names each value makes NCCL
// try, in order, and the line NCCL logs when none is found. Users rely on
// these to know which value of NCCL_NET_PLUGIN finds the plugin.
#include "tests/nccl_plugin/nccl_loader.h"

#include <dlfcn.h>

#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace rs::plugin::test {
namespace {

using Names = std::vector<std::string>;

TEST(NcclLoader, NamesTriedForEachKindOfValue) {
  // Unset or empty: the default name only.
  EXPECT_EQ(OpenPluginLib(NcclPluginType::kNet, nullptr).tried, Names{"libnccl-net.so"});
  EXPECT_EQ(OpenPluginLib(NcclPluginType::kNet, "").tried, Names{"libnccl-net.so"});
  EXPECT_EQ(OpenPluginLib(NcclPluginType::kTuner, nullptr).tried, Names{"libnccl-tuner.so"});
  // A short name: as given, then the plugin's conventional file name.
  EXPECT_EQ(OpenPluginLib(NcclPluginType::kNet, "nosuchplugin").tried,
            (Names{"nosuchplugin", "libnccl-net-nosuchplugin.so"}));
  // A path, or a library name: as given only.
  EXPECT_EQ(OpenPluginLib(NcclPluginType::kNet, "/nonexistent/libx.so").tried, Names{"/nonexistent/libx.so"});
  EXPECT_EQ(OpenPluginLib(NcclPluginType::kNet, "libnosuch.so").tried, Names{"libnosuch.so"});
  // "lib..." without ".so", or "...so" without "lib": also the long form.
  EXPECT_EQ(OpenPluginLib(NcclPluginType::kNet, "libnosuch").tried, (Names{"libnosuch", "libnccl-net-libnosuch.so"}));
}

TEST(NcclLoader, SaysWhichNamesItCouldNotFind) {
  const NcclLibOpen open = OpenPluginLib(NcclPluginType::kNet, "nosuchplugin");
  EXPECT_EQ(open.handle, nullptr);
  EXPECT_EQ(open.info, Names{"NET/Plugin: Could not find: nosuchplugin libnccl-net-nosuchplugin.so"});
}

TEST(NcclLoader, OpensAPathAsGivenAndReportsItsLinkMapName) {
  const std::string path = std::filesystem::canonical(RS_PLUGIN_SO).string();
  NcclLibOpen open = OpenPluginLib(NcclPluginType::kNet, path.c_str());
  ASSERT_NE(open.handle, nullptr);
  EXPECT_EQ(open.name, path);
  EXPECT_EQ(open.path, path);
  EXPECT_TRUE(open.info.empty());
  ::dlclose(open.handle);
}

TEST(NcclLoader, NetPluginListAndNone) {
  // "none" (any case): no external plugin at all.
  EXPECT_TRUE(LoadNetPlugin("NONE").tried.empty());
  // Unset: the default name; a comma list: each entry in turn, empty ones dropped.
  EXPECT_EQ(LoadNetPlugin(nullptr).tried, Names{"libnccl-net.so"});
  EXPECT_EQ(LoadNetPlugin("a,,b").tried, (Names{"a", "libnccl-net-a.so", "b", "libnccl-net-b.so"}));
}

TEST(NcclLoader, FindsTheTablesAndTheTunerInTheNetLibrary) {
  const std::string path = std::filesystem::canonical(RS_PLUGIN_SO).string();
  const NcclNetLoad net = LoadNetPlugin(("nosuchplugin," + path).c_str());
  ASSERT_NE(net.lib.handle, nullptr);
  EXPECT_EQ(net.net_version, 11);
  EXPECT_EQ(net.coll_version, 11);
  EXPECT_EQ(net.tried, (Names{"nosuchplugin", "libnccl-net-nosuchplugin.so", path}));
  // NCCL_TUNER_PLUGIN unset: libnccl-tuner.so, then the net library again.
  const NcclLibOpen tuner = OpenTunerLib(nullptr, net);
  ASSERT_NE(tuner.handle, nullptr);
  EXPECT_EQ(tuner.tried, (Names{"libnccl-tuner.so", path}));
  EXPECT_NE(::dlsym(tuner.handle, "ncclTunerPlugin_v5"), nullptr);
  EXPECT_EQ(OpenTunerLib("none", net).handle, nullptr);
  ::dlclose(tuner.handle);
  ::dlclose(net.lib.handle);
}

TEST(NcclLoader, RefCountReadAsNcclReadsIt) {
  EXPECT_EQ(NetPluginRefCount(nullptr), 0);
  EXPECT_EQ(NetPluginRefCount(""), 0);
  EXPECT_EQ(NetPluginRefCount("1"), 1);
  EXPECT_EQ(NetPluginRefCount("0x10"), 16);
}

}  // namespace
}  // namespace rs::plugin::test
