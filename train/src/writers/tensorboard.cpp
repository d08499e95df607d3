// TensorBoardWriter: Event protos encoded by hand, framed as TFRecords in an events file; a
// resumed run's SessionLog START, which makes TensorBoard purge the steps it writes again.
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "canopy/train/writers.hpp"

namespace canopy {
namespace {

[[noreturn]] void raise_io(std::string_view api, const std::filesystem::path& path, std::string_view what, int err) {
  detail::raise<IOError>(api, "file", path.string(), detail::concat(what, ": ", std::strerror(err)));
}

// Protobuf wire format, the subset Event needs: varints, fixed 32/64-bit, length-delimited.
enum WireType : std::uint32_t { varint = 0, fixed64 = 1, length_delimited = 2, fixed32 = 5 };

void put_varint(std::string& out, std::uint64_t v) {
  while (v >= 0x80) {
    out += static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  out += static_cast<char>(v);
}
void put_key(std::string& out, std::uint32_t field, WireType type) { put_varint(out, (field << 3) | type); }
void put_le(std::string& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void put_double(std::string& out, std::uint32_t field, double v) {
  std::uint64_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, fixed64);
  put_le(out, bits, 8);
}
void put_float(std::string& out, std::uint32_t field, float v) {
  std::uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  put_key(out, field, fixed32);
  put_le(out, bits, 4);
}
void put_int(std::string& out, std::uint32_t field, std::int64_t v) {
  put_key(out, field, varint);
  put_varint(out, static_cast<std::uint64_t>(v));  // negative int64: ten bytes, as protobuf does
}
void put_bytes(std::string& out, std::uint32_t field, std::string_view bytes) {
  put_key(out, field, length_delimited);
  put_varint(out, bytes.size());
  out += bytes;
}

// Field numbers from tensorflow/core/util/event.proto, framework/summary.proto, tensor.proto.
namespace event {
constexpr std::uint32_t wall_time = 1, step = 2, file_version = 3, summary = 5, session_log = 6;
}
constexpr std::uint32_t session_log_status = 1;
constexpr std::int64_t session_log_start = 1;
constexpr std::uint32_t summary_value = 1;
namespace value {
constexpr std::uint32_t tag = 1, simple_value = 2, tensor = 8, metadata = 9;
}
constexpr std::uint32_t metadata_plugin_data = 1, plugin_name = 1;
namespace tensor {
constexpr std::uint32_t dtype = 1, shape = 2, string_val = 8;
constexpr std::int64_t dt_string = 7;
}

std::string event_head(double wall_time, std::int64_t step) {
  std::string e;
  put_double(e, event::wall_time, wall_time);
  put_int(e, event::step, step);
  return e;
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string h(buf);
  for (char& c : h)
    if (c == '/') c = '_';
  return h;
}

}  // namespace

TensorBoardWriter::TensorBoardWriter(std::filesystem::path logdir, TensorBoardOptions options)
    : options_(std::move(options)) {
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec) raise_io("TensorBoardWriter", logdir, "cannot create the log directory", ec.value());
  double now = options_.clock();
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%010lld", static_cast<long long>(std::floor(now)));
  std::string base = std::string("events.out.tfevents.") + stamp + "." + hostname();
  // Two writers started in the same second in one directory must not share a file.
  for (int n = 0; !file_; ++n) {
    path_ = logdir / (n == 0 ? base : base + "." + std::to_string(n));
    file_ = std::fopen(path_.c_str(), "wbx");
    if (!file_ && (errno != EEXIST || n >= 1000)) raise_io("TensorBoardWriter", path_, "cannot create", errno);
  }
  std::string first = event_head(now, 0);
  put_bytes(first, event::file_version, "brain.Event:2");
  write_record(first);
  if (options_.resume_from_step) {
    // SessionLog START at step s + 1: TensorBoard drops the earlier events of steps past s.
    std::string status, restart = event_head(now, *options_.resume_from_step + 1);
    put_int(status, session_log_status, session_log_start);
    put_bytes(restart, event::session_log, status);
    write_record(restart);
  }
}

TensorBoardWriter::~TensorBoardWriter() {
  if (file_) std::fclose(file_);
}

void TensorBoardWriter::write_record(const std::string& data) {
  std::string rec;
  rec.reserve(data.size() + 16);
  put_le(rec, data.size(), 8);
  put_le(rec, masked_crc32c(rec), 4);
  rec += data;
  put_le(rec, masked_crc32c(data), 4);
  if (std::fwrite(rec.data(), 1, rec.size(), file_) != rec.size() || std::fflush(file_) != 0)
    raise_io("TensorBoardWriter", path_, "cannot write", errno);
}

void TensorBoardWriter::write_scalars(std::int64_t step, const Scalars& scalars) {
  std::string summary;
  for (const auto& [name, v] : scalars) {
    std::string val;
    put_bytes(val, value::tag, name);
    put_float(val, value::simple_value, static_cast<float>(v));
    put_bytes(summary, summary_value, val);
  }
  std::string e = event_head(options_.clock(), step);
  put_bytes(e, event::summary, summary);
  write_record(e);
}

void TensorBoardWriter::write_text(std::int64_t step, std::string_view tag, std::string_view text) {
  std::string plugin, metadata, tensor, val, summary;
  put_bytes(plugin, plugin_name, "text");
  put_bytes(metadata, metadata_plugin_data, plugin);
  put_int(tensor, tensor::dtype, tensor::dt_string);
  put_bytes(tensor, tensor::shape, "");  // a scalar: TensorShapeProto with no dims
  put_bytes(tensor, tensor::string_val, text);
  put_bytes(val, value::tag, tag);
  put_bytes(val, value::tensor, tensor);
  put_bytes(val, value::metadata, metadata);
  put_bytes(summary, summary_value, val);
  std::string e = event_head(options_.clock(), step);
  put_bytes(e, event::summary, summary);
  write_record(e);
}

void TensorBoardWriter::flush() {
  if (std::fflush(file_) != 0) raise_io("TensorBoardWriter::flush", path_, "cannot flush", errno);
}

}  // namespace canopy
