// The process group over Open MPI. MPI is initialised (MPI_THREAD_SERIALIZED: a mutex orders
// the calls, which come from a pmap's first device thread or its caller) the first time the
// group is asked about, when the environment shows that mpirun started this process, and
// finalised at exit. Every collective is non-blocking and polled, so that a peer that died or
// took another path is a DeviceError after collective_timeout(), not a hang.
// Only the C API: Open MPI's deprecated C++ bindings would come with mpi.h otherwise.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <string>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "canopy/devices.hpp"
#include "canopy/error.hpp"
#include "process_group.hpp"
#include "process_group_alone.hpp"

namespace canopy::detail::processes {
namespace {

bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

struct Group {
  int rank = 0, size = 1;
  bool initialised_here = false;
  std::mutex calls;

  Group() {
    if (!launched_by_mpirun()) return;
    int done = 0;
    MPI_Initialized(&done);
    if (!done) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        raise<DeviceError>("devices", "MPI", "", "failed to initialise");
      initialised_here = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
  }
  ~Group() {
    if (!initialised_here) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
};

Group& group() {
  static Group g;
  return g;
}

MPI_Datatype mpi_type(DType d, std::string_view api) {
  switch (d) {
    case DType::f32: return MPI_FLOAT;
    case DType::f64: return MPI_DOUBLE;
    case DType::i32: return MPI_INT32_T;
    case DType::u32: return MPI_UINT32_T;
    case DType::u8: return MPI_UINT8_T;
    case DType::i8: return MPI_INT8_T;
    case DType::u16: return MPI_UINT16_T;
    case DType::i16: return MPI_INT16_T;
    case DType::i64: return MPI_INT64_T;
    case DType::u64: return MPI_UINT64_T;
    default:
      raise<UnimplementedRule>(api, "dtype", name(d), "cannot be reduced across processes",
                               "convert to f32 before the collective");
  }
}

/// Polls `requests` until all complete; DeviceError naming `api` after the collective timeout.
void wait_all(std::vector<MPI_Request>& requests, std::string_view api, std::unique_lock<std::mutex>& lock) {
  const auto deadline = std::chrono::steady_clock::now() + collective_timeout();
  for (;;) {
    int done = 0;
    MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE);
    if (done) return;
    if (std::chrono::steady_clock::now() > deadline)
      raise<DeviceError>(api, "collective across processes", concat("process ", group().rank),
                         concat("timed out after ", collective_timeout().count() / 1000.0, " s"),
                         "another process failed or ran different pmaps; every process must run the same pmaps "
                         "in the same order (MPI cannot be used after this error: exit)");
    lock.unlock();
    std::this_thread::yield();
    lock.lock();
  }
}

}  // namespace

int rank() { return group().rank; }
int size() { return group().size; }

namespace {
/// The timer that watches blocking calls: one thread, sleeping until a watched call's deadline.
class Watchdog {
 public:
  Watchdog() : thread_([this] { loop(); }) {}
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    changed_.notify_one();
    thread_.join();
  }
  void watch(std::string message) {
    std::lock_guard<std::mutex> lock(mutex_);
    message_ = std::move(message);
    deadline_ = std::chrono::steady_clock::now() + collective_timeout();
    watching_ = true;
    changed_.notify_one();
  }
  void done() {
    std::lock_guard<std::mutex> lock(mutex_);
    watching_ = false;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      if (!watching_) {
        changed_.wait(lock);
        continue;
      }
      const auto deadline = deadline_;
      if (changed_.wait_until(lock, deadline) == std::cv_status::timeout && watching_ && deadline_ == deadline) {
        std::fprintf(stderr, "canopy: %s\n", message_.c_str());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
      }
    }
  }
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stop_ = false, watching_ = false;
  std::chrono::steady_clock::time_point deadline_;
  std::string message_;
  std::thread thread_;
};
}  // namespace

void allreduce(const void* send, void* data, std::int64_t count, DType dtype, ReduceOp op, std::string_view api) {
  Group& g = group();
  if (g.size == 1) return alone::allreduce(send, data, count, dtype);  // MPI may not be initialised
  MPI_Datatype t = mpi_type(dtype, api);
  MPI_Op o = op == ReduceOp::sum ? MPI_SUM : op == ReduceOp::max ? MPI_MAX : MPI_MIN;
  std::unique_lock<std::mutex> lock(g.calls);
  static Watchdog watchdog;
  watchdog.watch(error_message(api, "collective across processes", concat("process ", g.rank),
                               concat("timed out after ", collective_timeout().count() / 1000.0, " s; aborting the job"),
                               "another process failed or ran different pmaps; every process must run the same "
                               "pmaps in the same order"));
  // Counts beyond int go in pieces (MPI counts are int).
  constexpr std::int64_t kPiece = 1 << 30;
  const auto item = static_cast<std::int64_t>(itemsize(dtype));
  for (std::int64_t done = 0; done < count; done += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, count - done));
    MPI_Allreduce(send ? static_cast<const char*>(send) + done * item : MPI_IN_PLACE, static_cast<char*>(data) + done * item,
                  n, t, o, MPI_COMM_WORLD);
  }
  watchdog.done();
}

void allgather(void* data, std::int64_t block_bytes, std::string_view api) {
  Group& g = group();
  if (g.size == 1) return;  // block 0 is already this process's
  if (block_bytes > (1LL << 31) - 1)
    raise<UnimplementedRule>(api, "block", concat(block_bytes, " bytes"), "is too large to gather across processes");
  std::unique_lock<std::mutex> lock(g.calls);
  std::vector<MPI_Request> r(1);
  MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, data, static_cast<int>(block_bytes), MPI_BYTE, MPI_COMM_WORLD, &r[0]);
  wait_all(r, api, lock);
}

void exchange(const std::vector<Message>& sends, const std::vector<Message>& receives, std::string_view api) {
  Group& g = group();
  if (g.size == 1) return alone::exchange(sends, receives);
  std::unique_lock<std::mutex> lock(g.calls);
  std::vector<MPI_Request> r;
  for (const Message& m : receives) {
    if (m.bytes > (1LL << 31) - 1) raise<UnimplementedRule>(api, "message", concat(m.bytes, " bytes"), "is too large");
    r.emplace_back();
    MPI_Irecv(m.data, static_cast<int>(m.bytes), MPI_BYTE, m.peer, m.tag, MPI_COMM_WORLD, &r.back());
  }
  for (const Message& m : sends) {
    if (m.bytes > (1LL << 31) - 1) raise<UnimplementedRule>(api, "message", concat(m.bytes, " bytes"), "is too large");
    r.emplace_back();
    MPI_Isend(m.data, static_cast<int>(m.bytes), MPI_BYTE, m.peer, m.tag, MPI_COMM_WORLD, &r.back());
  }
  wait_all(r, api, lock);
}

bool all_equal(std::uint64_t value, std::string_view api) {
  if (group().size == 1) return true;
  std::uint64_t v[2] = {value, ~value};  // max of v and of ~v: equal everywhere iff min == max
  Group& g = group();
  std::unique_lock<std::mutex> lock(g.calls);
  std::vector<MPI_Request> r(1);
  MPI_Iallreduce(MPI_IN_PLACE, v, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD, &r[0]);
  wait_all(r, api, lock);
  return v[0] == value && ~v[1] == value;
}

}  // namespace canopy::detail::processes
