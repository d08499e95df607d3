// CheckpointManager and BestTracker: host snapshots, background safetensors writes, retention,
// the step listing, template-checked restore (falling back past corrupt files to the newest that
// verifies) and the persisted best value.
#include "canopy/train/checkpoint.hpp"

#include <charconv>
#include <cmath>
#include <iostream>
#include <map>
#include <set>

#include <canopy/core/jit.hpp>

#include "canopy/train/safetensors.hpp"
#include "strict_json.hpp"

namespace canopy {

namespace {
namespace fs = std::filesystem;

constexpr std::string_view kFormat = "canopy.checkpoint";
constexpr std::string_view kFormatVersion = "1";
constexpr std::string_view kSuffix = ".safetensors";

fs::path checkpoint_path(const fs::path& dir, const std::string& prefix, std::int64_t step) {
  return dir / (prefix + std::to_string(step) + std::string(kSuffix));
}

// Steps of the files `<prefix><digits>.safetensors` in `dir`, ascending; digits are canonical
// (no sign, no leading zero) so that one step has one file name.
std::vector<std::int64_t> list_steps(const fs::path& dir, const std::string& prefix, std::string_view api) {
  std::vector<std::int64_t> steps;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec == std::errc::no_such_file_or_directory) return steps;
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() + kSuffix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        !name.ends_with(kSuffix))
      continue;
    std::string_view digits = std::string_view(name).substr(prefix.size(), name.size() - prefix.size() - kSuffix.size());
    if (digits.size() > 1 && digits[0] == '0') continue;
    std::int64_t step = 0;
    auto [end, err] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
    if (err != std::errc() || end != digits.data() + digits.size() || step < 0) continue;
    std::error_code type_ec;
    if (it->is_regular_file(type_ec)) steps.push_back(step);
  }
  if (ec) detail::raise<IOError>(api, "directory", dir.string(), detail::concat("could not be listed: ", ec.message()));
  std::sort(steps.begin(), steps.end());
  return steps;
}

void remove_file(const fs::path& path, std::string_view api) {
  std::error_code ec;
  fs::remove(path, ec);
  if (ec) detail::raise<IOError>(api, "file", path.string(), detail::concat("could not be deleted: ", ec.message()));
}

std::string aval_string(const Array& a) { return detail::concat(name(a.dtype()), to_string(a.shape())); }

std::string leaf_where(const std::string& name) { return name.empty() ? "<root>" : name; }

std::string json_string_array(const std::vector<std::string>& items) {
  std::string s = "[";
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (k) s += ',';
    detail::append_json_string(s, items[k]);
  }
  return s + "]";
}

// The checks a manager's own metadata allows; files written elsewhere may carry none of it.
void check_metadata(const TensorFile& f, std::int64_t step, const std::string& file) {
  constexpr std::string_view api = "CheckpointManager::restore";
  const auto& m = f.metadata;
  if (auto it = m.find("format_version"); it != m.end() && it->second != kFormatVersion)
    detail::raise<FormatError>(api, "file", file, detail::concat("has format_version ", it->second, "; this canopy reads ", kFormatVersion));
  if (auto it = m.find("step"); it != m.end() && it->second != std::to_string(step))
    detail::raise<FormatError>(api, "file", file, detail::concat("says it holds step ", it->second, ", not ", step));
  if (auto it = m.find("leaves"); it != m.end()) {
    detail::JsonReader r(it->second, api, file);
    std::set<std::string> leaves;
    r.expect('[', "metadata leaves");
    if (!r.consume(']')) {
      do leaves.insert(r.string("metadata leaves: a name"));
      while (r.consume(','));
      r.expect(']', "metadata leaves");
    }
    r.finish();
    std::set<std::string> tensors;
    for (const NamedArray& a : f.arrays) tensors.insert(a.name);
    if (leaves != tensors)
      detail::raise<FormatError>(api, "file", file, "lists leaves in its metadata that differ from its tensors");
  }
}
}  // namespace

namespace detail {

NamedArrays host_snapshot(const NamedArrays& arrays, std::string_view api) {
  NamedArrays out;
  out.reserve(arrays.size());
  for (const NamedArray& a : arrays) {
    require_host_value(a, api);
    out.push_back({a.name, array_from_data(a.value.raw_data(), a.value.dtype(), a.value.shape())});
  }
  return out;
}

std::vector<Array> match_template(const NamedArrays& stored, const NamedArrays& tmpl, std::string_view api,
                                  std::string_view source) {
  std::map<std::string_view, const Array*> by_name;
  for (const NamedArray& s : stored) by_name.emplace(s.name, &s.value);
  std::set<std::string_view> wanted;
  for (const NamedArray& t : tmpl) {
    if (!wanted.insert(t.name).second)
      raise<TreeError>(api, "leaf", leaf_where(t.name), "names two leaves of the template", "give them distinct key paths");
    if (!by_name.count(t.name)) {
      std::string have;
      std::size_t k = 0;
      for (auto it = by_name.begin(); it != by_name.end() && k < 6; ++it, ++k)
        have += concat(k ? ", " : "", leaf_where(std::string(it->first)));
      if (by_name.size() > 6) have += ", ...";
      raise<TreeError>(api, "leaf", leaf_where(t.name), concat("is in the template but not in ", source),
                       concat("it holds: ", stored.empty() ? "nothing" : have));
    }
  }
  for (const auto& entry : by_name)
    if (!wanted.count(entry.first))
      raise<TreeError>(api, "leaf", leaf_where(std::string(entry.first)), concat("is in ", source, " but not in the template"),
                       "restore into a template with the saved structure");
  std::vector<Array> out;
  out.reserve(tmpl.size());
  for (const NamedArray& t : tmpl) {
    const Array& s = *by_name.at(t.name);
    if (t.value.valid()) {
      std::string what = concat("is ", aval_string(s), " in ", source, " but ", aval_string(t.value), " in the template");
      if (s.dtype() != t.value.dtype()) raise<TypeError>(api, "leaf", leaf_where(t.name), what);
      if (!(s.shape() == t.value.shape())) raise<ShapeError>(api, "leaf", leaf_where(t.name), what);
    }
    out.push_back(s);
  }
  return out;
}

}  // namespace detail

