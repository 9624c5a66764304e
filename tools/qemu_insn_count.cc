// A qemu-user TCG plugin (Debian 12's qemu 7.2, plugin API version 1; the declarations below are
// the few API calls it uses): counts executed guest instructions, in total and per symbol of the
// first instruction of each translation block, and prints them at exit (symbols with at least
// 0.1% of the total). Used for the instruction-count estimates of the ARM rungs (docs/arm.md):
//   g++ -O2 -shared -fPIC -o /tmp/libinsn.so tools/qemu_insn_count.cc
//   KVRT_ISA=neon-dotprod qemu-aarch64 -L / -plugin /tmp/libinsn.so -d plugin
//   build-aarch64/tools/kvrt/kvrt run ...
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>
#include <algorithm>

extern "C" {
typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
enum qemu_plugin_op { QEMU_PLUGIN_INLINE_ADD_U64 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb* tb);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void* userdata);
void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb* tb);
struct qemu_plugin_insn* qemu_plugin_tb_get_insn(const struct qemu_plugin_tb* tb, size_t idx);
const char* qemu_plugin_insn_symbol(const struct qemu_plugin_insn* insn);
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb* tb, enum qemu_plugin_op op,
                                              void* ptr, uint64_t imm);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void* userdata);
void qemu_plugin_outs(const char* string);
__attribute__((visibility("default"))) int qemu_plugin_version = 1;
}

static std::mutex mu;
static std::map<std::string, uint64_t*>* counters = new std::map<std::string, uint64_t*>;

static void trans(qemu_plugin_id_t, struct qemu_plugin_tb* tb) {
  const size_t n = qemu_plugin_tb_n_insns(tb);
  const char* sym = n ? qemu_plugin_insn_symbol(qemu_plugin_tb_get_insn(tb, 0)) : nullptr;
  std::string name = sym ? sym : "?";
  uint64_t* c;
  {
    std::lock_guard<std::mutex> l(mu);
    auto it = counters->find(name);
    if (it == counters->end()) it = counters->emplace(name, new uint64_t(0)).first;
    c = it->second;
  }
  qemu_plugin_register_vcpu_tb_exec_inline(tb, QEMU_PLUGIN_INLINE_ADD_U64, c, n);
}

static void at_exit(qemu_plugin_id_t, void*) {
  std::vector<std::pair<uint64_t, std::string>> v;
  uint64_t total = 0;
  for (auto& [k, c] : *counters) {
    v.push_back({*c, k});
    total += *c;
  }
  std::sort(v.rbegin(), v.rend());
  std::string out = "insns total " + std::to_string(total) + "\n";
  for (auto& [c, k] : v)
    if (c * 1000 >= total) out += "insns " + std::to_string(c) + " " + k + "\n";
  qemu_plugin_outs(out.c_str());
}

extern "C" __attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id,
                                                                          const void*, int,
                                                                          char**) {
  qemu_plugin_register_vcpu_tb_trans_cb(id, trans);
  qemu_plugin_register_atexit_cb(id, at_exit, nullptr);
  return 0;
}
