// Throughput: steps (and examples) per second between successive logged training steps.
#include "canopy/train/writers.hpp"

namespace canopy {

bool is_eval_scalars(const Scalars& scalars) {
  for (const auto& entry : scalars) {
    std::string_view split = std::string_view(entry.first).substr(0, entry.first.find('/'));
    if (split.size() == entry.first.size()) continue;  // no split prefix
    for (std::string_view eval : {"eval", "evaluation", "test", "dev", "val", "valid", "validation"})
      if (split == eval) return true;
  }
  return false;
}

Throughput::Throughput(ThroughputOptions options) : options_(std::move(options)) {
  if (options_.batch_size && !(*options_.batch_size > 0))
    detail::raise<ValueError>("Throughput", "batch_size", "", detail::concat("is ", *options_.batch_size, ", not positive"));
}

void Throughput::add_to(std::int64_t step, Scalars& scalars) {
  double now = options_.clock();
  if (!last_ || step < last_->first) {  // first call, or a restart from an earlier checkpoint
    last_.emplace(step, now);
    return;
  }
  if (step == last_->first || now <= last_->second) return;  // keep the baseline: no rate yet
  double steps_per_sec = static_cast<double>(step - last_->first) / (now - last_->second);
  scalars.emplace_back(options_.prefix + "steps_per_sec", steps_per_sec);
  if (options_.batch_size) scalars.emplace_back(options_.prefix + "examples_per_sec", steps_per_sec * *options_.batch_size);
  last_.emplace(step, now);
}

ThroughputWriter::ThroughputWriter(std::shared_ptr<Writer> inner, ThroughputOptions options)
    : inner_(std::move(inner)), throughput_(std::move(options)) {
  if (!inner_) detail::raise<ValueError>("ThroughputWriter", "inner writer", "", "is null");
}

void ThroughputWriter::write_scalars(std::int64_t step, const Scalars& scalars) {
  if (!throughput_.carries_rates(scalars)) return inner_->write_scalars(step, scalars);
  Scalars with_rates = scalars;
  throughput_.add_to(step, with_rates);
  inner_->write_scalars(step, with_rates);
}

void ThroughputWriter::write_text(std::int64_t step, std::string_view tag, std::string_view text) {
  inner_->write_text(step, tag, text);
}

void ThroughputWriter::flush() { inner_->flush(); }

}  // namespace canopy
