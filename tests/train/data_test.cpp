// Data in train/: IDX files and Fashion-MNIST, host-side batches with shuffling and padding,
// and the prefetching thread.
#include <doctest/doctest.h>
#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <chrono>
#include <limits>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <canopy/canopy.hpp>
#include <canopy/random.hpp>
#include <canopy/train.hpp>

#include "../helpers/error_message.hpp"
#include "../helpers/temp_dir.hpp"
#include "counting_data.hpp"

namespace {

namespace fs = std::filesystem;
using namespace canopy;


std::vector<std::uint8_t> idx_header(std::uint8_t type, const std::vector<std::uint32_t>& dims) {
  std::vector<std::uint8_t> h{0, 0, type, static_cast<std::uint8_t>(dims.size())};
  for (std::uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) h.push_back(static_cast<std::uint8_t>(d >> s));
  return h;
}

void write_file(const fs::path& p, const std::vector<std::uint8_t>& bytes, bool gz) {
  if (gz) {
    gzFile f = gzopen(p.c_str(), "wb");
    REQUIRE(f != nullptr);
    if (!bytes.empty()) REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
    REQUIRE(gzclose(f) == Z_OK);
  } else {
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
}

std::vector<std::uint8_t> concat(std::vector<std::uint8_t> a, const std::vector<std::uint8_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<std::uint8_t> iota_bytes(std::size_t n, std::uint8_t start = 0) {
  std::vector<std::uint8_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

using test::counting_data;
using test::Example;

bool fashion_mnist_present() {
  std::error_code ec;
  return fs::exists(fs::path(fashion_mnist_default_dir) / "train-images-idx3-ubyte.gz", ec);
}

}  // namespace

TEST_CASE("data: read_idx reads plain and gzipped IDX files") {
  TempDir dir("good");
  auto bytes = concat(idx_header(0x08, {3, 2, 2}), iota_bytes(12, 200));
  for (bool gz : {false, true}) {
    fs::path p = dir.path / (gz ? "a.gz" : "a");
    write_file(p, bytes, gz);
    IdxArray a = read_idx(p);
    CHECK(a.shape == std::vector<std::int64_t>{3, 2, 2});
    CHECK(a.data == iota_bytes(12, 200));
    const Array as_array = a.to_array();
    CHECK(as_array.aval() == Aval{DType::u8, Shape{3, 2, 2}});
    CHECK(as_array.to_vector<std::uint8_t>() == iota_bytes(12, 200));
  }
  // Sizes above 2^24 use all four big-endian bytes; an empty dimension has no payload.
  write_file(dir.path / "empty", idx_header(0x08, {0x01000000u, 0}), false);
  CHECK(read_idx(dir.path / "empty").shape == std::vector<std::int64_t>{0x01000000, 0});
  CHECK(read_idx(dir.path / "empty").data.empty());
}

TEST_CASE("data: read_idx rejects a bad magic, another element type, a short or long file") {
  TempDir dir("bad");
  for (bool gz : {false, true}) {
    CAPTURE(gz);
    auto check = [&](const std::string& name, const std::vector<std::uint8_t>& bytes, const std::string& expect) {
      fs::path p = dir.path / (name + (gz ? ".gz" : ""));
      write_file(p, bytes, gz);
      std::string msg = error_message<FormatError>([&] { read_idx(p); });
      CAPTURE(msg);
      CHECK(contains(msg, p.string()));
      CHECK(contains(msg, expect));
    };
    check("magic", concat({0x1f, 0x00, 0x08, 0x01, 0, 0, 0, 1}, {5}), "magic is 1f 00 08 01");
    check("type", concat(idx_header(0x0d, {1}), {0, 0, 0, 0}), "element type (magic byte 2) is 0x0d");
    check("ndim0", idx_header(0x08, {}), "has 0 dimensions");
    check("empty", {}, "has 0 bytes");
    check("header", {0, 0, 8, 2, 0, 0, 0, 3, 0, 0}, "header is 10 bytes, expected 12");
    check("short", concat(idx_header(0x08, {3, 4}), iota_bytes(11)), "payload is 11 bytes, expected 12 for shape [3,4]");
    check("long", concat(idx_header(0x08, {3, 4}), iota_bytes(13)), "payload is 13 bytes, expected 12 for shape [3,4]");
  }
  // A gzip stream cut in the middle: zlib reports it, read_idx names the file.
  fs::path whole = dir.path / "whole.gz", cut = dir.path / "cut.gz";
  write_file(whole, concat(idx_header(0x08, {4096}), std::vector<std::uint8_t>(4096, 3)), true);
  std::ifstream in(whole, std::ios::binary);
  std::vector<char> gz((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(cut, std::ios::binary).write(gz.data(), static_cast<std::streamsize>(gz.size() - 6));
  std::string msg = error_message<FormatError>([&] { read_idx(cut); });
  CHECK(contains(msg, "(" + cut.string() + ") is not a valid gzip stream: unexpected end of file"));
}

TEST_CASE("data: read_idx names a missing file and the Debian package") {
  TempDir dir("missing");
  fs::path p = dir.path / "train-images-idx3-ubyte.gz";
  std::string msg = error_message<IOError>([&] { read_idx(p); });
  CHECK(contains(msg, p.string()));
  CHECK(contains(msg, "No such file or directory"));
  CHECK(contains(msg, "apt-get install dataset-fashion-mnist"));
  CHECK(contains(error_message<IOError>([&] { read_idx(dir.path); }), "Is a directory"));
  CHECK_THROWS_AS(load_fashion_mnist(dir.path, "train"), IOError);
}

TEST_CASE("data: load_fashion_mnist scales images, keeps labels and checks the pair") {
  TempDir dir("fmnist");
  // Three 2x2 "images" with known bytes; the training split is gzipped, the test split plain.
  std::vector<std::uint8_t> pixels{0, 51, 102, 255, 1, 2, 3, 4, 5, 6, 7, 8};
  write_file(dir.path / "train-images-idx3-ubyte.gz", concat(idx_header(8, {3, 2, 2}), pixels), true);
  write_file(dir.path / "train-labels-idx1-ubyte.gz", concat(idx_header(8, {3}), {9, 0, 3}), true);
  write_file(dir.path / "t10k-images-idx3-ubyte", concat(idx_header(8, {1, 2, 2}), {255, 0, 0, 255}), false);
  write_file(dir.path / "t10k-labels-idx1-ubyte", concat(idx_header(8, {1}), {4}), false);

  ImageClassification train = load_fashion_mnist(dir.path, "train");
  CHECK(train.images.shape() == Shape{3, 4});
  CHECK(train.images.dtype() == DType::f32);
  std::vector<float> x = train.images.to_vector<float>();
  CHECK(x[0] == 0.0f);
  CHECK(x[1] == doctest::Approx(0.2f));
  CHECK(x[3] == 1.0f);
  CHECK(x[11] == doctest::Approx(8.0f / 255.0f));
  CHECK(train.labels.dtype() == DType::i32);
  CHECK(train.labels.to_vector<std::int32_t>() == std::vector<std::int32_t>{9, 0, 3});
  ImageClassification nhwc = load_fashion_mnist(dir.path, "train", {.flatten = false});
  CHECK(nhwc.images.shape() == Shape{3, 2, 2, 1});
  CHECK(nhwc.images.to_vector<float>() == x);
  CHECK(load_fashion_mnist(dir.path, "test").labels.to_vector<std::int32_t>() == std::vector<std::int32_t>{4});
  // u8 images keep the bytes as stored; converting them later gives the f32 images exactly.
  ImageClassification bytes = load_fashion_mnist(dir.path, "train", {.flatten = false, .dtype = DType::u8});
  CHECK(bytes.images.aval() == Aval{DType::u8, Shape{3, 2, 2, 1}});
  CHECK(bytes.images.to_vector<std::uint8_t>() == pixels);
  CHECK((bytes.images.astype(DType::f32) / 255.0f).to_vector<float>() == x);
  CHECK_THROWS_AS(load_fashion_mnist(dir.path, "train", {.dtype = DType::f16}), ValueError);

  CHECK_THROWS_AS(load_fashion_mnist(dir.path, "valid"), ValueError);
  write_file(dir.path / "t10k-labels-idx1-ubyte", concat(idx_header(8, {2}), {4, 4}), false);
  std::string msg = error_message<FormatError>([&] { load_fashion_mnist(dir.path, "test"); });
  CHECK(contains(msg, "have shape [1,2,2] but labels"));
  CHECK(contains(msg, "have shape [2]"));
  write_file(dir.path / "t10k-labels-idx1-ubyte", concat(idx_header(8, {1}), {10}), false);
  CHECK(contains(error_message<FormatError>([&] { load_fashion_mnist(dir.path, "test"); }), "hold 10 at index 0"));
}

TEST_CASE("data: Fashion-MNIST from Debian's dataset-fashion-mnist" * doctest::skip(!fashion_mnist_present())) {
  ImageClassification train = load_fashion_mnist("train");
  ImageClassification test = load_fashion_mnist("test", {.flatten = false});
  CHECK(train.images.shape() == Shape{60000, 784});
  CHECK(test.images.shape() == Shape{10000, 28, 28, 1});
  std::vector<std::int32_t> y = train.labels.to_vector<std::int32_t>();
  // The first labels of each split as Python's gzip module reads them from the same files.
  CHECK(std::vector<std::int32_t>(y.begin(), y.begin() + 10) == std::vector<std::int32_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5});
  std::vector<std::int32_t> yt = test.labels.to_vector<std::int32_t>();
  CHECK(std::vector<std::int32_t>(yt.begin(), yt.begin() + 10) == std::vector<std::int32_t>{9, 2, 1, 1, 6, 1, 4, 6, 5, 7});
  std::vector<int> counts(11);
  for (std::int32_t l : y) ++counts[static_cast<std::size_t>(l >= 0 && l <= 9 ? l : 10)];
  CHECK(counts == std::vector<int>{6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 6000, 0});  // balanced, 0..9
  const float* px = train.images.data<float>();
  double first_image = 0;
  for (int i = 0; i < 784; ++i) first_image += px[i];
  CHECK(first_image * 255.0 == doctest::Approx(76247.0));  // its byte sum, also from Python's gzip
  CHECK(*std::max_element(px, px + 60000 * 784) == 1.0f);
  CHECK(*std::min_element(px, px + 60000 * 784) == 0.0f);
}

TEST_CASE("data: batches cut rows in order and keep the last partial batch") {
  Example d = counting_data(10);
  CHECK(num_batches(10, 4) == 3);
  CHECK(num_batches(10, 4, true) == 2);
  CHECK(num_batches(8, 4) == 2);
  CHECK(num_batches(60000, std::numeric_limits<std::int64_t>::max()) == 1);  // no overflow in the rounding
  CHECK(num_batches(0, 4) == 0);
  CHECK_THROWS_AS(num_batches(10, 0), ValueError);
  CHECK_THROWS_AS(num_batches(-1, 4), ValueError);

  auto bs = batches(d, 4);
  REQUIRE(bs.size() == 3);
  std::vector<std::int64_t> sizes;
  std::vector<std::int32_t> seen;
  for (const Example& b : bs) {
    sizes.push_back(b.x.shape(0));
    CHECK(b.x.shape(1) == 3);
    CHECK(b.y.shape(0) == b.x.shape(0));
    CHECK(b.tag == 7);
    for (std::int32_t v : b.y.to_vector<std::int32_t>()) seen.push_back(v);
  }
  CHECK(sizes == std::vector<std::int64_t>{4, 4, 2});
  CHECK(seen == std::vector<std::int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(bs[2].x.to_vector<float>() == std::vector<float>{80, 81, 82, 90, 91, 92});
  CHECK_THROWS_AS(bs[3], ValueError);

  auto dropped = batches(d, 4, std::nullopt, {.drop_last = true});
  CHECK(dropped.size() == 2);
  int count = 0;
  for (const Example& b : dropped) count += b.x.shape(0) == 4;
  CHECK(count == 2);
  CHECK(batches(d, 20).size() == 1);
  CHECK(batches(d, 20, std::nullopt, {.drop_last = true}).size() == 0);
  // A lone Array is a pytree too.
  CHECK(batches(d.y, 3)[3].to_vector<std::int32_t>() == std::vector<std::int32_t>{9});
}

TEST_CASE("data: shuffled batches follow random::permutation's order") {
  Example d = counting_data(103);
  Array key = random::fold_in(random::key(0), 3);  // epoch 3 of data key 0
  std::vector<std::int32_t> perm = random::permutation(key, 103).to_vector<std::int32_t>();
  auto bs = batches(d, 16, key);
  CHECK(bs.size() == 7);
  std::vector<std::int32_t> seen;
  std::vector<float> rows;
  for (const Example& b : bs) {
    for (std::int32_t v : b.y.to_vector<std::int32_t>()) seen.push_back(v);
    for (float v : b.x.to_vector<float>()) rows.push_back(v);
  }
  CHECK(seen == perm);  // the labels come in the permutation's order...
  std::vector<float> want_rows;  // ...and each x row travels with its label
  for (std::int32_t i : perm)
    for (int j = 0; j < 3; ++j) want_rows.push_back(static_cast<float>(i * 10 + j));
  CHECK(rows == want_rows);
  CHECK(std::set<std::int32_t>(seen.begin(), seen.end()).size() == 103);
  std::vector<std::int32_t> identity(103);
  std::iota(identity.begin(), identity.end(), 0);
  CHECK(seen != identity);

  auto again = batches(d, 16, random::fold_in(random::key(0), 3));
  CHECK(again[4].y.to_vector<std::int32_t>() == bs[4].y.to_vector<std::int32_t>());
  auto next_epoch = batches(d, 16, random::fold_in(random::key(0), 4));
  CHECK(next_epoch.order() != bs.order());
}

TEST_CASE("data: pad_batch pads the last batch with zero rows and a mask") {
  Example d = counting_data(10);
  Example last = batches(d, 4)[2];
  PaddedBatch<Example> p = pad_batch(last, 4);
  CHECK(p.batch.x.shape() == Shape{4, 3});
  CHECK(p.batch.x.to_vector<float>() == std::vector<float>{80, 81, 82, 90, 91, 92, 0, 0, 0, 0, 0, 0});
  CHECK(p.batch.y.to_vector<std::int32_t>() == std::vector<std::int32_t>{8, 9, 0, 0});
  CHECK(p.mask.dtype() == DType::f32);
  CHECK(p.mask.to_vector<float>() == std::vector<float>{1, 1, 0, 0});
  CHECK(p.batch.tag == 7);

  auto [full, ones_mask] = pad_batch(batches(d, 4)[0], 4);
  CHECK(full.y.to_vector<std::int32_t>() == std::vector<std::int32_t>{0, 1, 2, 3});
  CHECK(ones_mask.to_vector<float>() == std::vector<float>{1, 1, 1, 1});
  CHECK(contains(error_message<ValueError>([&] { pad_batch(d, 4); }), "has 10 rows, more than batch_size 4"));
  CHECK_THROWS_AS(pad_batch(last, 0), ValueError);
}

TEST_CASE("data: batches name both key paths when leading axes differ") {
  ImageClassification bad{zeros({5, 3}), zeros({4})};
  std::string msg = error_message<ShapeError>([&] { batches(bad, 2); });
  CAPTURE(msg);
  CHECK(contains(msg, "labels"));
  CHECK(contains(msg, "f32[4]"));
  CHECK(contains(msg, "images"));
  CHECK(contains(msg, "f32[5,3]"));
  CHECK_THROWS_AS(pad_batch(bad, 8), ShapeError);
  CHECK(contains(error_message<ShapeError>([&] { batches(ImageClassification{zeros({5, 3}), scalar(1.0f)}, 2); }),
                 "no leading axis"));
  CHECK_THROWS_AS(batches(ImageClassification{zeros({5, 3}), zeros({5})}, 0), ValueError);
  CHECK(contains(error_message<ValueError>([&] { batches(std::vector<Array>{}, 2); }), "no Array leaves"));
}

TEST_CASE("data: Prefetcher yields a source's elements in order") {
  int i = 0;
  Prefetcher<int> pf([&]() -> std::optional<int> { return i < 100 ? std::optional<int>(i++) : std::nullopt; }, 3);
  std::vector<int> got;
  for (int v : pf) got.push_back(v);
  std::vector<int> want(100);
  std::iota(want.begin(), want.end(), 0);
  CHECK(got == want);
  CHECK(pf.next() == std::nullopt);  // the end stays the end

  Prefetcher from_vector(std::vector<std::string>{"a", "b", "c"}, 1);
  std::string joined;
  for (const std::string& s : from_vector) joined += s;
  CHECK(joined == "abc");

  Example d = counting_data(10);
  Prefetcher prefetched(batches(d, 4, random::key(2)));
  auto direct = batches(d, 4, random::key(2));
  std::int64_t k = 0;
  for (Example& b : prefetched) CHECK(b.y.to_vector<std::int32_t>() == direct[k++].y.to_vector<std::int32_t>());
  CHECK(k == 3);
  CHECK_THROWS_AS(Prefetcher<int>([] { return std::optional<int>(); }, 0), ValueError);
}

TEST_CASE("data: Prefetcher re-raises the producer's error where that element would be") {
  int i = 0;
  Prefetcher<int> pf([&]() -> std::optional<int> {
    if (i == 3) throw std::runtime_error("disk gone at element 3");
    return i++;
  });
  std::vector<int> got;
  std::string msg;
  try {
    for (int v : pf) got.push_back(v);
  } catch (const std::runtime_error& e) {
    msg = e.what();
  }
  CHECK(got == std::vector<int>{0, 1, 2});
  CHECK(msg == "disk gone at element 3");
  CHECK_THROWS_WITH(pf.next(), "disk gone at element 3");  // and on every later call
}

TEST_CASE("data: destroying a Prefetcher whose producer waits on a full queue does not deadlock") {
  std::atomic<int> produced{0};
  auto source = [&]() -> std::optional<int> { return produced++; };  // endless
  {
    Prefetcher<int> pf(source, 2);
    CHECK(pf.next() == 0);
    // Queue full (2) plus one in the producer's hands: it now waits for room.
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (produced.load() < 4 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(produced.load() == 4);  // bounded: it does not run ahead of the queue
  }
  { Prefetcher<int> never_consumed(source, 1); }  // destroyed at once, possibly before producing
  CHECK(produced.load() >= 4);
}
