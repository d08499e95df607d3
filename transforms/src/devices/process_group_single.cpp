// The process group of a build without MPI: this process alone.
#include "canopy/error.hpp"
#include "process_group.hpp"

namespace canopy::detail::processes {

int rank() { return 0; }
int size() { return 1; }

// With one process nothing crosses processes: the collectives never call these.
void allreduce(const void*, void*, std::int64_t, DType, ReduceOp, std::string_view) {}
void allgather(void*, std::int64_t, std::string_view) {}
void exchange(const std::vector<Message>&, const std::vector<Message>&, std::string_view) {}
bool all_equal(std::uint64_t, std::string_view) { return true; }

}  // namespace canopy::detail::processes
