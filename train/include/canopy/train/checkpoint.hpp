// Checkpoints of a whole state tree: the on-disk manager (safetensors files, keep the last N,
// async writes of host snapshots), the "best" series kept by an eval metric, and an in-memory
// store for tests (JAXline's Checkpointer / InMemoryCheckpointer, bobbin's RunEvalKeepBest).
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <canopy/devices.hpp>

#include "canopy/train/error.hpp"
#include "canopy/train/serial_executor.hpp"
#include "canopy/train/tree_utils.hpp"

namespace canopy {

namespace detail {
/// Host deep copies of `arrays` (a donated or later-reused buffer cannot change them); ValueError
/// or TracerError naming `api` and the leaf for an empty handle, a tracer or a donated Array.
NamedArrays host_snapshot(const NamedArrays& arrays, std::string_view api);
/// The arrays for `tmpl`'s leaves, in its order, taken by name from `stored`: TreeError for a leaf
/// missing on either side, ShapeError / TypeError for a shape / dtype that differs. Messages name
/// `api`, the key path, both avals and `source` (the file or store the arrays came from). A
/// template leaf that is an empty handle accepts any shape and dtype.
std::vector<Array> match_template(const NamedArrays& stored, const NamedArrays& tmpl, std::string_view api,
                                  std::string_view source);
}  // namespace detail

/// Options of CheckpointManager.
struct CheckpointOptions {
  /// How many checkpoints stay on disk; older ones are deleted after each successful write.
  /// 0 keeps every checkpoint.
  int max_to_keep = 5;
  /// File names are `<prefix><step>.safetensors`; no '/' allowed.
  std::string prefix = "checkpoint_";
  /// Whether the file write runs on a background thread (the snapshot is always taken at the call).
  bool async = true;
  /// Whether this process writes: by default the leader of a multi-process run (process 0) alone
  /// saves, as JAXline's host 0 does (save does nothing where this is false); every process
  /// restores. Set it on every process where each writes its own directory.
  bool primary = process_index() == 0;
};

/// Checkpoints of a state tree in one directory: `dir/<prefix><step>.safetensors`, each holding
/// the tree's Array leaves named by key path (`params/layers/0/w`) plus metadata (step, format
/// version, the leaf names in tree order, a CRC-32C per tensor that every restore verifies). Not
/// thread-safe: use it from the training loop's thread.
class CheckpointManager {
 public:
  /// Creates `dir` if needed (IOError if it cannot); ValueError for a bad option.
  explicit CheckpointManager(std::filesystem::path dir, CheckpointOptions options = {});
  /// Waits for pending writes; an error nobody collected with wait() is printed to stderr.
  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  /// Snapshots the Array leaves of `state` to host memory now, then writes them (in the
  /// background unless `async` is false) and trims old checkpoints. Re-raises an earlier
  /// background write's error. ValueError for a negative step.
  template <class T>
  void save(std::int64_t step, const T& state) {
    if (!options_.primary) return;
    save_snapshot(step, detail::host_snapshot(named_arrays(state), "CheckpointManager::save"), named_leaves(state));
  }
  /// The non-template part of save: writes `snapshot` (already host copies) as step `step` with
  /// `leaf_names` in its metadata, then runs `after_write` on the same thread once the file is in place.
  void save_snapshot(std::int64_t step, NamedArrays snapshot, std::vector<std::string> leaf_names,
                     std::function<void()> after_write = {});
  /// Blocks until every queued write is done; re-raises the first failed write's error (once:
  /// the manager accepts work again afterwards).
  void wait();

  /// The steps on disk, ascending (files `<prefix><digits>.safetensors`; `.tmp` and foreign files
  /// are ignored). Waits for pending writes first.
  std::vector<std::int64_t> steps() const;
  /// The largest step on disk, if any. Waits for pending writes first.
  std::optional<std::int64_t> latest_step() const;
  /// `dir/<prefix><step>.safetensors`.
  std::filesystem::path path_for(std::int64_t step) const;
  /// The checkpoint directory.
  const std::filesystem::path& directory() const { return dir_; }

