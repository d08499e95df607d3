// The canopy half of the numpy interoperability check: writes a checkpoint of known values
// (every dtype, a 0-d and an empty array) that read_safetensors.py recomputes and compares.
#include <cstdint>
#include <exception>
#include <iostream>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

namespace {
using namespace canopy;

struct Dense {
  Array w, b;
};
struct Params {
  Dense dense;
};
struct Opt {
  Array count, seed, mask;
};
struct Widths {  // the dtypes narrower and wider than 32 bits
  Array pixels, offsets, f16_values, steps, ids, i16_values, u16_values;
};
struct State {
  Params params;
  Opt opt;
  Array half, lr, empty;
  Widths widths;
  int config = 1;  // not an Array: not in the file
};

State known_state() {
  std::vector<float> w;
  for (int k = 0; k < 12; ++k) w.push_back(static_cast<float>(k) * 0.5f);
  std::vector<double> b;
  for (int k = 0; k < 4; ++k) b.push_back(k / 7.0);
  std::vector<std::int32_t> count;
  for (int k = 0; k < 6; ++k) count.push_back(k - 3);
  std::vector<std::uint32_t> seed;
  for (std::uint32_t k = 0; k < 3; ++k) seed.push_back(4000000000u + k);
  std::vector<bool> mask;
  for (int k = 0; k < 5; ++k) mask.push_back(k % 3 == 0);
  std::vector<bf16> half;
  for (int k = 0; k < 4; ++k) half.push_back(bf16(static_cast<float>(k) - 1.5f));
  return {{{array(w, {3, 4}), array(b, {4})}},
          {array(count, {2, 3}), array(seed, {3}), array(mask, {5})},
          array(half, {4}),
          scalar(3.25f),
          zeros({0, 2}),
          {array(std::vector<std::uint8_t>{0, 60, 120, 180, 240}, {5}),
           array(std::vector<std::int8_t>{-128, -1, 0, 127}, {2, 2}),
           array(std::vector<f16>{f16(0.1f), f16(65504.0f), f16(-2.5f)}, {3}),
           array(std::vector<std::int64_t>{std::int64_t{1} << 40, -3}, {2}),
           array(std::vector<std::uint64_t>{(std::uint64_t{1} << 63) + 5}, {1}),
           array(std::vector<std::int16_t>{-300, 300}, {2}),
           array(std::vector<std::uint16_t>{65535, 1}, {2})}};
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: write_checkpoint DIR  (writes DIR/checkpoint_42.safetensors)\n";
    return 2;
  }
  try {
    CheckpointManager ckpt(argv[1], {.async = false});
    ckpt.save(42, known_state());
  } catch (const std::exception& e) {
    std::cerr << e.what() << '\n';
    return 1;
  }
  return 0;
}
