// The oneDNN CPU engine and per-thread streams.
#include "engine.hpp"

namespace canopy::kernels::cpu::onednn {

dnnl::engine& engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  // Streams are cheap but not meant to be shared across threads that submit concurrently.
  thread_local dnnl::stream s(engine());
  return s;
}

}  // namespace canopy::kernels::cpu::onednn
