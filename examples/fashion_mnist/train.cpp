// The main job (`make demo`): trains the W3 MLP (or the W4 CNN) on Fashion-MNIST with Adam, the
// way a JAXline/bobbin user writes the loop: a TrainState they own, a jitted step from a loss
// function, periodic actions, checkpoints to resume from, metrics (JSONL, TensorBoard) and a
// curve plot in the run directory; with --scan-epoch each epoch is one jitted scan over its
// batches instead. Run: ./build/examples/fashion_mnist --help
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <tuple>
#include <utility>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/train.hpp>

#include "model.hpp"
#include "options.hpp"

namespace fashion_mnist {
namespace {

using namespace canopy;
using Data = ImageClassification;

/// What evaluation sums over test batches: a monoid (reduce_results adds it leaf by leaf).
struct EvalSums {
  Array loss_sum, correct, count;
};

/// `data` cut to its first `limit` examples (0: all).
Data first(const Data& data, std::int64_t limit) {
  if (limit <= 0 || limit >= data.labels.shape(0)) return data;
  return {data.images[slice(none, limit)], data.labels[slice(none, limit)]};
}

/// The curves' panels: every loss together, then accuracy, then one panel per speed metric.
std::string panel_of(std::string_view series) {
  std::string_view name = series.substr(series.rfind('/') + 1);
  return std::string(name.find("loss") != std::string_view::npos ? "loss" : name);
}

/// The flags that fix the meaning of a step (its batch, its data order): written with a run and
/// compared on --resume, so a resumed run cannot silently read its data differently.
std::string run_config(const Options& o) {
  return "model=" + o.model + "\nbatch_size=" + std::to_string(o.batch_size) + "\ntrain_limit=" +
         std::to_string(o.train_limit) + "\nseed=" + std::to_string(o.seed) + "\nlearning_rate=" + std::to_string(o.learning_rate) + "\n";
}

void check_run_config(const Options& o) {
  const std::filesystem::path path = o.out / "run_config.txt";
  const std::string mine = run_config(o);
  if (o.resume && std::filesystem::exists(path)) {
    std::ifstream in(path);
    std::string stored((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (stored != mine)
      throw std::invalid_argument("--resume with other settings than the run in " + o.out.string() + " was started with:\n" +
                                  stored + "now:\n" + mine);
    return;
  }
  std::filesystem::create_directories(o.out);
  std::ofstream(path) << mine;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// The loss the step differentiates: mean cross-entropy of the model's logits.
template <class Model>
struct Loss {
  Array operator()(const Model& params, const Data& batch, const Array&) const {
    return cross_entropy(params(batch.images), batch.labels);
  }
};

/// One test batch's sums: its loss times its size, its correct predictions, its size.
template <class Model>
struct Score {
  EvalSums operator()(const Model& params, const Data& batch) const {
    Array logits = params(batch.images);
    Array labels = batch.labels;
    Array n = scalar(static_cast<float>(labels.shape(0)));
    return EvalSums{cross_entropy(logits, labels) * n, sum((argmax(logits, -1) == labels).astype(DType::f32)), n};
  }
};

/// What an epoch's training reports: the sum of its steps' losses (added in step order in f32, as
/// on the device) and the number of steps.
struct EpochLoss {
  float sum = 0.0f;
  std::int64_t steps = 0;
};

/// The three keys of a run: the parameters', the steps' and the data order's (JAXline's split).
struct RunKeys {
  Array init, train, data;
};
inline RunKeys run_keys(std::uint32_t seed) {
  Array keys = random::split(random::key(seed), 3);
  return {keys[0], keys[1], keys[2]};
}

/// One training run: its data, state and compiled steps, then its run directory (checkpoints,
/// metrics, progress) once opened, trained epoch by epoch.
template <class Model>
class Trainer {
 public:
  using Tx = decltype(optim::adam(1.0));
  using State = decltype(init_train_state(std::declval<Model>(), std::declval<const Tx&>(), std::declval<Array>()));
  using Step = decltype(make_train_step(Loss<Model>{}, std::declval<Tx>()));
  using Info = StepInfo<Nothing>;

  /// The step with the epoch's loss sum carried through it: one jitted call per step, where a
  /// separate add would be another launch (and, on a GPU, another host call) per step.
  struct StepAndLossSum {
    Step step;
    std::tuple<State, Info, Array> operator()(const State& state, const Data& batch, const Array& loss_sum) const {
      auto [next, info] = step(state, batch);
      Array sum = loss_sum + info.loss;
      return {std::move(next), std::move(info), std::move(sum)};
    }
  };

  // The state and every batch are placed on `device`; ops on them run there (a GPU: cuBLAS and the
  // CUDA kernels). Data loading, checkpoints and metrics stay on the host.
  explicit Trainer(const Options& o)
      : o_(o),
        device_(Device::parse(o.device == "cuda" ? "cuda:0" : o.device)),
        on_gpu_(device_.kind == Device::Kind::cuda),
        train_(first(load_fashion_mnist(o.data, "train"), o.train_limit)),
        test_(first(load_fashion_mnist(o.data, "test"), o.test_limit)),
        steps_per_epoch_(num_batches(train_.labels.shape(0), o.batch_size)),
        total_steps_(steps_per_epoch_ * o.epochs),
        keys_(run_keys(o.seed)),
        tx_(optim::adam(o.learning_rate)),
        state_(init_train_state(Model::init(keys_.init), tx_, keys_.train)),
        step_(make_train_step(Loss<Model>{}, tx_)),
        // The state and the loss sum are donated: each step updates them in their own buffers (on
        // a GPU, in the blocks of the step's CUDA graph) instead of allocating the next ones.
        jitted_step_(jit(StepAndLossSum{step_}, jit_name("train_step"), donate_argnums<0, 2>)),
        scan_epoch_(make_scan_epoch(step_)),
        score_(jit(Score<Model>{}, jit_name("eval_step"))) {}

  /// Opens the run directory: a fresh run, or --resume from its latest checkpoint; false when the
  /// resumed run has nothing left to train.
  bool open_or_resume() {
    // A run directory holds one run: a fresh start into an old run's directory would mix their
    // checkpoints, best model and metrics, so it needs --overwrite (or --resume to continue it).
    if (o_.overwrite) std::filesystem::remove_all(o_.out);
    check_run_config(o_);
    checkpoints_.emplace(o_.out / "checkpoints", CheckpointOptions{.max_to_keep = o_.keep_checkpoints});
    if (o_.resume) {
      if (auto restored = checkpoints_->restore_latest(state_)) {
        state_ = *restored;
        std::cout << "resumed from step " << state_.step.template item<std::int32_t>() << "\n";
      } else {
        std::cout << "no checkpoint in " << (o_.out / "checkpoints").string() << ": starting afresh\n";
      }
    } else if (auto last = checkpoints_->latest_step()) {
      throw std::invalid_argument(o_.out.string() + " already holds a run (checkpoint at step " + std::to_string(*last) +
                                  "): pass --resume to continue it or --overwrite to start afresh");
    }
    state_ = place(state_);
    step_count_ = state_.step.template item<std::int32_t>();
    if (step_count_ >= total_steps_) {
      std::cout << "the run is complete: step " << step_count_ << " of " << total_steps_
                << " (pass a larger --epochs to train on)\n";
      return false;
    }
    std::cout << "model " << o_.model << ", " << parameter_count(state_.params) << " parameters; " << train_.labels.shape(0)
              << " training and " << test_.labels.shape(0) << " test examples, " << steps_per_epoch_ << " steps per epoch\n";
    return true;
  }

  /// The metric writers, the best-model tracker, the progress bar and the periodic actions; writes
  /// the run info.
  void start_logging(const std::string& command_line) {
    // Metrics go to JSON lines, TensorBoard and the curves' SVG, written on a background thread.
    auto curves = std::make_shared<CurvePlotWriter>(o_.out / "curves.svg",
                                                    PlotOptions{.title = "Fashion-MNIST, " + o_.model, .panel_of = panel_of});
    // A resumed run drops what the earlier run logged past its checkpoint (it logs those steps
    // again), in metrics.jsonl and for TensorBoard; its curves start with the rest of the file.
    auto jsonl = std::make_shared<JsonlWriter>(o_.out / "metrics.jsonl", JsonlOptions{.resume_from_step = step_count_});
    auto tensorboard =
        std::make_shared<TensorBoardWriter>(o_.out / "tensorboard", TensorBoardOptions{.resume_from_step = step_count_});
    for (const auto& [s, scalars] : read_jsonl_scalars(o_.out / "metrics.jsonl")) curves->write_scalars(s, scalars);
    writer_.emplace(std::make_shared<FanoutWriter>(std::vector<std::shared_ptr<Writer>>{jsonl, tensorboard, curves}));
    best_.emplace(o_.out / "best", "test/accuracy", BestOptions{.higher_is_better = true});
    if (o_.progress) bar_.emplace(total_steps_, ProgressOptions{.desc = "train", .initial = step_count_});
    // Run info, once (bobbin's publish_trainer_env_info): the command, the parameters and their shapes.
    const std::string run_info = "command: " + command_line + "\nparameters: " +
                                 std::to_string(parameter_count(state_.params)) + "\n" + shape_summary(state_.params);
    writer_->write_text(step_count_, "run_info", run_info);
    say(run_info);
    // Periodic actions: the training loss early and often (JAXline's growth ratios), then every 100
    // steps; or every --log-every steps (a curve to hold against another run's, step by step).
    cron_.add("log_loss", o_.log_every > 0 ? every_steps(o_.log_every) : growth_steps({1, 2, 5}) | every_steps(100),
              [this](std::int64_t s, const State&, const Info& info) {
                writer_->write_scalars(s, to_scalars({{"train/loss", info.loss}}));
              });
  }

  /// The epochs left: each trained, evaluated, logged and checkpointed.
  void train() {
    // The training set on the device (a GPU's default, and what --scan-epoch scans): each epoch is
    // shuffled there by one gather and its batches are slices of device memory; otherwise batches
    // are cut on the host and copied. Both visit the same rows in the same order for the same key.
    const bool device_data = o_.scan_epoch || o_.device_data == 1 || (o_.device_data < 0 && on_gpu_);
    if (device_data) train_on_device_.emplace(train_, device_);
    for (int epoch = static_cast<int>(step_count_ / steps_per_epoch_); epoch < o_.epochs; ++epoch) {
      const auto t0 = std::chrono::steady_clock::now();  // the epoch's shuffle included
      const Array epoch_key = random::fold_in(keys_.data, epoch);
      EpochLoss trained;
      if (o_.scan_epoch) trained = train_by_scan(train_on_device_->epoch(o_.batch_size, epoch_key));
      else if (train_on_device_) trained = train_by_steps(train_on_device_->epoch(o_.batch_size, epoch_key));
      else trained = train_by_steps(batches(train_, o_.batch_size, epoch_key));
      const double train_seconds = seconds_since(t0);
      const double accuracy = evaluate_and_log(epoch, trained, train_seconds);
      save_checkpoints(accuracy);
    }
  }

  /// Waits for background saves and writes; the closing lines.
  void finish() {
    checkpoints_->wait();
    best_->wait();
    writer_->flush();
    if (bar_) bar_->finish();
    std::cout << "run directory " << o_.out.string()
              << ": metrics.jsonl, tensorboard/ (tensorboard --logdir), curves.svg, checkpoints/, best/\n";
  }

 private:
  template <class T>
  T place(const T& tree) const {
    return on_gpu_ ? device_put(tree, device_) : tree;
  }
  void say(const std::string& line) {
    if (bar_) bar_->write(line);
    else std::cout << line << "\n";
  }

  /// An epoch batch by batch: the step (jitted, or eager with --eager) on each batch, then the
  /// periodic actions. A resumed run skips the batches it already took.
  template <class Epoch>
  EpochLoss train_by_steps(const Epoch& epoch_batches) {
    Array loss_sum = place(scalar(0.0f));
    std::int64_t steps = 0;
    for (std::int64_t i = step_count_ % steps_per_epoch_; i < epoch_batches.size(); ++i) {
      const Data batch = place(epoch_batches[i]);
      Info info;
      if (o_.eager) {
        std::tie(state_, info) = step_(state_, batch);
        loss_sum = loss_sum + info.loss;
      } else {
        std::tie(state_, info, loss_sum) = jitted_step_(state_, batch, loss_sum);
      }
      ++steps;
      ++step_count_;
      // The loss is read (on a GPU: waited for) only when the bar draws, so steps stay queued.
      if (bar_)
        bar_->update(step_count_, bar_->due(step_count_) ? Scalars{{"loss", info.loss.template item<float>()}} : Scalars{});
      cron_.run(step_count_, state_, info);
    }
    return {loss_sum.item<float>(), steps};
  }

  /// An epoch as one jitted scan over its stacked batches (--scan-epoch). The per-step losses come
  /// back together after it: the periodic actions then run for each step with that step's loss,
  /// and see the epoch's final state.
  EpochLoss train_by_scan(const DeviceBatches<Data>& epoch_batches) {
    auto [next, metrics] = scan_epoch_(state_, epoch_batches, step_count_ % steps_per_epoch_);
    state_ = std::move(next);
    const std::vector<float> losses = metrics.loss.template to_vector<float>();
    EpochLoss trained;
    for (float loss : losses) {
      trained.sum += loss;
      ++trained.steps;
      ++step_count_;
      cron_.run(step_count_, state_, Info{scalar(loss)});
    }
    if (bar_) bar_->update(step_count_, {{"loss", losses.back()}});
    return trained;
  }

  /// The test set's loss and accuracy after an epoch: the epoch's line and its metrics. Returns
  /// the accuracy.
  double evaluate_and_log(int epoch, const EpochLoss& trained, double train_seconds) {
    EvalSums sums = evaluate([&](const Data& b) { return score_(state_.params, place(b)); }, batches(test_, 1000),
                             EvalSums{scalar(0.0f), scalar(0.0f), scalar(0.0f)});
    const double test_loss = sums.loss_sum.item<float>() / sums.count.item<float>();
    const double accuracy = sums.correct.item<float>() / sums.count.item<float>();
    const double train_loss = trained.steps ? trained.sum / static_cast<double>(trained.steps) : 0.0;
    const double steps_per_sec = static_cast<double>(trained.steps) / train_seconds;

    std::ostringstream line;
    line << "epoch " << epoch + 1 << "/" << o_.epochs << ": train loss " << std::fixed << std::setprecision(4) << train_loss
         << ", test loss " << test_loss << ", test accuracy " << accuracy << ", " << std::setprecision(2) << train_seconds
         << " s (" << std::setprecision(0) << steps_per_sec << " steps/s)";
    say(line.str());
    writer_->write_scalars(step_count_, {{"train/epoch_loss", train_loss},
                                         {"test/loss", test_loss},
                                         {"test/accuracy", accuracy},
                                         {"train/epoch_seconds", train_seconds},
                                         {"train/steps_per_sec", steps_per_sec}});
    writer_->flush();  // the curves' SVG is redrawn at each flush
    return accuracy;
  }

  /// The epoch's checkpoint, and the best model's when its accuracy is the best yet.
  void save_checkpoints(double accuracy) {
    const auto host_state = device_get(state_);  // checkpoints are written from host memory
    checkpoints_->save(step_count_, host_state);
    if (best_->update(step_count_, accuracy, host_state))
      say("new best test accuracy: checkpoint in " + (o_.out / "best").string());
  }

  const Options& o_;
  const Device device_;
  const bool on_gpu_;
  const Data train_, test_;
  const std::int64_t steps_per_epoch_, total_steps_;
  const RunKeys keys_;
  Tx tx_;
  State state_;
  Step step_;
  decltype(jit(std::declval<StepAndLossSum>(), jit_name(""), donate_argnums<0, 2>)) jitted_step_;
  decltype(make_scan_epoch(std::declval<Step>())) scan_epoch_;
  decltype(jit(Score<Model>{}, jit_name(""))) score_;
  std::int64_t step_count_ = 0;
  std::optional<CheckpointManager> checkpoints_;
  std::optional<AsyncWriter> writer_;
  std::optional<BestTracker> best_;
  std::optional<ProgressBar> bar_;
  CronTab<State, Info> cron_;
  std::optional<DeviceDataset<Data>> train_on_device_;
};

template <class Model>
int run(const Options& o, const std::string& command_line) {
  Trainer<Model> trainer(o);
  if (!trainer.open_or_resume()) return 0;
  trainer.start_logging(command_line);
  trainer.train();
  trainer.finish();
  return 0;
}

}  // namespace
}  // namespace fashion_mnist

int main(int argc, char** argv) {
  using namespace fashion_mnist;
  try {
    for (int i = 1; i < argc; ++i)
      if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
        print_usage(std::cout);
        return 0;
      }
    Options o = parse_options(argc, argv);
    std::string command_line = argv[0];
    for (int i = 1; i < argc; ++i) command_line.append(" ").append(argv[i]);
    return o.model == "cnn" ? run<Cnn>(o, command_line) : run<Mlp>(o, command_line);
  } catch (const std::invalid_argument& e) {
    std::cerr << "fashion_mnist: " << e.what() << "\n";
    print_usage(std::cerr);
    return 2;
  } catch (const canopy::Error& e) {
    std::cerr << "fashion_mnist: " << e.what() << "\n";
    return 1;
  }
}