CheckpointManager::CheckpointManager(std::filesystem::path dir, CheckpointOptions options)
    : dir_(std::move(dir)), options_(std::move(options)), executor_(std::make_unique<SerialExecutor>()) {
  constexpr std::string_view api = "CheckpointManager";
  if (options_.max_to_keep < 0)
    detail::raise<ValueError>(api, "max_to_keep", std::to_string(options_.max_to_keep), "is negative", "0 keeps every checkpoint");
  if (options_.prefix.find('/') != std::string::npos)
    detail::raise<ValueError>(api, "prefix", options_.prefix, "contains '/'", "put sub-directories in dir instead");
  std::error_code ec;
  if (options_.primary) fs::create_directories(dir_, ec);
  if (ec) detail::raise<IOError>(api, "directory", dir_.string(), detail::concat("could not be created: ", ec.message()));
}

CheckpointManager::~CheckpointManager() {
  try {
    executor_->wait();
  } catch (const std::exception& e) {
    std::cerr << "canopy: CheckpointManager (" << dir_.string() << ") a checkpoint write failed and wait() was not called: "
              << e.what() << '\n';
  } catch (...) {
    std::cerr << "canopy: CheckpointManager (" << dir_.string() << ") a checkpoint write failed\n";
  }
}

std::filesystem::path CheckpointManager::path_for(std::int64_t step) const { return checkpoint_path(dir_, options_.prefix, step); }

void CheckpointManager::drain() const {
  try {
    executor_->wait();
  } catch (...) {
    executor_ = std::make_unique<SerialExecutor>();  // the error is reported once; later work runs
    throw;
  }
}

void CheckpointManager::wait() { drain(); }

void CheckpointManager::save_snapshot(std::int64_t step, NamedArrays snapshot, std::vector<std::string> leaf_names,
                                      std::function<void()> after_write) {
  if (step < 0) detail::raise<ValueError>("CheckpointManager::save", "step", std::to_string(step), "is negative");
  detail::require_valid_names(snapshot, "CheckpointManager::save");  // here, not later on the worker
  auto task = [this, step, snapshot = std::move(snapshot), names = std::move(leaf_names), after = std::move(after_write)] {
    write(step, snapshot, names);
    if (after) after();
  };
  if (!options_.async) {
    drain();
    task();
    return;
  }
  try {
    executor_->submit(std::move(task));
  } catch (...) {
    executor_ = std::make_unique<SerialExecutor>();
    throw;
  }
}

void CheckpointManager::write(std::int64_t step, const NamedArrays& snapshot, const std::vector<std::string>& leaf_names) const {
  save_safetensors(path_for(step), snapshot,
                   {{"format", std::string(kFormat)},
                    {"format_version", std::string(kFormatVersion)},
                    {"step", std::to_string(step)},
                    {"leaves", json_string_array(leaf_names)}});
  if (options_.max_to_keep == 0) return;
  std::vector<std::int64_t> steps = list_steps(dir_, options_.prefix, "CheckpointManager::save");
  for (std::size_t k = 0; k + static_cast<std::size_t>(options_.max_to_keep) < steps.size(); ++k)
    remove_file(path_for(steps[k]), "CheckpointManager::save");
}

std::vector<std::int64_t> CheckpointManager::steps() const {
  drain();
  return list_steps(dir_, options_.prefix, "CheckpointManager::steps");
}

std::optional<std::int64_t> CheckpointManager::latest_step() const {
  std::vector<std::int64_t> s = steps();
  if (s.empty()) return std::nullopt;
  return s.back();
}

std::vector<Array> CheckpointManager::restore_arrays(std::int64_t step, const NamedArrays& tmpl) const {
  constexpr std::string_view api = "CheckpointManager::restore";
  drain();
  fs::path path = path_for(step);
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    std::string have;
    for (std::int64_t s : list_steps(dir_, options_.prefix, api)) have += detail::concat(have.empty() ? "" : ", ", s);
    detail::raise<ValueError>(api, "step", std::to_string(step), detail::concat("has no checkpoint in ", dir_.string()),
                              detail::concat("steps on disk: ", have.empty() ? "none" : have));
  }
  TensorFile f = load_safetensors(path);
  check_metadata(f, step, path.string());
  return detail::match_template(f.arrays, tmpl, api, path.string());
}

