// What the copies at a CUDA graph's edges are (graph.cpp, graph_edges.cu): one kernel launch
// copies every argument of a replay into the block the graph reads it from (another copies every
// result out), instead of a memory copy per argument issued before the graph's launch. The
// addresses outside the graph change at each replay, so the kernel takes them as parameters,
// which a replay sets on the graph's node. Written as __host__ __device__ functions so that the
// CPU suite runs a launch's threads on the host against memcpy (tests/cuda_backend_test.cpp).
#pragma once

#include <cstdint>

#include "canopy/kernels/graph_edge.hpp"
#include "canopy/kernels/hd.hpp"

namespace canopy::kernels::cuda::edges {

/// Copies one launch takes (a kernel's parameters hold at most 4 KiB: these are 912 bytes);
/// more take another launch.
inline constexpr int kMaxCopies = kGraphEdgesPerLaunch;

/// A launch's copies: copy c moves bytes[c] from src[c] to dst[c], with the launch's blocks
/// first_block[c] up to first_block[c + 1] (set by plan_blocks). One whose source is its
/// destination (an argument already in the graph's block: a donated update handed back) or that
/// has no bytes copies nothing and has no blocks: a replay launches only the blocks that copy.
struct Copies {
  int count = 0;
  const unsigned char* src[kMaxCopies] = {};
  unsigned char* dst[kMaxCopies] = {};
  std::uint64_t bytes[kMaxCopies] = {};
  std::uint32_t first_block[kMaxCopies + 1] = {};
};

/// 16 bytes that a device loads and stores with one vector instruction where aligned.
struct alignas(16) Word16 {
  std::uint32_t v[4];
};

/// Thread `t` of the `threads` that share a copy: its part of the bytes, word by word. 16-byte
/// words where both ends are 16-byte aligned (every block canopy allocates is 256-byte aligned,
/// and so is every view an argument can be), 4-byte words where both are 4-byte aligned, then the
/// bytes past the last whole word.
CANOPY_HD inline void copy_share(const unsigned char* src, unsigned char* dst, std::uint64_t bytes, std::uint64_t t,
                                 std::uint64_t threads) {
  if (src == dst || bytes == 0) return;
  const auto ends = reinterpret_cast<std::uintptr_t>(src) | reinterpret_cast<std::uintptr_t>(dst);
  std::uint64_t done = 0;
  if (ends % 16 == 0) {
    const std::uint64_t words = bytes / 16;
    const auto* s = reinterpret_cast<const Word16*>(src);
    auto* d = reinterpret_cast<Word16*>(dst);
    for (std::uint64_t i = t; i < words; i += threads) d[i] = s[i];
    done = words * 16;
  } else if (ends % 4 == 0) {
    const std::uint64_t words = bytes / 4;
    const auto* s = reinterpret_cast<const std::uint32_t*>(src);
    auto* d = reinterpret_cast<std::uint32_t*>(dst);
    for (std::uint64_t i = t; i < words; i += threads) d[i] = s[i];
    done = words * 4;
  }
  for (std::uint64_t i = done + t; i < bytes; i += threads) dst[i] = src[i];
}

/// Threads per block of the edge kernel, and its blocks for a copy of `bytes`: a thread a 16-byte
/// word, at least one block, at most 1024 (a 64 MiB argument: 16 words a thread).
inline constexpr int kThreads = 256;
inline unsigned blocks_per_copy(std::uint64_t bytes) {
  const std::uint64_t b = (bytes / 16 + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : b > 1024 ? 1024 : b);
}

/// Gives each copy that moves bytes its blocks (first_block), in order; returns the launch's
/// blocks, at least one (a launch with nothing to copy is still a launch: its block exits).
inline unsigned plan_blocks(Copies& c) {
  std::uint32_t next = 0;
  for (int k = 0; k < c.count; ++k) {
    c.first_block[k] = next;
    if (c.src[k] != c.dst[k] && c.bytes[k] > 0) next += blocks_per_copy(c.bytes[k]);
  }
  c.first_block[c.count] = next;
  return next < 1 ? 1 : next;
}

/// The blocks of a launch of `c` in which every copy moves its bytes: the largest grid a replay
/// of those edges can ask for.
inline unsigned most_blocks(const Copies& c) {
  unsigned blocks = 0;
  for (int k = 0; k < c.count; ++k)
    if (c.bytes[k] > 0) blocks += blocks_per_copy(c.bytes[k]);
  return blocks < 1 ? 1 : blocks;
}

/// Thread `thread` of block `block` (of kThreads each) of a launch planned by plan_blocks: its
/// share of the copy that owns the block; nothing for a block past the last copy's.
CANOPY_HD inline void copy_block_share(const Copies& c, std::uint32_t block, std::uint32_t thread) {
  int k = 0;  // the copy whose blocks hold `block`: at most kMaxCopies steps, against the launch's cost
  while (k < c.count && c.first_block[k + 1] <= block) ++k;
  if (k >= c.count) return;
  const std::uint64_t threads = std::uint64_t{c.first_block[k + 1] - c.first_block[k]} * kThreads;
  copy_share(c.src[k], c.dst[k], c.bytes[k], std::uint64_t{block - c.first_block[k]} * kThreads + thread, threads);
}

}  // namespace canopy::kernels::cuda::edges
