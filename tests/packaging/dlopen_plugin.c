// Loads the NCCL plugin the way NCCL does: dlopen by file name alone
// (NCCL_NET_PLUGIN=reducer makes NCCL open "libnccl-net-reducer.so"),
// RTLD_NOW | RTLD_LOCAL, then looks up the tables NCCL 2.12 - 2.30 ask for.
// The packages test runs it in a clean Debian 12 root where only the
// package put the library on the loader path.
//
//   rs_dlopen_plugin [FILE]    exit 0: loaded, every table found and named;
//                              1: what failed, on stderr
#define _GNU_SOURCE  // dladdr
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  const char* file = argc > 1 ? argv[1] : "libnccl-net-reducer.so";
  void* lib = dlopen(file, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen(%s): %s\n", file, dlerror());
    return 1;
  }
  // Every NCCL plugin table starts with `const char* name`.
  static const char* const kTables[] = {
      "ncclNetPlugin_v11", "ncclCollNetPlugin_v11", "ncclTunerPlugin_v5",
      "ncclNetPlugin_v8",  "ncclNetPlugin_v7",      "ncclCollNetPlugin_v7",
      "ncclNetPlugin_v6",  "ncclCollNetPlugin_v6",  "ncclNetPlugin_v5",
      "ncclCollNetPlugin_v5",
  };
  int failed = 0;
  for (size_t i = 0; i < sizeof(kTables) / sizeof(kTables[0]); ++i) {
    const char* const* table = (const char* const*)dlsym(lib, kTables[i]);
    if (table == NULL || *table == NULL || **table == '\0') {
      fprintf(stderr, "%s: %s\n", kTables[i], table == NULL ? "not exported" : "has no name");
      failed = 1;
      continue;
    }
    printf("%s: %s\n", kTables[i], *table);
  }
  Dl_info info;
  if (dladdr(dlsym(lib, kTables[0]), &info) != 0 && info.dli_fname != NULL) {
    printf("loaded from %s\n", info.dli_fname);
  }
  dlclose(lib);
  return failed;
}
