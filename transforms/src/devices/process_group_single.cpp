// The process group of a build without MPI: this process alone.
#include "process_group.hpp"
#include "process_group_alone.hpp"

namespace canopy::detail::processes {

int rank() { return 0; }
int size() { return 1; }

void allreduce(const void* send, void* data, std::int64_t count, DType dtype, ReduceOp, std::string_view) {
  alone::allreduce(send, data, count, dtype);
}
void allgather(void*, std::int64_t, std::string_view) {}  // block 0 is already this process's
void exchange(const std::vector<Message>& sends, const std::vector<Message>& receives, std::string_view) {
  alone::exchange(sends, receives);
}
bool all_equal(std::uint64_t, std::string_view) { return true; }

}  // namespace canopy::detail::processes
