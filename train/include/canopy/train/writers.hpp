// Metric writers: scalars and text per step, as host values, to JSONL, TensorBoard event files or a
// console, plus the wrappers that fan out, go async, split by tag prefix and add throughput.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <canopy/array.hpp>

#include "canopy/train/crc32c.hpp"
#include "canopy/train/error.hpp"
#include "canopy/train/serial_executor.hpp"
#include "canopy/train/tree_utils.hpp"

namespace canopy {

/// Named host scalars of one step, in the order they are written.
using Scalars = std::vector<std::pair<std::string, double>>;

/// Seconds since the Unix epoch, as events record it; tests inject a fixed clock.
using WallClock = std::function<double()>;
/// Seconds on a monotonic clock, for rates; tests inject a fake one.
using SteadyClock = std::function<double()>;
/// The system clock in seconds since the epoch (the default WallClock).
double system_wall_time();
/// std::chrono::steady_clock in seconds (the default SteadyClock).
double steady_seconds();

/// Reads each 0-d or size-1 Array to a double on the calling thread, so no writer ever holds an
/// Array (a later jit call with donate_argnums may delete its buffer). A metric with more than
/// one element is a ShapeError naming the metric and its shape; a tracer is a TracerError.
Scalars to_scalars(std::initializer_list<std::pair<std::string, Array>> metrics);
/// to_scalars over a vector of (name, Array).
Scalars to_scalars(const std::vector<std::pair<std::string, Array>>& metrics);
/// to_scalars over a metrics struct's leaves: `to_scalars(named_arrays(metrics))`.
Scalars to_scalars(const NamedArrays& metrics);

/// Where per-step scalars and text go (JAXline's Writer protocol, over host values). Writers are
/// not thread-safe: wrap one in AsyncWriter to write from a background thread.
class Writer {
 public:
  virtual ~Writer();
  /// Records `scalars` at `step`.
  virtual void write_scalars(std::int64_t step, const Scalars& scalars) = 0;
  /// Records a text summary (run info, a config dump) at `step`; ignored unless overridden.
  virtual void write_text(std::int64_t step, std::string_view tag, std::string_view text);
  /// Pushes buffered records to their destination.
  virtual void flush();
};

/// Discards everything (bobbin's NullSummaryWriter): non-leader processes, disabled logging.
class NullWriter final : public Writer {
 public:
  /// Does nothing.
  void write_scalars(std::int64_t, const Scalars&) override {}
};

/// The leader's writer in a multi-process run (JAXline's and bobbin's chief-only logging):
/// `make()` on process 0, a NullWriter on the others, so only one process creates files and
/// writes (`leader_writer([&] { return std::make_shared<JsonlWriter>(dir / "metrics.jsonl"); })`).
/// In a single process, `make()`.
std::shared_ptr<Writer> leader_writer(const std::function<std::shared_ptr<Writer>()>& make);

/// Options of JsonlWriter.
struct JsonlOptions {
  /// When non-empty, every line carries `"split": <split>` after wall_time.
  std::string split{};
  /// The source of `wall_time`.
  WallClock clock = system_wall_time;
  /// A run resumed from the checkpoint of this step: before appending, the lines an earlier run
  /// wrote for later steps (which the resumed run writes again) are dropped from the file, as
  /// TensorBoard purges orphaned events, so the file (and a plot read back from it) holds each
  /// step once. Lines that do not parse (a torn last line) go too.
  std::optional<std::int64_t> resume_from_step = std::nullopt;
};

/// The default metrics log: one JSON object per line, `{"step": 12, "wall_time": 1.7e9, "loss":
/// 0.3}`, appended and flushed on every call (crash-tolerant; `pandas.read_json(p, lines=True)`,
/// `jq`). Numbers are written in the shortest form that reads back exactly. NaN and ±inf are
/// written as the bare tokens `NaN`, `Infinity`, `-Infinity`, the convention of Python's
/// json.dumps: Python's json.loads, pandas and jq 1.6 read them (jq maps NaN to null); a strict
/// JSON parser does not. Text is a line `{"step", "wall_time", "tag": ..., "text": ...}`. A metric
/// named like a reserved key (step, wall_time, split) is a ValueError. Parent directories are
/// created. A resumed run passes `resume_from_step` (see JsonlOptions).
class JsonlWriter final : public Writer {
 public:
  /// Opens `path` for appending (first dropping the lines past options.resume_from_step, with the
  /// file rewritten atomically); IOError if it cannot.
  explicit JsonlWriter(std::filesystem::path path, JsonlOptions options = {});
  ~JsonlWriter() override;
  JsonlWriter(const JsonlWriter&) = delete;
  JsonlWriter& operator=(const JsonlWriter&) = delete;
  void write_scalars(std::int64_t step, const Scalars& scalars) override;
  void write_text(std::int64_t step, std::string_view tag, std::string_view text) override;
  void flush() override;
  /// The file written.
  const std::filesystem::path& path() const { return path_; }