std::optional<std::pair<std::int64_t, std::vector<Array>>> CheckpointManager::restore_latest_arrays(const NamedArrays& tmpl) const {
  constexpr std::string_view api = "CheckpointManager::restore_latest";
  drain();
  skipped_.clear();
  std::vector<std::int64_t> steps = list_steps(dir_, options_.prefix, api);
  for (auto it = steps.rbegin(); it != steps.rend(); ++it) {
    try {
      std::vector<Array> arrays = restore_arrays(*it, tmpl);
      if (!skipped_.empty())
        detail::log_message(detail::concat(api, ": restored step ", *it, " from ", path_for(*it).string(),
                                           ", the newest checkpoint that verifies"));
      return std::pair{*it, std::move(arrays)};
    } catch (const FormatError& e) {
      skipped_.push_back({*it, path_for(*it), e.what()});
    } catch (const IOError& e) {
      skipped_.push_back({*it, path_for(*it), e.what()});
    }
    detail::log_message(detail::concat(api, ": skipped ", skipped_.back().path.string(), ": ", skipped_.back().reason));
  }
  if (skipped_.empty()) return std::nullopt;
  std::string why;
  for (const Skipped& s : skipped_) why += detail::concat("; step ", s.step, ": ", s.reason);
  detail::raise<FormatError>(api, "directory", dir_.string(), detail::concat("holds no checkpoint that verifies", why));
}

BestTracker::BestTracker(std::filesystem::path dir, std::string metric, BestOptions options)
    : dir_(std::move(dir)),
      metric_(std::move(metric)),
      options_(options),
      ckpt_(dir_, {.max_to_keep = 0, .prefix = "checkpoint_", .async = options.async, .primary = options.primary}) {
  constexpr std::string_view api = "BestTracker";
  fs::path results = dir_ / "results.json";
  std::error_code ec;
  if (!fs::exists(results, ec)) return;
  std::string text = detail::read_whole_file(results, api);
  const std::string file = results.string();
  detail::JsonReader r(text, api, file);
  std::optional<std::string> name;
  std::optional<double> value;
  std::optional<std::uint64_t> step;
  std::optional<bool> higher;
  r.expect('{', "results.json");
  if (!r.consume('}')) {
    do {
      std::string key = r.string("a key");
      r.expect(':', key);
      if (key == "metric" && !name) name = r.string("metric");
      else if (key == "value" && !value) value = r.number("value");
      else if (key == "step" && !step) step = r.uint64("step");
      else if (key == "higher_is_better" && !higher) higher = r.boolean("higher_is_better");
      else r.fail(detail::concat("unexpected or repeated key \"", key, "\""));
    } while (r.consume(','));
    r.expect('}', "results.json");
  }
  r.finish();
  if (!name || !value || !step || !higher)
    detail::raise<FormatError>(api, "file", file, "lacks one of metric, value, step, higher_is_better");
  if (*step > static_cast<std::uint64_t>(INT64_MAX)) detail::raise<FormatError>(api, "file", file, "has a step beyond int64");
  if (*name != metric_ || *higher != options_.higher_is_better)
    detail::raise<ValueError>(api, "metric", metric_,
                              detail::concat("differs from ", file, ", which tracks ", *name,
                                             *higher ? " (higher is better)" : " (lower is better)"),
                              "use another directory per metric");
  best_ = {*value, static_cast<std::int64_t>(*step)};
}

bool BestTracker::is_better(double value) const {
  if (!std::isfinite(value)) return false;
  if (!best_) return true;
  return options_.higher_is_better ? value > best_->first : value < best_->first;
}

void BestTracker::record(std::int64_t step, double value, NamedArrays snapshot, std::vector<std::string> names) {
  char number[32];
  auto end = std::to_chars(number, number + sizeof number, value).ptr;  // shortest text that reads back exactly
  std::string json = "{\"metric\": ";
  detail::append_json_string(json, metric_);
  json += detail::concat(", \"value\": ", std::string_view(number, static_cast<std::size_t>(end - number)), ", \"step\": ", step,
                         ", \"higher_is_better\": ", options_.higher_is_better ? "true" : "false", "}\n");
  // Checkpoint first, then results.json, then the old best goes: results.json never names a
  // checkpoint that is not on disk.
  ckpt_.save_snapshot(step, std::move(snapshot), std::move(names), [dir = dir_, json = std::move(json), step] {
    constexpr std::string_view api = "BestTracker::update";
    std::string_view piece = json;
    detail::write_file_atomically(dir / "results.json", std::span(&piece, 1), api);
    for (std::int64_t s : list_steps(dir, "checkpoint_", api))
      if (s != step) remove_file(checkpoint_path(dir, "checkpoint_", s), api);
  });
  best_ = {value, step};
}

}  // namespace canopy
