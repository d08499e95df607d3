// The CPU backend's PRNG kernels: threefry2x32 and the key primitives (kernels/cpu/loops/threefry.cpp).
#include "../../primitives/common.hpp"
#include "../../primitives/random/key_avals.hpp"

namespace canopy::detail {
namespace {

const std::uint32_t* words(const Array& x) { return static_cast<const std::uint32_t*>(cdata(x)); }
std::uint32_t* mutable_words(const Array& x) { return static_cast<std::uint32_t*>(mutable_data(x)); }

void threefry2x32(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  kernels::cpu::threefry2x32(words(in[0]), words(in[1]), words(in[2]), words(in[3]), mutable_words(out[0]),
                             mutable_words(out[1]), in[0].size());
}

void random_bits(std::span<const Array> in, std::span<Array> out, const RandomBitsParams& params) {
  kernels::cpu::random_bits(words(in[0]), in[0].size() / 2, params.dtype, mutable_data(out[0]), shape_size(params.shape),
                            params.layout);
}

void random_split(std::span<const Array> in, std::span<Array> out, const RandomSplitParams& params) {
  kernels::cpu::random_split(words(in[0]), in[0].size() / 2, mutable_words(out[0]), shape_size(params.shape),
                             params.layout);
}

void random_fold_in(std::span<const Array> in, std::span<Array> out, const ParamsRef&) {
  kernels::cpu::random_fold_in(words(in[0]), words(in[1]), mutable_words(out[0]), in[1].size());
}

void random_uniform01(std::span<const Array> in, std::span<Array> out, const RandomUniform01Params& params) {
  kernels::cpu::random_uniform01(words(in[0]), in[0].size() / 2, params.dtype, mutable_data(out[0]),
                                 shape_size(params.shape), params.layout);
}

[[maybe_unused]] const bool registered = register_kernels(Device::Kind::cpu, {
    {"threefry2x32", threefry2x32},
    typed_kernel<RandomBitsParams, random_bits>("random_bits"),
    typed_kernel<RandomSplitParams, random_split>("random_split"),
    {"random_fold_in", random_fold_in},
    typed_kernel<RandomUniform01Params, random_uniform01>("random_uniform01"),
});

}  // namespace
}  // namespace canopy::detail
