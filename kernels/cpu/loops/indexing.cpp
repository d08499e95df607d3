// Data movement for slicing and indexing: strided-to-strided copies, fills, and the window
// gather/scatter loops. Copies move bytes by element width, so one instantiation serves every
// dtype of that width; only scatter-add needs the element type.
#include "canopy/kernels/cpu_indexing.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "canopy/kernels/cpu_runtime.hpp"
#include "loops.hpp"

namespace canopy::kernels::cpu {
namespace {

template <class W>
void copy_strided_typed(const W* in, std::span<const std::int64_t> ist, std::span<const std::int64_t> shape, W* out,
                        std::span<const std::int64_t> ost) {
  // Unit dims carry no offset; neighbours that stay affine in both source and destination merge,
  // so a slice of whole rows becomes one long memcpy per row.
  std::vector<std::int64_t> dims, is, os;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return;
    if (shape[i] == 1) continue;
    if (!dims.empty() && is.back() == ist[i] * shape[i] && os.back() == ost[i] * shape[i]) {
      dims.back() *= shape[i];
      is.back() = ist[i];
      os.back() = ost[i];
    } else {
      dims.push_back(shape[i]);
      is.push_back(ist[i]);
      os.push_back(ost[i]);
    }
  }
  if (dims.empty()) { out[0] = in[0]; return; }
  const int r = static_cast<int>(dims.size());
  const std::int64_t inner = dims.back(), isi = is.back(), osi = os.back();
  std::int64_t rows = 1;
  for (int d = 0; d + 1 < r; ++d) rows *= dims[static_cast<std::size_t>(d)];
  loops::parallel_for(rows, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t row = lo; row < hi; ++row) {
      std::int64_t ioff = 0, ooff = 0, rem = row;
      for (int d = r - 2; d >= 0; --d) {
        std::int64_t k = rem % dims[static_cast<std::size_t>(d)];
        rem /= dims[static_cast<std::size_t>(d)];
        ioff += k * is[static_cast<std::size_t>(d)];
        ooff += k * os[static_cast<std::size_t>(d)];
      }
      const W* s = in + ioff;
      W* o = out + ooff;
      if (isi == 1 && osi == 1) std::memcpy(o, s, sizeof(W) * static_cast<std::size_t>(inner));
      else for (std::int64_t j = 0; j < inner; ++j) o[j * osi] = s[j * isi];
    }
  }, rows * inner >= loops::kParallelMin ? 2 : rows + 1);
}

// Whether table[w] == table[0] + w for all w: the window is one contiguous run.
bool is_run(std::span<const std::int64_t> table) {
  for (std::size_t w = 0; w < table.size(); ++w)
    if (table[w] != table[0] + static_cast<std::int64_t>(w)) return false;
  return true;
}

template <class W>
void gather_typed(const W* in, std::span<const std::int64_t> in_batch, std::span<const std::int64_t> in_window,
                  const W* fill, W* out, std::span<const std::int64_t> out_batch,
                  std::span<const std::int64_t> out_window) {
  const auto nb = static_cast<std::int64_t>(in_batch.size());
  const auto nw = static_cast<std::int64_t>(in_window.size());
  if (nb == 0 || nw == 0) return;
  const bool runs = is_run(in_window) && is_run(out_window);
  loops::parallel_for(nb, [&](std::int64_t lo, std::int64_t hi) {
    for (std::int64_t b = lo; b < hi; ++b) {
      W* o = out + out_batch[static_cast<std::size_t>(b)];
      const std::int64_t base = in_batch[static_cast<std::size_t>(b)];
      if (base < 0) {
        for (std::int64_t w = 0; w < nw; ++w) o[out_window[static_cast<std::size_t>(w)]] = *fill;
      } else if (runs) {
        std::memcpy(o + out_window[0], in + base + in_window[0], sizeof(W) * static_cast<std::size_t>(nw));
      } else {
        const W* s = in + base;
        for (std::int64_t w = 0; w < nw; ++w)
          o[out_window[static_cast<std::size_t>(w)]] = s[in_window[static_cast<std::size_t>(w)]];
      }
    }
  }, nb * nw >= loops::kParallelMin ? 2 : nb + 1);
}

template <class T>
void scatter_typed(ScatterOp op, const T* upd, std::span<const std::int64_t> upd_batch,
                   std::span<const std::int64_t> upd_window, T* operand, std::span<const std::int64_t> op_batch,
                   std::span<const std::int64_t> op_window) {
  const auto nw = static_cast<std::int64_t>(op_window.size());
  // Batches may hit the same elements, so they run in order; within one window every element is
  // distinct, so a large window is split across threads.
  for (std::size_t b = 0; b < op_batch.size(); ++b) {
    if (op_batch[b] < 0) continue;
    T* o = operand + op_batch[b];
    const T* u = upd + upd_batch[b];
    loops::parallel_for(nw, [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t w = lo; w < hi; ++w) {
        T& dst = o[op_window[static_cast<std::size_t>(w)]];
        const T& src = u[upd_window[static_cast<std::size_t>(w)]];
        if constexpr (std::is_same_v<T, bool>) {
          dst = op == ScatterOp::add ? (dst || src) : src;
        } else {
          dst = op == ScatterOp::add ? loops::store<T>(loops::add(loops::load(dst), loops::load(src))) : src;
        }
      }
    });
  }
}

}  // namespace

void copy_strided(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_strides,
                  std::span<const std::int64_t> shape, void* out, std::span<const std::int64_t> out_strides) {
  ensure_runtime();
  visit_width(itemsize, [&]<class W>(std::type_identity<W>) {
    copy_strided_typed(static_cast<const W*>(in), in_strides, shape, static_cast<W*>(out), out_strides);
  });
}

void fill(std::size_t itemsize, const void* value, void* out, std::int64_t n) {
  visit_width(itemsize, [&]<class W>(std::type_identity<W>) {
    W v;
    std::memcpy(&v, value, sizeof(W));
    std::fill_n(static_cast<W*>(out), n, v);
  });
}

void gather_windows(std::size_t itemsize, const void* in, std::span<const std::int64_t> in_batch,
                    std::span<const std::int64_t> in_window, const void* fill_value, void* out,
                    std::span<const std::int64_t> out_batch, std::span<const std::int64_t> out_window) {
  ensure_runtime();
  visit_width(itemsize, [&]<class W>(std::type_identity<W>) {
    gather_typed(static_cast<const W*>(in), in_batch, in_window, static_cast<const W*>(fill_value),
                 static_cast<W*>(out), out_batch, out_window);
  });
}

void scatter_windows(ScatterOp op, DType dtype, const void* updates, std::span<const std::int64_t> upd_batch,
                     std::span<const std::int64_t> upd_window, void* operand, std::span<const std::int64_t> op_batch,
                     std::span<const std::int64_t> op_window) {
  ensure_runtime();
  visit_dtype(dtype, [&]<class T>(std::type_identity<T>) {
    scatter_typed(op, static_cast<const T*>(updates), upd_batch, upd_window, static_cast<T*>(operand), op_batch,
                  op_window);
  });
}

}  // namespace canopy::kernels::cpu