 private:
  void append_line(const std::string& line);
  void drop_lines_after(std::int64_t step);
  std::filesystem::path path_;
  JsonlOptions options_;
  std::FILE* file_ = nullptr;
};

/// The scalar lines of a JsonlWriter's file, in file order: (step, scalars without `wall_time`
/// and `split`). Text lines and lines that do not parse (the torn last line of a killed run) are
/// skipped; NaN and ±Infinity read back. A missing file is empty; an unreadable one an IOError.
/// A resumed run feeds these to its plots so they show the whole run.
std::vector<std::pair<std::int64_t, Scalars>> read_jsonl_scalars(const std::filesystem::path& path);

/// Options of TensorBoardWriter.
struct TensorBoardOptions {
  /// The source of each event's wall_time.
  WallClock clock = system_wall_time;
  /// A run resumed from the checkpoint of this step: the file starts with a SessionLog START
  /// event at the next step, after which TensorBoard discards the events an earlier run wrote
  /// for steps past this one (its purge of orphaned data; PyTorch's `purge_step`).
  std::optional<std::int64_t> resume_from_step = std::nullopt;
};

/// TensorBoard event files written by hand (no TF, no libprotobuf): `logdir/events.out.tfevents.
/// <unix_ts>.<hostname>` holding TFRecords (`u64 len, u32 masked_crc32c(len), data, u32
/// masked_crc32c(data)`) of Event protos: first `file_version = "brain.Event:2"`, then one Event
/// per write_scalars call with a Summary.Value{tag, simple_value (float)} per scalar, and text as
/// a DT_STRING tensor with plugin "text". The logdir is created; a name already taken gets a
/// `.1`, `.2`... suffix. Every call is flushed to the OS.
class TensorBoardWriter final : public Writer {
 public:
  /// Creates the event file in `logdir`; IOError if it cannot.
  explicit TensorBoardWriter(std::filesystem::path logdir, TensorBoardOptions options = {});
  ~TensorBoardWriter() override;
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;
  void write_scalars(std::int64_t step, const Scalars& scalars) override;
  void write_text(std::int64_t step, std::string_view tag, std::string_view text) override;
  void flush() override;
  /// The event file written.
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_record(const std::string& event);
  std::filesystem::path path_;
  TensorBoardOptions options_;
  std::FILE* file_ = nullptr;
};

/// Options of ConsoleWriter.
struct ConsoleOptions {
  /// Significant digits of each value.
  int precision = 4;
};

/// One line per call on a stream: `step 120: loss=0.312 accuracy=0.88` (bobbin's log writer);
/// text as `step 120: [tag] text`.
class ConsoleWriter final : public Writer {
 public:
  /// Writes to `out`, which must outlive the writer.
  explicit ConsoleWriter(std::ostream& out, ConsoleOptions options = {});
  void write_scalars(std::int64_t step, const Scalars& scalars) override;
  void write_text(std::int64_t step, std::string_view tag, std::string_view text) override;
  void flush() override;

 private:
  std::ostream& out_;
  ConsoleOptions options_;
};

/// Sends every call to several writers, in order. A writer that throws does not stop the others;
/// the first error is re-raised once all have been called.
class FanoutWriter final : public Writer {
 public:
  /// Fans out to `writers` (shared, so a caller may keep a handle to one).
  explicit FanoutWriter(std::vector<std::shared_ptr<Writer>> writers = {});
  /// Adds one more destination.
  FanoutWriter& add(std::shared_ptr<Writer> writer);
  void write_scalars(std::int64_t step, const Scalars& scalars) override;
  void write_text(std::int64_t step, std::string_view tag, std::string_view text) override;
  void flush() override;

 private:
  std::vector<std::shared_ptr<Writer>> writers_;
};

/// Writes through `inner` on a SerialExecutor thread (bobbin's ThreadedSummaryWriter, JAXline's
/// async logging): calls return after copying their arguments. An error of the inner writer is
/// re-raised by the next call (and every later one); `flush` waits for all queued writes and the
/// inner flush. The destructor drains the queue and drops a pending error (flush first to see it).
class AsyncWriter final : public Writer {
 public:
  /// Takes (shared) ownership of `inner`.
  explicit AsyncWriter(std::shared_ptr<Writer> inner);
  ~AsyncWriter() override;
  void write_scalars(std::int64_t step, const Scalars& scalars) override;
  void write_text(std::int64_t step, std::string_view tag, std::string_view text) override;
  void flush() override;

