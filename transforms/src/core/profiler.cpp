// The profiler's recording: per-thread event lists owned by the trace being recorded, the
// kernel and call events the hooks add, the Chrome/Perfetto JSON writer, and CANOPY_PROFILE.
#include "profiler_hooks.hpp"

#include <unistd.h>
#include <sys/syscall.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include "canopy/core/aval.hpp"

namespace canopy::profiler {
namespace detail {

std::atomic<int> recorders{0};

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace detail

namespace {

/// Past this many events a trace keeps counting but stops storing (a whole training run under
/// CANOPY_PROFILE would otherwise grow without bound); the JSON says how many were dropped.
constexpr std::int64_t kMaxEvents = 2'000'000;

/// One thread's events in one trace: appended by that thread, read by stop_trace and events().
struct ThreadLog {
  std::mutex mutex;
  std::vector<Event> events;
};

/// The trace being recorded (or the last one stopped).
struct Session {
  std::uint64_t id = 0;
  std::string log_dir;
  std::int64_t origin_ns = 0;
  std::mutex mutex;  ///< guards logs
  std::vector<std::shared_ptr<ThreadLog>> logs;
  std::atomic<std::int64_t> stored{0}, dropped{0};
};

std::mutex& sessions_mutex() {
  static std::mutex m;
  return m;
}
/// The session being recorded (null when none) and the last one, under sessions_mutex().
std::shared_ptr<Session>& active_session() {
  static std::shared_ptr<Session> s;
  return s;
}
std::shared_ptr<Session>& last_session() {
  static std::shared_ptr<Session> s;
  return s;
}
std::atomic<std::uint64_t> next_session_id{1};
/// The active session's id (0: none): a thread compares it with its cached log's.
std::atomic<std::uint64_t> active_id{0};

struct ThreadState {
  int depth = 0;
  std::vector<Event>* local = nullptr;  ///< a LocalRecording's list
  std::uint64_t session_id = 0;         ///< the session `log` belongs to
  std::shared_ptr<Session> session;
  std::shared_ptr<ThreadLog> log;
  std::int64_t tid = 0;
};
thread_local ThreadState here;

std::int64_t thread_id() {
  if (here.tid == 0) here.tid = static_cast<std::int64_t>(::syscall(SYS_gettid));
  return here.tid;
}

/// Stores e (times on the steady clock) where this thread records now, if anywhere.
void record(Event&& e) {
  if (here.local) {
    here.local->push_back(std::move(e));
    return;
  }
  const std::uint64_t id = active_id.load(std::memory_order_acquire);
  if (id == 0) return;  // another thread's LocalRecording turned timing on
  if (here.session_id != id) {
    std::shared_ptr<Session> s;
    {
      std::lock_guard<std::mutex> lock(sessions_mutex());
      s = active_session();
    }
    if (!s || s->id != id) return;
    auto log = std::make_shared<ThreadLog>();
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      s->logs.push_back(log);
    }
    here.session_id = id;
    here.session = std::move(s);
    here.log = std::move(log);
  }
  if (here.session->stored.fetch_add(1, std::memory_order_relaxed) >= kMaxEvents) {
    here.session->dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  std::lock_guard<std::mutex> lock(here.log->mutex);
  here.log->events.push_back(std::move(e));
}

std::string shapes_of(std::span<const Array> in, std::span<Array> out) {
  std::string s;
  for (const Array& a : in) {
    if (!s.empty()) s += ", ";
    s += a.valid() ? to_string(a.aval()) : "?";
  }
  s += " -> ";
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (i > 0) s += ", ";
    s += out[i].valid() ? to_string(out[i].aval()) : "?";
  }
  return s;
}

std::string params_of(const PrimitiveInfo& p, const ParamsRef& params) {
  // Control flow and calls print whole sub-programs: their own events show what ran inside.
  if (!p.params_to_string || p.sub_programs || p.call_program) return {};
  return p.params_to_string(params);
}

std::vector<Event> collect(const Session& s) {
  std::vector<Event> all;
  {
    auto& mutable_s = const_cast<Session&>(s);
    std::lock_guard<std::mutex> lock(mutable_s.mutex);
    for (const auto& log : s.logs) {
      std::lock_guard<std::mutex> log_lock(log->mutex);
      all.insert(all.end(), log->events.begin(), log->events.end());
    }
  }
  for (Event& e : all) {
    e.start_ns -= s.origin_ns;
    e.end_ns -= s.origin_ns;
  }
  // By start; an enclosing event before what it encloses when both start at once.
  std::stable_sort(all.begin(), all.end(), [](const Event& a, const Event& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.depth < b.depth;
  });
  return all;
}

void append_json_string(std::string& out, std::string_view s) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

void append_microseconds(std::string& out, std::int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  out += buf;
}

const char* category(Event::Kind k) {
  switch (k) {
    case Event::Kind::kernel: return "kernel";
    case Event::Kind::call: return "call";
    case Event::Kind::annotation: return "annotation";
  }
  return "kernel";
}

std::string trace_json(std::span<const Event> events, std::int64_t dropped);

std::string write_trace(const Session& s, std::span<const Event> events) {
  std::error_code ec;
  std::filesystem::create_directories(s.log_dir, ec);
  static std::atomic<int> written{0};
  const std::string path = (std::filesystem::path(s.log_dir) /
                            ("canopy." + std::to_string(::getpid()) + "." + std::to_string(written++) + ".trace.json"))
                               .string();
  std::ofstream f(path, std::ios::binary);
  if (f) f << trace_json(events, s.dropped.load());
  if (!f)
    canopy::detail::raise<ProfilerError>("stop_trace", "log_dir", s.log_dir, "cannot be written",
                                         "give start_trace a writable directory");
  return path;
}

std::shared_ptr<Session> stop_session(std::string_view api) {
  std::lock_guard<std::mutex> lock(sessions_mutex());
  std::shared_ptr<Session> s = active_session();
  if (!s) canopy::detail::raise<ProfilerError>(api, "trace", "", "is not being recorded", "call start_trace first");
  active_session().reset();
  active_id.store(0, std::memory_order_release);
  detail::recorders.fetch_sub(1);
  last_session() = s;
  return s;
}

}  // namespace

using detail::recorders;

void start_trace(const std::string& log_dir) {
  std::lock_guard<std::mutex> lock(sessions_mutex());
  if (active_session())
    canopy::detail::raise<ProfilerError>("start_trace", "trace", active_session()->log_dir,
                                         "is already being recorded", "stop_trace it first");
  auto s = std::make_shared<Session>();
  s->id = next_session_id++;
  s->log_dir = log_dir;
  s->origin_ns = detail::now_ns();
  active_session() = s;
  active_id.store(s->id, std::memory_order_release);
  recorders.fetch_add(1);
}

std::string stop_trace() {
  std::shared_ptr<Session> s = stop_session("stop_trace");
  if (s->log_dir.empty()) return {};
  const std::vector<Event> all = collect(*s);
  return write_trace(*s, all);
}

bool tracing() {
  std::lock_guard<std::mutex> lock(sessions_mutex());
  return active_session() != nullptr;
}

std::vector<Event> events() {
  std::shared_ptr<Session> s;
  {
    std::lock_guard<std::mutex> lock(sessions_mutex());
    s = active_session() ? active_session() : last_session();
  }
  return s ? collect(*s) : std::vector<Event>{};
}

std::string chrome_trace_json(std::span<const Event> events) { return trace_json(events, 0); }

namespace {
std::string trace_json(std::span<const Event> events, std::int64_t dropped) {
  std::string out;
  out.reserve(256 + events.size() * 200);
  const long long pid = ::getpid();
  out += "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  out += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" + std::to_string(pid) + ",\"tid\":0,\"args\":{\"name\":\"canopy\"}}";
  std::vector<std::int64_t> threads;
  for (const Event& e : events)
    if (std::find(threads.begin(), threads.end(), e.thread) == threads.end()) threads.push_back(e.thread);
  for (std::size_t t = 0; t < threads.size(); ++t)
    out += ",\n{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(threads[t]) +
           ",\"args\":{\"name\":\"canopy thread " + std::to_string(threads[t]) + "\"}}";
  for (const Event& e : events) {
    out += ",\n{\"ph\":\"X\",\"cat\":\"";
    out += category(e.kind);
    out += "\",\"name\":";
    append_json_string(out, e.name);
    out += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(e.thread) + ",\"ts\":";
    append_microseconds(out, e.start_ns);
    out += ",\"dur\":";
    append_microseconds(out, std::max<std::int64_t>(0, e.end_ns - e.start_ns));
    out += ",\"args\":{";
    bool first = true;
    auto field = [&](const char* key, std::string_view value) {
      if (value.empty()) return;
      if (!first) out += ',';
      first = false;
      out += '"';
      out += key;
      out += "\":";
      append_json_string(out, value);
    };
    field("primitive", e.primitive);
    field("shapes", e.shapes);
    field("params", e.params);
    field("device", e.device);
    if (e.step >= 0) {
      if (!first) out += ',';
      first = false;
      out += "\"step\":" + std::to_string(e.step);
    }
    out += "}}";
  }
  out += "\n]";
  if (dropped > 0) out += ",\"otherData\":{\"dropped_events\":" + std::to_string(dropped) + "}";
  out += "}\n";
  return out;
}
}  // namespace

namespace detail {

void run_kernel_recorded(KernelFn kernel, const PrimitiveInfo& p, std::span<const Array> in, std::span<Array> out,
                         const ParamsRef& params, Device device, int step) {
  const std::int64_t start = now_ns();
  kernel(in, out, params);
  const std::int64_t end = now_ns();
  Event e;
  e.kind = Event::Kind::kernel;
  e.name = std::string(p.name);
  e.primitive = e.name;
  e.shapes = shapes_of(in, out);
  e.params = params_of(p, params);
  e.device = to_string(device);
  e.thread = thread_id();
  e.start_ns = start;
  e.end_ns = end;
  e.depth = here.depth;
  e.step = step;
  record(std::move(e));
}

Enclosing::Enclosing(bool on, Event::Kind kind, const char* prefix, std::string_view name, Device device, int step) {
  if (!on) return;
  Event& e = event_.emplace();
  e.kind = kind;
  e.name = std::string(prefix).append(name).append(*prefix ? ")" : "");
  e.device = to_string(device);
  e.thread = thread_id();
  e.depth = here.depth++;
  e.step = step;
  e.start_ns = now_ns();
}

Enclosing::~Enclosing() {
  if (!event_) return;
  --here.depth;
  event_->end_ns = now_ns();
  record(std::move(*event_));
}

LocalRecording::LocalRecording() : previous_(here.local) {
  here.local = &events_;
  recorders.fetch_add(1);
}

LocalRecording::~LocalRecording() {
  recorders.fetch_sub(1);
  here.local = previous_;
}

std::vector<Event> LocalRecording::take() { return std::exchange(events_, {}); }

int LocalRecording::depth() { return here.depth; }

}  // namespace detail

TraceScope::TraceScope(const std::string& log_dir) { start_trace(log_dir); }

TraceScope::~TraceScope() {
  if (stopped_) return;
  try {
    stop();
  } catch (const Error&) {
    // A destructor cannot throw: an unwritable directory loses this trace (stop() reports it).
  }
}

std::string TraceScope::stop() {
  stopped_ = true;
  return stop_trace();
}

TraceAnnotation::TraceAnnotation(std::string name) {
  if (!detail::recording()) [[likely]] return;
  name_ = std::move(name);
  start_ns_ = detail::now_ns();
  ++here.depth;
}

TraceAnnotation::~TraceAnnotation() {
  if (start_ns_ < 0) return;
  --here.depth;
  Event e;
  e.kind = Event::Kind::annotation;
  e.name = std::move(name_);
  e.thread = thread_id();
  e.depth = here.depth;
  e.start_ns = start_ns_;
  e.end_ns = detail::now_ns();
  record(std::move(e));
}

namespace {

/// CANOPY_PROFILE=dir: the whole process is recorded, and written into dir at exit.
void write_at_exit() {
  try {
    if (tracing()) {
      const std::string path = stop_trace();
      std::fprintf(stderr, "canopy: profile written to %s\n", path.c_str());
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "canopy: %s\n", e.what());
  }
}

const bool started_from_environment = [] {
  const char* dir = std::getenv("CANOPY_PROFILE");
  if (!dir || !*dir) return false;
  start_trace(dir);
  std::atexit(write_at_exit);
  return true;
}();

}  // namespace
}  // namespace canopy::profiler
