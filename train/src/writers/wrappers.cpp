// Writers over writers: FanoutWriter, AsyncWriter, SplitByPrefixWriter and the leader's writer.
#include <algorithm>
#include <exception>

#include <canopy/devices.hpp>

#include "canopy/train/writers.hpp"

namespace canopy {
namespace {
template <class Writers, class Call>
void call_all(const Writers& writers, Call&& call) {
  std::exception_ptr first;
  for (const auto& w : writers) {
    try {
      call(*w);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void require_writer(const void* w, std::string_view api) {
  if (!w) detail::raise<ValueError>(api, "writer", "", "is null");
}
}  // namespace

std::shared_ptr<Writer> leader_writer(const std::function<std::shared_ptr<Writer>()>& make) {
  if (process_index() != 0) return std::make_shared<NullWriter>();
  std::shared_ptr<Writer> w = make ? make() : nullptr;
  require_writer(w.get(), "leader_writer");
  return w;
}

FanoutWriter::FanoutWriter(std::vector<std::shared_ptr<Writer>> writers) : writers_(std::move(writers)) {
  for (const auto& w : writers_) require_writer(w.get(), "FanoutWriter");
}

FanoutWriter& FanoutWriter::add(std::shared_ptr<Writer> writer) {
  require_writer(writer.get(), "FanoutWriter::add");
  writers_.push_back(std::move(writer));
  return *this;
}

void FanoutWriter::write_scalars(std::int64_t step, const Scalars& scalars) {
  call_all(writers_, [&](Writer& w) { w.write_scalars(step, scalars); });
}
void FanoutWriter::write_text(std::int64_t step, std::string_view tag, std::string_view text) {
  call_all(writers_, [&](Writer& w) { w.write_text(step, tag, text); });
}
void FanoutWriter::flush() {
  call_all(writers_, [](Writer& w) { w.flush(); });
}

AsyncWriter::AsyncWriter(std::shared_ptr<Writer> inner) : inner_(std::move(inner)) {
  require_writer(inner_.get(), "AsyncWriter");
}

AsyncWriter::~AsyncWriter() {
  try {
    executor_.submit([inner = inner_] { inner->flush(); });
  } catch (...) {  // an earlier write failed; nothing to flush into, and destructors do not throw
  }
}

void AsyncWriter::write_scalars(std::int64_t step, const Scalars& scalars) {
  executor_.submit([inner = inner_, step, scalars] { inner->write_scalars(step, scalars); });
}

void AsyncWriter::write_text(std::int64_t step, std::string_view tag, std::string_view text) {
  executor_.submit([inner = inner_, step, tag = std::string(tag), text = std::string(text)] {
    inner->write_text(step, tag, text);
  });
}

void AsyncWriter::flush() {
  executor_.submit([inner = inner_] { inner->flush(); });
  executor_.wait();
}

SplitByPrefixWriter::SplitByPrefixWriter(std::filesystem::path root, WriterFactory factory, SplitByPrefixOptions options)
    : root_(std::move(root)), factory_(std::move(factory)), options_(std::move(options)) {
  if (!factory_) detail::raise<ValueError>("SplitByPrefixWriter", "factory", "", "is empty");
  const std::string& d = options_.default_split;
  if (d == "." || d == ".." || d.find('/') != std::string::npos)
    detail::raise<ValueError>("SplitByPrefixWriter", "default_split", d, "is not a single directory name",
                              "use a name such as \"train\", or \"\" for the root itself");
}

std::pair<std::string, std::string> SplitByPrefixWriter::route(std::string_view tag) const {
  std::size_t slash = tag.find('/');
  if (slash == std::string_view::npos) return {options_.default_split, std::string(tag)};
  std::string_view split = tag.substr(0, slash), rest = tag.substr(slash + 1);
  if (split.empty() || split == "." || split == ".." || rest.empty())
    detail::raise<ValueError>("SplitByPrefixWriter", "tag", tag, "does not read <split>/<name>",
                              "a split must be a directory name below the root, and the name non-empty");
  return {std::string(split), std::string(rest)};
}

Writer& SplitByPrefixWriter::writer_for(const std::string& split) {
  auto it = writers_.find(split);
  if (it != writers_.end()) return *it->second;
  std::unique_ptr<Writer> w = factory_(split.empty() ? root_ : root_ / split, split);
  if (!w) detail::raise<ValueError>("SplitByPrefixWriter", "factory", split, "returned a null writer");
  return *writers_.emplace(split, std::move(w)).first->second;
}

void SplitByPrefixWriter::write_scalars(std::int64_t step, const Scalars& scalars) {
  // Route every tag first, so a bad one writes nothing.
  std::vector<std::pair<std::string, Scalars>> groups;
  for (const auto& [tag, value] : scalars) {
    auto routed = route(tag);  // not a structured binding: clang 14 cannot capture one in a lambda
    const std::string& split = routed.first;
    std::string& name = routed.second;
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& p) { return p.first == split; });
    if (g == groups.end()) g = groups.insert(groups.end(), {split, {}});
    g->second.emplace_back(std::move(name), value);
  }
  for (const auto& [split, group] : groups) writer_for(split).write_scalars(step, group);
}

void SplitByPrefixWriter::write_text(std::int64_t step, std::string_view tag, std::string_view text) {
  auto [split, name] = route(tag);
  writer_for(split).write_text(step, name, text);
}

void SplitByPrefixWriter::flush() {
  std::vector<Writer*> all;
  for (auto& [split, w] : writers_) all.push_back(w.get());
  call_all(all, [](Writer& w) { w.flush(); });
}

std::vector<std::string> SplitByPrefixWriter::splits() const {
  std::vector<std::string> out;
  for (const auto& [split, w] : writers_) out.push_back(split);
  return out;
}

}  // namespace canopy
