// canopy's exception hierarchy and the one helper that formats every message.
// Lives in the header-only pytree layer because every other layer stands on it.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace canopy {

/// Base of every error canopy throws for a user mistake.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Pytree structures that do not match (lengths, keys, optional engagement, variant index).
class TreeError : public Error {
 public:
  using Error::Error;
};
/// Wrong dtype for an operation (integer-only op on floats, non-float grad output, ...).
class TypeError : public Error {
 public:
  using Error::Error;
};
/// Shapes that do not fit: broadcasting, matmul inner dimensions, reshape sizes, axes.
class ShapeError : public Error {
 public:
  using Error::Error;
};
/// A tracer used outside the transformation that created it.
class TracerError : public Error {
 public:
  using Error::Error;
};
/// A value outside a function's domain, where JAX raises ValueError: a sampler's impossible
/// arguments (choice without replacement of more than n), a trigger every 0 steps, a checkpoint
/// step that is not on disk.
class ValueError : public Error {
 public:
  using Error::Error;
};
/// A collective (psum, axis_index, ...) naming an axis no enclosing vmap binds.
class AxisNameError : public Error {
 public:
  using Error::Error;
};

/// A primitive without the rule a transformation asked for.
class UnimplementedRule : public Error {
 public:
  using Error::Error;
};
/// A NaN produced while CANOPY_DEBUG_NANS is on (jax's FloatingPointError under jax_debug_nans).
class FloatingPointError : public Error {
 public:
  using Error::Error;
};
/// A backend (oneDNN, cuDNN, CUDA) failure, or a device that is not there.
class DeviceError : public Error {
 public:
  using Error::Error;
};
/// A GPU kernel's result that differs from the CPU kernel's beyond the documented tolerance
/// (raised where GPU verification is on: set_gpu_verify, CANOPY_GPU_VERIFY=1).
class DeviceMismatchError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};
/// A C++ integer that does not fit the dtype it meets (`u8_array + 300`): JAX's OverflowError.
class OverflowError : public Error {
 public:
  using Error::Error;
};

/// Memory that cannot be had: an allocation the machine cannot satisfy (never std::bad_alloc).
class ResourceError : public Error {
 public:
  using Error::Error;
};

namespace detail {

/// Streams every argument into one string; messages are built only on the error path.
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

/// The single message format: `<api>: <subject> (<where>) <what>[; <hint>]`.
/// An empty `where` drops the parenthesis, an empty `hint` the tail.
inline std::string error_message(std::string_view api, std::string_view subject, std::string_view where,
                                 std::string_view what, std::string_view hint = {}) {
  std::string m;
  m.reserve(api.size() + subject.size() + where.size() + what.size() + hint.size() + 8);
  m.append(api).append(": ").append(subject);
  if (!where.empty()) m.append(" (").append(where).append(")");
  if (!what.empty()) m.append(subject.empty() ? "" : " ").append(what);
  if (!hint.empty()) m.append("; ").append(hint);
  return m;
}

/// Throws `E` with the standard message format.
template <class E>
[[noreturn]] void raise(std::string_view api, std::string_view subject, std::string_view where,
                        std::string_view what, std::string_view hint = {}) {
  throw E(error_message(api, subject, where, what, hint));
}

}  // namespace detail
}  // namespace canopy
