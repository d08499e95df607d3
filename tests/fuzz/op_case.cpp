#include "op_case.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <functional>

namespace canopy::fuzz {
namespace {

// Small shapes only: the fuzzers look for crashes and wrong shapes, not for memory exhaustion
// (an output too large to allocate is the params' doing, and a ResourceError or ShapeError).
Array random_array(FuzzInput& in, DType d) {
  Shape s;
  const std::uint32_t rank = in.draw(5);
  std::int64_t n = 1;
  for (std::uint32_t i = 0; i < rank; ++i) {
    s.push_back(in.draw(5));
    n *= s.back();
  }
  std::vector<std::uint8_t> bytes = in.bytes(static_cast<std::size_t>(n) * itemsize(d));
  if (d == DType::bool_)
    for (auto& b : bytes) b &= 1;  // a bool holding another byte would be UB in the kernels, not the library's
  return array_from_data(bytes.data(), d, s);
}

DType random_dtype(FuzzInput& in) { return static_cast<DType>(in.draw(static_cast<std::uint32_t>(kNumDTypes))); }

const PrimitiveInfo* choose_primitive(FuzzInput& in) {
  const std::string name = in.token(64);
  if (const PrimitiveInfo* p = find_primitive(name)) return p;
  const auto all = registered_primitives();
  return all[std::hash<std::string>{}(name) % all.size()];
}

// Cases that are valid but ask for more work than a fuzz iteration should do: outputs over
// 64 MiB (a ShapeError or ResourceError is reached with sizes beyond what memory holds; between
// the two a request is legitimate and merely slow). Loop primitives (scan, while) hold programs,
// so their params are not perturbed and their trip counts stay the samples'.
bool too_costly(const OpCase& c) {
  std::vector<Aval> in;
  for (const Array& x : c.inputs) in.push_back(x.aval());
  if (!c.prim->arity.accepts(in.size())) return false;
  try {
    double bytes = 0;
    for (const Aval& a : c.prim->abstract_eval(in, c.ref())) bytes += static_cast<double>(a.size()) * itemsize(a.dtype);
    if (bytes > 64.0 * (1 << 20)) return true;
  } catch (const Error&) {
    return false;  // an error case: run it
  }
  return false;
}

}  // namespace

std::optional<OpCase> decode_op_case(FuzzInput& in) {
  OpCase c;
  c.prim = choose_primitive(in);
  if (!c.prim->samples) return std::nullopt;
  std::vector<ErasedSample> samples = c.prim->samples();
  if (samples.empty()) return std::nullopt;
  ErasedSample& s = samples[in.draw(static_cast<std::uint32_t>(samples.size()))];
  c.params = s.params;
  c.params_type = s.type;
  if (c.prim->perturbed_params && in.draw(2) == 1) c.params = c.prim->perturbed_params(s.ref(), in);
  // A while loop runs until its condition says stop, as in JAX: new carry values of the same
  // aval may legitimately never stop it, so its inputs change only in aval (an error case).
  const bool values_matter = c.prim->name == "while";
  for (const Array& x : s.inputs) {
    Array y;
    switch (in.draw(5)) {
      case 2: y = x.astype(random_dtype(in)); break;
      case 3: y = random_array(in, x.dtype()); break;
      case 4: y = random_array(in, random_dtype(in)); break;
      default: y = x; break;
    }
    c.inputs.push_back(values_matter && y.aval() == x.aval() ? x : y);
  }
  switch (in.draw(16)) {
    case 1: if (!c.inputs.empty()) c.inputs.pop_back(); break;
    case 2: if (!c.inputs.empty()) c.inputs.push_back(c.inputs[in.draw(static_cast<std::uint32_t>(c.inputs.size()))]); break;
    case 3: c.inputs.push_back(random_array(in, random_dtype(in))); break;
    default: break;
  }
  if (too_costly(c)) return std::nullopt;
  // CANOPY_FUZZ_VERBOSE=1: each case before it runs, to read what a crash input does.
  static const bool verbose = std::getenv("CANOPY_FUZZ_VERBOSE") != nullptr;
  if (verbose) std::fprintf(stderr, "canopy fuzz case: %s\n", c.describe().c_str());
  return c;
}

std::string OpCase::describe() const {
  std::string s = std::string(prim->name) + "[" + prim->params_to_string(ref()) + "](";
  for (std::size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : "") + to_string(inputs[i].aval());
  return s + ")";
}

void fail(const OpCase& c, const std::string& what) {
  std::fprintf(stderr, "canopy fuzz: %s: %s\n", c.describe().c_str(), what.c_str());
  std::abort();
}

void check_outputs(const OpCase& c, const Arrays& got, const char* context) {
  std::vector<Aval> in;
  for (const Array& x : c.inputs) in.push_back(x.aval());
  std::vector<Aval> want;
  try {
    want = c.prim->abstract_eval(in, c.ref());
  } catch (const Error& e) {
    fail(c, std::string(context) + ": ran although abstract_eval rejects the inputs: " + e.what());
  }
  if (got.size() != want.size())
    fail(c, std::string(context) + ": " + std::to_string(got.size()) + " outputs, abstract_eval says " +
                std::to_string(want.size()));
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (to_string(got[i].aval()) != to_string(want[i]))
      fail(c, std::string(context) + ": output " + std::to_string(i) + " is " + to_string(got[i].aval()) +
                  ", abstract_eval says " + to_string(want[i]));
    // Every element read: a buffer shorter than its aval is an out-of-bounds read under ASan.
    volatile double sink = 0;
    for (double v : got[i].to_vector<double>()) sink = sink + v;
  }
}

}  // namespace canopy::fuzz
