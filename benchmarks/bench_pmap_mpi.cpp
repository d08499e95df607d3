// psum of 64 MiB f32 across 2 processes (`mpirun -np 2`, one device each) beside MPI_Allreduce
// called directly on a buffer of the same size, in the same run. Iteration counts are fixed so
// that both processes run every benchmark the same number of times; rank 0 reports.
//   OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun -np 2 build/benchmarks/bench_pmap_mpi
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <benchmark/benchmark.h>

#include <cstdio>
#include <vector>

#include <canopy/canopy.hpp>

using namespace canopy;

namespace {

constexpr std::int64_t kFloats = 16 << 20;  // 64 MiB of f32
constexpr int kIterations = 20;

void BM_mpi_allreduce_64MiB(benchmark::State& state) {
  std::vector<float> buf(kFloats, 1.f);
  for (auto _ : state) {
    MPI_Allreduce(MPI_IN_PLACE, buf.data(), static_cast<int>(kFloats), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    benchmark::DoNotOptimize(buf.data());
  }
  state.SetBytesProcessed(state.iterations() * kFloats * 4);
}

void BM_psum_64MiB_2_processes(benchmark::State& state) {
  Array x = ones({1, kFloats});
  auto f = pmap([](const Array& v) { return psum(v, "i")[0]; }, axis_name("i"));
  (void)f(x);
  for (auto _ : state) {
    Array y = f(x);
    benchmark::DoNotOptimize(y.data<float>());
  }
  state.SetBytesProcessed(state.iterations() * kFloats * 4);
}

}  // namespace

BENCHMARK(BM_mpi_allreduce_64MiB)->Iterations(kIterations)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_psum_64MiB_2_processes)->Iterations(kIterations)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_mpi_allreduce_64MiB)->Iterations(kIterations)->Unit(benchmark::kMillisecond)->UseRealTime()->Name("BM_mpi_allreduce_64MiB/again");

int main(int argc, char** argv) {
  (void)process_count();  // canopy initialises MPI under mpirun
  if (process_count() < 2) {
    std::fprintf(stderr, "bench_pmap_mpi: run under mpirun -np 2\n");
    return 2;
  }
  if (process_index() != 0) std::freopen("/dev/null", "w", stdout);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