  /// `tmpl` with its Array leaves read from step `step`: the template gives the structure,
  /// shapes and dtypes (see detail::match_template for the errors) and every non-Array leaf.
  /// ValueError if there is no such step, FormatError for a malformed or corrupt file (a tensor
  /// whose checksum does not match names the file and the leaf).
  template <class T>
  T restore(std::int64_t step, const T& tmpl) const {
    return replace_arrays(tmpl, restore_arrays(step, named_arrays(tmpl)));
  }
  /// restore() of the newest checkpoint that verifies, or nullopt when the directory holds none.
  /// A newer file that cannot be read or fails verification (FormatError or IOError: a torn write,
  /// a flipped byte, a bad disk block) is skipped, as orbax and JAXline resume after a crash:
  /// each skip is logged (set_log_handler; `CheckpointManager::restore_latest: skipped <file>:
  /// <why>`) and recorded in skipped(). When no checkpoint verifies, FormatError listing each
  /// file's reason. A template that does not match a file (TreeError, ShapeError, TypeError) is
  /// the caller's mistake and is raised at once.
  template <class T>
  std::optional<T> restore_latest(const T& tmpl) const {
    std::optional<std::pair<std::int64_t, std::vector<Array>>> found = restore_latest_arrays(named_arrays(tmpl));
    if (!found) return std::nullopt;
    return replace_arrays(tmpl, std::move(found->second));
  }
  /// The non-template part of restore: the arrays of step `step` matched against `tmpl`.
  std::vector<Array> restore_arrays(std::int64_t step, const NamedArrays& tmpl) const;
  /// The non-template part of restore_latest: the step restored and its arrays.
  std::optional<std::pair<std::int64_t, std::vector<Array>>> restore_latest_arrays(const NamedArrays& tmpl) const;
  /// A checkpoint restore_latest passed over, and why.
  struct Skipped {
    std::int64_t step;
    std::filesystem::path path;
    std::string reason;  ///< the error's message
  };
  /// The checkpoints the last restore_latest call skipped, newest first (empty when the newest
  /// verified).
  const std::vector<Skipped>& skipped() const { return skipped_; }

 private:
  template <class T>
  static std::vector<std::string> named_leaves(const T& state) {
    std::vector<std::string> names;
    for (const NamedArray& a : named_arrays(state)) names.push_back(a.name);
    return names;
  }
  void write(std::int64_t step, const NamedArrays& snapshot, const std::vector<std::string>& leaf_names) const;
  void drain() const;

  std::filesystem::path dir_;
  CheckpointOptions options_;
  mutable std::unique_ptr<SerialExecutor> executor_;
  mutable std::vector<Skipped> skipped_;
};

/// Options of BestTracker.
struct BestOptions {
  /// Whether a larger metric is better (accuracy) or a smaller one (loss).
  bool higher_is_better = true;
  /// Whether the checkpoint write runs in the background.
  bool async = true;
  /// Whether this process writes (see CheckpointOptions::primary: process 0 by default).
  bool primary = process_index() == 0;
};

/// The "best" series: the checkpoint of the state with the best value of an eval metric, in its
/// own directory with `results.json` (`{"metric", "value", "step", "higher_is_better"}`), which
/// is read back on construction so the best value survives a restart. Only the best checkpoint
/// is kept. Not thread-safe.
class BestTracker {
 public:
  /// Tracks `metric` in `dir` (created if needed; usually `<run dir>/best`). Reloads
  /// `dir/results.json` if present: FormatError if it is malformed, ValueError if it tracks
  /// another metric or direction.
  BestTracker(std::filesystem::path dir, std::string metric, BestOptions options = {});

  /// Whether `value` beats the best so far (any finite value beats none; NaN and infinities never do).
  bool is_better(double value) const;
  /// If `value` is better: snapshots `state`, writes it as the best checkpoint, then results.json,
  /// then deletes the previous best, and returns true. Returns false otherwise.
  template <class T>
  bool update(std::int64_t step, double value, const T& state) {
    if (!is_better(value)) return false;
    if (options_.primary) {
      NamedArrays snapshot = detail::host_snapshot(named_arrays(state), "BestTracker::update");
      std::vector<std::string> names;
      for (const NamedArray& a : snapshot) names.push_back(a.name);
      record(step, value, std::move(snapshot), std::move(names));
    } else {
      best_ = {value, step};
    }
    return true;
  }
  /// The best value so far (restored from results.json after a restart).
  std::optional<double> best_value() const { return best_ ? std::optional(best_->first) : std::nullopt; }
  /// The step of the best value so far.
  std::optional<std::int64_t> best_step() const { return best_ ? std::optional(best_->second) : std::nullopt; }
  /// The metric's name.
  const std::string& metric() const { return metric_; }
  /// `tmpl` with the best checkpoint's Arrays, or nullopt before the first best.
  template <class T>
  std::optional<T> restore_best(const T& tmpl) const {
    if (!best_) return std::nullopt;
    return ckpt_.restore(best_->second, tmpl);
  }
  /// Blocks until pending writes are done; re-raises a failed one.
  void wait() { ckpt_.wait(); }
  /// The series' checkpoint manager (steps(), path_for()).
  const CheckpointManager& checkpoints() const { return ckpt_; }

