// Internal to transforms: the process group's operations when this process is the whole group
// (a build without MPI, or a process that mpirun did not start): every contribution is its own.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "process_group.hpp"

namespace canopy::detail::processes::alone {

/// The reduction over one process: data = send (nothing to do in place).
inline void allreduce(const void* send, void* data, std::int64_t count, DType dtype) {
  if (send && send != data && count > 0)
    std::memcpy(data, send, static_cast<std::size_t>(count) * itemsize(dtype));
}

/// Messages can only go from this process to itself: each receive takes the send of its tag.
inline void exchange(const std::vector<Message>& sends, const std::vector<Message>& receives) {
  for (const Message& r : receives)
    for (const Message& s : sends)
      if (s.tag == r.tag && s.data != r.data && r.bytes > 0) {
        std::memcpy(r.data, s.data, static_cast<std::size_t>(std::min(r.bytes, s.bytes)));
        break;
      }
}

}  // namespace canopy::detail::processes::alone
