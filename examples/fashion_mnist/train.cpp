// The main job (`make demo`): trains the W3 MLP (or the W4 CNN) on Fashion-MNIST with Adam, the
// way a JAXline/bobbin user writes the loop: a TrainState they own, a jitted step from a loss
// function, periodic actions, checkpoints to resume from, metrics (JSONL, TensorBoard) and a
// curve plot in the run directory. Run: ./build/examples/fashion_mnist --help
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

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

template <class Model>
int run(const Options& o, const std::string& command_line) {
  // Where the state and every batch are placed; ops on them run there (a GPU: cuBLAS and the
  // CUDA kernels). Data loading, checkpoints and metrics stay on the host.
  const Device device = Device::parse(o.device == "cuda" ? "cuda:0" : o.device);
  const bool on_gpu = device.kind == Device::Kind::cuda;
  auto place = [&](const auto& tree) { return on_gpu ? device_put(tree, device) : tree; };
  Data train = first(load_fashion_mnist(o.data, "train"), o.train_limit);
  Data test = first(load_fashion_mnist(o.data, "test"), o.test_limit);
  const std::int64_t steps_per_epoch = num_batches(train.labels.shape(0), o.batch_size);
  const std::int64_t total_steps = steps_per_epoch * o.epochs;

  // Separate keys for the parameters, the steps and the data order (JAXline's init/train split).
  Array keys = random::split(random::key(o.seed), 3);
  Array init_key = keys[0], train_key = keys[1], data_key = keys[2];
  auto tx = optim::adam(o.learning_rate);
  auto state = init_train_state(Model::init(init_key), tx, train_key);

  // A run directory holds one run: a fresh start into an old run's directory would mix their
  // checkpoints, best model and metrics, so it needs --overwrite (or --resume to continue it).
  if (o.overwrite) std::filesystem::remove_all(o.out);
  check_run_config(o);
  CheckpointManager checkpoints(o.out / "checkpoints", {.max_to_keep = o.keep_checkpoints});
  if (o.resume) {
    if (auto restored = checkpoints.restore_latest(state)) {
      state = *restored;
      std::cout << "resumed from step " << state.step.template item<std::int32_t>() << "\n";
    } else {
      std::cout << "no checkpoint in " << (o.out / "checkpoints").string() << ": starting afresh\n";
    }
  } else if (auto last = checkpoints.latest_step()) {
    throw std::invalid_argument(o.out.string() + " already holds a run (checkpoint at step " + std::to_string(*last) +
                                "): pass --resume to continue it or --overwrite to start afresh");
  }
  state = place(state);
  if (state.step.template item<std::int32_t>() >= total_steps) {
    std::cout << "the run is complete: step " << state.step.template item<std::int32_t>() << " of " << total_steps
              << " (pass a larger --epochs to train on)\n";
    return 0;
  }
  std::cout << "model " << o.model << ", " << parameter_count(state.params) << " parameters; " << train.labels.shape(0)
            << " training and " << test.labels.shape(0) << " test examples, " << steps_per_epoch << " steps per epoch\n";

  auto loss_fn = [](const Model& params, const Data& batch, const Array&) {
    return cross_entropy(params(batch.images), batch.labels);
  };
  auto eager_step = make_train_step(loss_fn, tx);
  auto jitted_step = jit(eager_step, jit_name("train_step"));
  auto score = jit(
      [](const Model& params, const Data& batch) {
        Array logits = params(batch.images);
        Array labels = batch.labels;
        Array n = scalar(static_cast<float>(labels.shape(0)));
        return EvalSums{cross_entropy(logits, labels) * n, sum((argmax(logits, -1) == labels).astype(DType::f32)), n};
      },
      jit_name("eval_step"));

  // Metrics go to JSON lines, TensorBoard and the curves' SVG, written on a background thread.
  auto curves = std::make_shared<CurvePlotWriter>(o.out / "curves.svg",
                                                  PlotOptions{.title = "Fashion-MNIST, " + o.model, .panel_of = panel_of});
  // A resumed run drops what the earlier run logged past its checkpoint (it logs those steps
  // again), in metrics.jsonl and for TensorBoard; its curves start with the rest of the file.
  const std::int64_t start_step = state.step.template item<std::int32_t>();
  auto jsonl = std::make_shared<JsonlWriter>(o.out / "metrics.jsonl", JsonlOptions{.resume_from_step = start_step});
  auto tensorboard = std::make_shared<TensorBoardWriter>(o.out / "tensorboard", TensorBoardOptions{.resume_from_step = start_step});
  for (const auto& [s, scalars] : read_jsonl_scalars(o.out / "metrics.jsonl")) curves->write_scalars(s, scalars);
  AsyncWriter writer(std::make_shared<FanoutWriter>(std::vector<std::shared_ptr<Writer>>{jsonl, tensorboard, curves}));
  BestTracker best(o.out / "best", "test/accuracy", {.higher_is_better = true});

  std::int64_t step = state.step.template item<std::int32_t>();
  std::optional<ProgressBar> bar;
  if (o.progress) bar.emplace(total_steps, ProgressOptions{.desc = "train", .initial = step});
  auto say = [&](const std::string& line) {
    if (bar) bar->write(line);
    else std::cout << line << "\n";
  };
  // Run info, once (bobbin's publish_trainer_env_info): the command, the parameters and their shapes.
  const std::string run_info = "command: " + command_line + "\nparameters: " + std::to_string(parameter_count(state.params)) +
                               "\n" + shape_summary(state.params);
  writer.write_text(step, "run_info", run_info);
  say(run_info);

  // Periodic actions: the training loss early and often (JAXline's growth ratios), then every 100
  // steps; or every --log-every steps (a curve to hold against another run's, step by step).
  using State = decltype(state);
  using Info = StepInfo<Nothing>;
  CronTab<State, Info> cron;
  cron.add("log_loss", o.log_every > 0 ? every_steps(o.log_every) : growth_steps({1, 2, 5}) | every_steps(100),
           [&](std::int64_t s, const State&, const Info& info) { writer.write_scalars(s, to_scalars({{"train/loss", info.loss}})); });

  // The training set on the device (a GPU's default): each epoch is shuffled there by one gather
  // and its batches are slices of device memory; otherwise batches are cut on the host and copied.
  // Both visit the same rows in the same order for the same key.
  const bool device_data = o.device_data == 1 || (o.device_data < 0 && on_gpu);
  std::optional<DeviceDataset<Data>> train_on_device;
  if (device_data) train_on_device.emplace(train, device);
  for (int epoch = static_cast<int>(step / steps_per_epoch); epoch < o.epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();  // the epoch's shuffle included
    Array loss_sum = scalar(0.0f);
    std::int64_t epoch_steps = 0;
    auto train_epoch = [&](const auto& epoch_batches, auto&& placed) {
      for (std::int64_t i = step % steps_per_epoch; i < epoch_batches.size(); ++i) {  // a resumed run skips what it did
        const Data batch = placed(epoch_batches[i]);
        auto [next, info] = o.eager ? eager_step(state, batch) : jitted_step(state, batch);
        state = std::move(next);
        loss_sum = loss_sum + info.loss;
        ++epoch_steps;
        ++step;
        if (bar) bar->update(step, {{"loss", info.loss.template item<float>()}});
        cron.run(step, state, info);
      }
    };
    if (train_on_device)
      train_epoch(train_on_device->epoch(o.batch_size, random::fold_in(data_key, epoch)), [](const Data& b) { return b; });
    else
      train_epoch(batches(train, o.batch_size, random::fold_in(data_key, epoch)), place);
    const double train_seconds = seconds_since(t0);

    EvalSums sums = evaluate([&](const Data& b) { return score(state.params, place(b)); }, batches(test, 1000),
                             EvalSums{scalar(0.0f), scalar(0.0f), scalar(0.0f)});
    const double test_loss = sums.loss_sum.item<float>() / sums.count.item<float>();
    const double accuracy = sums.correct.item<float>() / sums.count.item<float>();
    const double train_loss = epoch_steps ? loss_sum.item<float>() / static_cast<double>(epoch_steps) : 0.0;
    const double steps_per_sec = static_cast<double>(epoch_steps) / train_seconds;

    std::ostringstream line;
    line << "epoch " << epoch + 1 << "/" << o.epochs << ": train loss " << std::fixed << std::setprecision(4) << train_loss
         << ", test loss " << test_loss << ", test accuracy " << accuracy << ", " << std::setprecision(2) << train_seconds
         << " s (" << std::setprecision(0) << steps_per_sec << " steps/s)";
    say(line.str());
    writer.write_scalars(step, {{"train/epoch_loss", train_loss},
                                {"test/loss", test_loss},
                                {"test/accuracy", accuracy},
                                {"train/epoch_seconds", train_seconds},
                                {"train/steps_per_sec", steps_per_sec}});
    writer.flush();  // the curves' SVG is redrawn at each flush
    const auto host_state = device_get(state);  // checkpoints are written from host memory
    checkpoints.save(step, host_state);
    if (best.update(step, accuracy, host_state)) say("new best test accuracy: checkpoint in " + (o.out / "best").string());
  }
  checkpoints.wait();
  best.wait();
  writer.flush();
  if (bar) bar->finish();
  std::cout << "run directory " << o.out.string()
            << ": metrics.jsonl, tensorboard/ (tensorboard --logdir), curves.svg, checkpoints/, best/\n";
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
