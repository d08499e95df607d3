// For the GPU suite's tests of graph recording and replay: every program a graph can hold is
// recorded for the scope's life (DeviceGraphs::always), whatever jit's default judges faster, so
// that small programs exercise the graph path too.
#pragma once

#include <canopy/canopy.hpp>

namespace canopy::gpu_test {

class GraphsAlways {
 public:
  GraphsAlways() : was_(device_graphs_mode()) { set_device_graphs(DeviceGraphs::always); }
  ~GraphsAlways() { set_device_graphs(was_); }
  GraphsAlways(const GraphsAlways&) = delete;
  GraphsAlways& operator=(const GraphsAlways&) = delete;

 private:
  DeviceGraphs was_;
};

}  // namespace canopy::gpu_test
