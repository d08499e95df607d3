// CANOPY_* settings: one grammar for every switch and integer (canopy/kernels/environment.hpp),
// a ValueError naming the variable for anything else, read at first use (EnvSwitch).
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include <canopy/canopy.hpp>
#include <canopy/kernels/environment.hpp>

using namespace canopy;
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