 private:
  std::shared_ptr<Writer> inner_;  // declared before executor_: destroyed after its last task
  SerialExecutor executor_;
};

/// Makes the writer of one split: `dir` is `root/<split>`.
using WriterFactory = std::function<std::unique_ptr<Writer>(const std::filesystem::path& dir, const std::string& split)>;

/// Options of SplitByPrefixWriter.
struct SplitByPrefixOptions {
  /// The split of tags without a '/': `loss` goes to `root/train/` as `loss`. TensorBoard shows
  /// each directory holding event files as a run, so unprefixed tags get a run of their own
  /// rather than the root, which would nest the other runs under it. "" sends them to the root
  /// itself; a name with '/' or "." / ".." is a ValueError.
  std::string default_split = "train";
};

/// Routes each tag by its first '/' (bobbin's MultiDirectorySummaryWriter): `dev/accuracy` goes,
/// as `accuracy`, to the writer for `root/dev/`, made by `factory` on the split's first use, so
/// each eval dataset shows up as its own TensorBoard run. Tags without '/' go to the default
/// split. A prefix of "", "." or ".." is a ValueError naming the tag (it would leave `root`).
class SplitByPrefixWriter final : public Writer {
 public:
  /// Splits under `root` (created by the factory's writers, not here).
  SplitByPrefixWriter(std::filesystem::path root, WriterFactory factory, SplitByPrefixOptions options = {});
  void write_scalars(std::int64_t step, const Scalars& scalars) override;
  void write_text(std::int64_t step, std::string_view tag, std::string_view text) override;
  void flush() override;
  /// The splits seen so far, sorted.
  std::vector<std::string> splits() const;

 private:
  std::pair<std::string, std::string> route(std::string_view tag) const;
  Writer& writer_for(const std::string& split);
  std::filesystem::path root_;
  WriterFactory factory_;
  SplitByPrefixOptions options_;
  std::map<std::string, std::unique_ptr<Writer>> writers_;
};

/// Whether `scalars` hold an evaluation's results: a name whose first '/'-separated part is
/// eval, evaluation, test, dev, val, valid or validation (`test/accuracy`, `eval/loss`).
bool is_eval_scalars(const Scalars& scalars);

/// Options of Throughput.
struct ThroughputOptions {
  /// Examples per step; when set, `examples_per_sec` is added too.
  std::optional<double> batch_size{};
  /// Prepended to the added names (bobbin writes `trainer/steps_per_sec`).
  std::string prefix{};
  /// The clock rates are measured on.
  SteadyClock clock = steady_seconds;
  /// Which of ThroughputWriter's writes get the rates (and move their baseline): by default the
  /// training ones, i.e. all but those with a scalar of an evaluation split (is_eval_scalars);
  /// an empty function: every write.
  std::function<bool(const Scalars&)> carries_rates = [](const Scalars& s) { return !is_eval_scalars(s); };
};

/// The training rate between successive logged steps (JAXline adds `steps_per_sec` to every
/// logged dict): each `add_to(step, s)` appends `steps_per_sec` = Δstep / Δtime since the previous
/// call (and `examples_per_sec` = that × batch_size). The first call and a step lower than the
/// last (a restart) set the baseline; a call where the step or the clock did not advance adds
/// nothing and keeps the baseline. A batch_size that is not positive is a ValueError.
class Throughput {
 public:
  /// Reads time from `options.clock`.
  explicit Throughput(ThroughputOptions options = {});
  /// Appends the rates since the previous call to `scalars`.
  void add_to(std::int64_t step, Scalars& scalars);
  /// options.carries_rates(scalars).
  bool carries_rates(const Scalars& scalars) const { return !options_.carries_rates || options_.carries_rates(scalars); }

 private:
  ThroughputOptions options_;
  std::optional<std::pair<std::int64_t, double>> last_;
};

/// A writer that adds Throughput's rates to the training writes (options.carries_rates) before
/// passing them to `inner`; evaluation results pass through without rates and leave the baseline
/// alone, so they neither carry nor distort the training rate.
class ThroughputWriter final : public Writer {
 public:
  /// Adds rates measured by `options` and writes to `inner`.
  explicit ThroughputWriter(std::shared_ptr<Writer> inner, ThroughputOptions options = {});
  void write_scalars(std::int64_t step, const Scalars& scalars) override;
  void write_text(std::int64_t step, std::string_view tag, std::string_view text) override;
  void flush() override;

 private:
  std::shared_ptr<Writer> inner_;
  Throughput throughput_;
};

}  // namespace canopy
