// CANOPY_* settings: one grammar for every switch, integer and choice
// (canopy/kernels/environment.hpp), a ValueError naming the variable for anything else, read at
// first use (EnvSwitch); when jit's GPU calls replay graphs (CANOPY_JIT_GRAPHS, graph_cost.hpp).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include <canopy/canopy.hpp>
#include <canopy/kernels/environment.hpp>

#include "../transforms/src/jit/graph_cost.hpp"

using namespace canopy;
using kernels::env_choice;
using kernels::env_integer;
using kernels::env_switch;

namespace {
/// Sets an environment variable for a scope (unset after it).
struct EnvVar {
  EnvVar(const char* name, const char* value) : name(name) { ::setenv(name, value, 1); }
  ~EnvVar() { ::unsetenv(name); }
  const char* name;
};
}  // namespace

TEST_CASE("settings: a switch is 1/true/yes/on or 0/false/no/off in any case; unset or empty is its default") {
  CHECK(env_switch("CANOPY_TEST_SETTING", true));
  CHECK_FALSE(env_switch("CANOPY_TEST_SETTING", false));
  for (const char* on : {"1", "true", "True", "YES", "on"}) {
    EnvVar v("CANOPY_TEST_SETTING", on);
    CHECK(env_switch("CANOPY_TEST_SETTING", false));
  }
  for (const char* off : {"0", "false", "FALSE", "no", "Off"}) {
    EnvVar v("CANOPY_TEST_SETTING", off);
    CHECK_FALSE(env_switch("CANOPY_TEST_SETTING", true));
  }
  EnvVar empty("CANOPY_TEST_SETTING", "");
  CHECK(env_switch("CANOPY_TEST_SETTING", true));
}

TEST_CASE("settings: anything else is a ValueError naming the variable and its value") {
  {
    EnvVar v("CANOPY_TEST_SETTING", "ture");
    CHECK_THROWS_WITH_AS(env_switch("CANOPY_TEST_SETTING", false),
                         doctest::Contains("CANOPY_TEST_SETTING: environment variable (= 'ture') is not a switch"), ValueError);
  }
  {
    EnvVar v("CANOPY_TEST_SETTING", "12abc");
    CHECK_THROWS_WITH_AS(env_integer("CANOPY_TEST_SETTING", 1, 1, 64), doctest::Contains("= '12abc'"), ValueError);
  }
  EnvVar v("CANOPY_TEST_SETTING", "65");
  CHECK_THROWS_WITH_AS(env_integer("CANOPY_TEST_SETTING", 1, 1, 64), doctest::Contains("from 1 to 64"), ValueError);
  EnvVar ok("CANOPY_TEST_OTHER", "64");
  CHECK(env_integer("CANOPY_TEST_OTHER", 1, 1, 64) == 64);
  CHECK(env_integer("CANOPY_TEST_UNSET", 7, 1, 64) == 7);
}

TEST_CASE("settings: an EnvSwitch reads the environment at its first use, and set() overrides it") {
  static constinit kernels::EnvSwitch bad{"CANOPY_TEST_SWITCH_BAD", false};
  {
    EnvVar v("CANOPY_TEST_SWITCH_BAD", "maybe");
    CHECK_THROWS_AS(bad.get(), ValueError);
    CHECK_THROWS_AS(bad.get(), ValueError);  // still unread: each use says so
  }
  bad.set(true);
  CHECK(bad.get());
  static constinit kernels::EnvSwitch good{"CANOPY_TEST_SWITCH_GOOD", false};
  EnvVar v("CANOPY_TEST_SWITCH_GOOD", "on");
  CHECK(good.get());
  good.set(false);
  CHECK_FALSE(good.get());
}

TEST_CASE("settings: a choice is one of its words in any case; anything else is a ValueError listing them") {
  CHECK(env_choice("CANOPY_TEST_SETTING", 2, {"off", "on", "always"}) == 2);
  {
    EnvVar v("CANOPY_TEST_SETTING", "Always");
    CHECK(env_choice("CANOPY_TEST_SETTING", 0, {"off", "on", "always"}) == 2);
  }
  EnvVar v("CANOPY_TEST_SETTING", "sometimes");
  CHECK_THROWS_WITH_AS(env_choice("CANOPY_TEST_SETTING", 0, {"off", "on", "always"}),
                       doctest::Contains("(= 'sometimes') is not one of its values; set one of off, on, always"), ValueError);
}

TEST_CASE("settings: device graphs are off, where faster (the default, and what `true` sets) or always") {
  const DeviceGraphs was = device_graphs_mode();
  set_device_graphs(true);
  CHECK(device_graphs_mode() == DeviceGraphs::where_faster);
  set_device_graphs(DeviceGraphs::always);
  CHECK(device_graphs());
  set_device_graphs(false);
  CHECK(device_graphs_mode() == DeviceGraphs::off);
  CHECK_FALSE(device_graphs());
  set_device_graphs(was);
}

TEST_CASE("jit's GPU graphs: a replay pays where the launches it saves outweigh its copies") {
  using detail::GraphCost;
  using detail::graph_pays;
  using detail::kCopyBytesPerLaunch;
  // A replay is itself a launch: one kernel never pays, even with nothing to copy.
  CHECK_FALSE(graph_pays(GraphCost{1, 0, 0}));
  CHECK(graph_pays(GraphCost{2, 0, 0}));
  // W5's chain on 2^24 floats: one kernel, its 64 MiB argument copied in and its result out.
  CHECK_FALSE(graph_pays(GraphCost{1, 2, std::int64_t{2} << 26}));
  // A training step of 17 kernels, its parameters donated: the batch, its labels and a key in,
  // the loss out (about 400 KB), an edge launch each way.
  CHECK(graph_pays(GraphCost{17, 2, 402000}));
  // The same step not donated: 6 leaves of 2.7 MB in all copied in and out as well.
  CHECK(graph_pays(GraphCost{21, 2, 2 * 2678824 + 402000}));
  // Each edge launch weighs a launch, and each kCopyBytesPerLaunch bytes another.
  CHECK_FALSE(graph_pays(GraphCost{3, 2, 0}));
  CHECK(graph_pays(GraphCost{4, 2, kCopyBytesPerLaunch - 1}));
  CHECK_FALSE(graph_pays(GraphCost{4, 2, kCopyBytesPerLaunch}));
}
