// Internal to transforms: the processes of an `mpirun` as one group (Open MPI when canopy is
// built with it; a group of one otherwise). Every call is made by at most one thread at a time
// (MPI_THREAD_SERIALIZED) and gives up after collective_timeout() with a DeviceError naming `api`
// (allreduce: ends the job, see there).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "canopy/dtype.hpp"

namespace canopy::detail::processes {

/// This process's rank and the number of processes (MPI is initialised on first use when the
/// environment says mpirun started the process; 0 and 1 otherwise).
int rank();
int size();

enum class ReduceOp { sum, max, min };

/// Across processes: data[i] = op over the processes' send[i] (count elements of dtype); in
/// place when `send` is null. A blocking call watched by a timer: past collective_timeout() the
/// timer prints a DeviceError's message naming `api` and aborts the MPI job (MPI_Abort), so every
/// process ends instead of hanging (a blocking MPI_Allreduce is nearly twice as fast here as a
/// polled MPI_Iallreduce, and cannot be given up on otherwise).
void allreduce(const void* send, void* data, std::int64_t count, DType dtype, ReduceOp op, std::string_view api);
/// In place: `data` holds size() blocks of `block_bytes`; block rank() is this process's, and
/// afterwards every block holds its process's.
void allgather(void* data, std::int64_t block_bytes, std::string_view api);

/// One point-to-point transfer of ppermute.
struct Message {
  int peer = 0;          ///< rank sent to or received from
  int tag = 0;           ///< the destination device's global id (pairs sends with receives)
  void* data = nullptr;  ///< read for a send, written for a receive
  std::int64_t bytes = 0;
};
/// Posts every send and receive, then waits for all of them.
void exchange(const std::vector<Message>& sends, const std::vector<Message>& receives, std::string_view api);

/// Whether every process passed the same `value` (a pmap's fingerprint: every process must run
/// the same pmaps in the same order).
bool all_equal(std::uint64_t value, std::string_view api);

}  // namespace canopy::detail::processes