 private:
  void record(std::int64_t step, double value, NamedArrays snapshot, std::vector<std::string> names);

  std::filesystem::path dir_;
  std::string metric_;
  BestOptions options_;
  CheckpointManager ckpt_;
  std::optional<std::pair<double, std::int64_t>> best_;
};

/// An in-memory checkpointer with the manager's save/restore surface (JAXline's
/// InMemoryCheckpointer): a deque of (step, state with host deep copies of its Arrays) sorted by
/// step, the smallest steps dropped beyond `max_to_keep` (0 keeps all), as the manager does.
/// For tests and for train-and-eval in one process.
template <class T>
class InMemoryCheckpointer {
 public:
  /// ValueError for a negative max_to_keep.
  explicit InMemoryCheckpointer(int max_to_keep = 5) : max_to_keep_(max_to_keep) {
    if (max_to_keep < 0)
      detail::raise<ValueError>("InMemoryCheckpointer", "max_to_keep", std::to_string(max_to_keep), "is negative",
                                "0 keeps every checkpoint");
  }
  /// Stores a deep copy of `state` as step `step` (replacing an earlier save of the same step).
  void save(std::int64_t step, const T& state) {
    T copy = replace_arrays(state, copies(named_arrays(state), "InMemoryCheckpointer::save"));
    auto it = std::lower_bound(history_.begin(), history_.end(), step, [](const auto& e, std::int64_t s) { return e.first < s; });
    if (it != history_.end() && it->first == step) it->second = std::move(copy);
    else history_.emplace(it, step, std::move(copy));
    while (max_to_keep_ > 0 && history_.size() > static_cast<std::size_t>(max_to_keep_)) history_.pop_front();
  }
  /// Nothing runs in the background: present for the manager's surface.
  void wait() {}
  /// The stored steps, ascending.
  std::vector<std::int64_t> steps() const {
    std::vector<std::int64_t> s;
    for (const auto& entry : history_) s.push_back(entry.first);
    return s;
  }
  /// The largest stored step, if any.
  std::optional<std::int64_t> latest_step() const {
    if (history_.empty()) return std::nullopt;
    return history_.back().first;
  }
  /// A copy of the state saved as `step`, non-Array leaves included; ValueError if it is not
  /// stored. Its Arrays are fresh copies: donating them leaves the store intact.
  T restore(std::int64_t step) const {
    const T& stored = find(step);
    return replace_arrays(stored, copies(named_arrays(stored)));
  }
  /// `tmpl` with copies of the Arrays saved as `step`, checked as CheckpointManager::restore checks them.
  T restore(std::int64_t step, const T& tmpl) const {
    std::vector<Array> arrays = detail::match_template(named_arrays(find(step)), named_arrays(tmpl),
                                                       "InMemoryCheckpointer::restore",
                                                       "the in-memory step " + std::to_string(step));
    NamedArrays named;
    for (Array& a : arrays) named.push_back({"", std::move(a)});
    return replace_arrays(tmpl, copies(named));
  }
  /// restore(latest_step(), tmpl), or nullopt when nothing is stored.
  std::optional<T> restore_latest(const T& tmpl) const {
    if (history_.empty()) return std::nullopt;
    return restore(history_.back().first, tmpl);
  }

 private:
  static std::vector<Array> copies(const NamedArrays& arrays, std::string_view api = "InMemoryCheckpointer::restore") {
    std::vector<Array> out;
    for (NamedArray& a : detail::host_snapshot(arrays, api)) out.push_back(std::move(a.value));
    return out;
  }
  const T& find(std::int64_t step) const {
    for (const auto& entry : history_)
      if (entry.first == step) return entry.second;
    detail::raise<ValueError>("InMemoryCheckpointer::restore", "step", std::to_string(step), "is not stored",
                              "latest_step() and steps() list what is");
  }
  int max_to_keep_;
  std::deque<std::pair<std::int64_t, T>> history_;
};

}  // namespace canopy
