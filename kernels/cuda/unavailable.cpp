// The GPU backend's entry points in a build without it (-Dcuda=disabled, or no CUDA toolkit at
// configure time): there are no cuda:k devices, so transforms never reaches the kernels; the
// memory calls still answer with a DeviceError rather than fail to link.
#include "canopy/error.hpp"
#include "canopy/kernels/cuda.hpp"
#include "canopy/kernels/cuda_graph.hpp"

namespace canopy::kernels::cuda {
namespace {
[[noreturn]] void unavailable(const char* api) {
  ::canopy::detail::raise<DeviceError>(api, "cuda:k devices", "", "are not available", unavailable_reason());
}
}  // namespace

bool built() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() {
  return "this build of canopy has no CUDA backend (the toolkit was not found at configure time, or -Dcuda=disabled)";
}
std::shared_ptr<Buffer> allocate(std::size_t, int) { unavailable("allocate"); }
AllocatorStats allocator_stats(int) { unavailable("allocator_stats"); }
void empty_cache(int) { unavailable("empty_cache"); }
void copy_to_device(const void*, void*, std::size_t, int) { unavailable("device_put"); }
void copy_to_host(const void*, void*, std::size_t, int) { unavailable("device_get"); }
void copy_device(const void*, int, void*, int, std::size_t) { unavailable("device_put"); }
void synchronize(int) { unavailable("synchronize"); }
class Graph {};
std::shared_ptr<const Graph> record(int, const std::function<void()>&, std::span<const GraphEdge>, std::span<const GraphEdge>) {
  unavailable("cuda::record");
}
void replay(const Graph&, std::span<const void* const>, std::span<void* const>) { unavailable("cuda::replay"); }
bool recording(int) { return false; }
std::int64_t graph_recordings() { return 0; }
std::int64_t last_graph_kernels() { return 0; }
std::int64_t graph_replays() { return 0; }
std::int64_t graph_refusals() { return 0; }
void unary(UnaryOp, DType, const void*, void*, std::int64_t, int) { unavailable("unary"); }
void binary(BinaryOp, DType, const void*, const Shape&, const void*, const Shape&, void*, const Shape&, int) {
  unavailable("binary");
}
void special_binary(SpecialBinaryOp, DType, const void*, const Shape&, const void*, const Shape&, void*, const Shape&, int) {
  unavailable("special_binary");
}
void convert(DType, DType, const void*, void*, std::int64_t, int) { unavailable("convert"); }
void copy_strided(std::size_t, const void*, std::span<const std::int64_t>, const Shape&, void*,
                  std::span<const std::int64_t>, int) {
  unavailable("copy_strided");
}
void fill(std::size_t, const void*, void*, std::int64_t, int) { unavailable("fill"); }
void select_n(DType, const void*, std::span<const void* const>, std::size_t, void*, std::int64_t, int) {
  unavailable("select_n");
}
void iota(DType, const Shape&, int, void*, int) { unavailable("iota"); }
void reduce(ReduceOp, DType, const void*, const Shape&, std::span<const int>, void*, int) { unavailable("reduce"); }
void reduce_prod(DType, const void*, const Shape&, std::span<const int>, void*, int) { unavailable("reduce_prod"); }
void cumulative(CumulativeOp, DType, const void*, void*, const Shape&, int, bool, int) { unavailable("cumulative"); }
void argminmax(bool, DType, const void*, const Shape&, int, std::int64_t*, int) { unavailable("argminmax"); }
void matmul(DType, const void*, const void*, void*, std::int64_t, std::int64_t, std::int64_t, std::int64_t, bool, bool,
            int, Precision) {
  unavailable("matmul");
}
bool matmul_bias(DType, const void*, const void*, const void*, void*, std::int64_t, std::int64_t, std::int64_t,
                 std::int64_t, bool, bool, int, Precision) {
  unavailable("matmul_bias");
}
bool matmul_bias_grad(DType, const void*, const void*, void*, void*, std::int64_t, std::int64_t, std::int64_t, bool, bool,
                      bool, int, Precision) {
  unavailable("matmul_bias_grad");
}
std::int64_t cublaslt_calls() { return 0; }
void set_cublaslt_autotune(bool) {}
bool cublaslt_autotune() { return false; }
void set_generated_kernels(bool) {}
bool generated_kernels() { return false; }
std::int64_t generated_kernel_calls() { return 0; }
std::int64_t generated_kernel_fallbacks() { return 0; }
void prepare_generated_fused(std::span<const FusedProgram* const>, std::span<const FusedProgram* const>,
                             std::span<const ScalarProgram* const>, int) {}
bool scalar_program(const ScalarProgram&, std::span<const void* const>, std::span<void* const>, int) { return false; }
bool fused_supported(const FusedProgram&) { return false; }
void fused_elementwise_segments(std::span<const FusedProgram* const>, std::span<const void* const>, std::span<void* const>,
                                int) {
  unavailable("fused_elementwise_segments");
}
void fused_elementwise(const FusedProgram&, std::span<const void* const>, std::span<void* const>, std::int64_t, int) {
  unavailable("fused_elementwise");
}
void softmax(bool, DType, const void*, void*, const Shape&, int, int) { unavailable("softmax"); }

}  // namespace canopy::kernels::cuda
