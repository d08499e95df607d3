// The errors of the training toolbox: files that cannot be read or written and files whose
// contents are malformed.
#pragma once

#include <canopy/error.hpp>

namespace canopy {

/// A file or directory the toolbox could not open, read, write, rename or remove; names the path
/// and the operating system's reason.
class IOError : public Error {
 public:
  using Error::Error;
};
/// A file whose contents are not what its format says (a corrupt or truncated checkpoint,
/// a dataset file with a wrong magic number or size); names the file and the offending field.
class FormatError : public Error {
 public:
  using Error::Error;
};
// An argument value out of its range (a trigger every 0 steps, a schedule with no steps) is a
// canopy::ValueError (canopy/error.hpp), as everywhere in the library.

}  // namespace canopy
