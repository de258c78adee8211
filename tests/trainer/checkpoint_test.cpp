// Checkpoint files: a round trip keeps every byte; a file cut at any offset, or with any byte
// flipped, is refused with a sentence saying why; the newest whole checkpoint of a directory wins
// over damaged newer ones (which are listed); leftovers of interrupted commits are ignored; a
// commit that cannot happen says where and why and leaves the previous file alone.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <tutti/core/error.hpp>
#include <tutti/trainer/checkpoint.hpp>

using namespace tutti;
using namespace tutti::trainer;
namespace fs = std::filesystem;

namespace {

//! A fresh directory under the system's temp dir, removed with everything in it at scope exit.
struct scratch_dir {
  fs::path path;
  explicit scratch_dir(const std::string& tag) {
    path = fs::temp_directory_path() / ("tutti-ckpt-" + tag + "-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~scratch_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::vector<std::byte> read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> out(chars.size());
  for (std::size_t i = 0; i < chars.size(); ++i) out[i] = static_cast<std::byte>(chars[i]);
  return out;
}

void write_bytes(const fs::path& p, std::span<const std::byte> bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::byte> pattern(std::size_t n, unsigned seed) {
  std::vector<std::byte> v(n);
  std::uint32_t x = seed * 2654435761u + 1;
  for (auto& b : v) {
    x = x * 1664525u + 1013904223u;
    b = static_cast<std::byte>(x >> 24);
  }
  return v;
}

std::string as_string(std::span<const std::byte> bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

//! Three sections, one of them empty, one larger than the writer's 1 MiB buffer.
checkpoint_writer sample_writer() {
  checkpoint_writer w;
  w.add("meta", std::string("120 7 64 3 1"));
  const auto weights = pattern(1000, 1);
  w.add("param/fc1.weight", std::span<const std::byte>(weights));
  w.add("empty", std::span<const std::byte>());
  const auto big = pattern((std::size_t{1} << 20) + 333, 2);
  w.add("big", std::span<const std::byte>(big));
  return w;
}

std::string refusal(const fs::path& p) {
  try {
    (void)checkpoint_reader::open(p);
  } catch (const invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("checkpoint: a round trip keeps every section, byte for byte, in order") {
  scratch_dir dir("roundtrip");
  const auto path = checkpoint_path(dir.path, 120);
  CHECK(path.filename() == "ckpt-000000000120");
  sample_writer().commit(path);

  auto r = checkpoint_reader::open(path);
  CHECK(r.names() == std::vector<std::string>{"meta", "param/fc1.weight", "empty", "big"});
  CHECK(as_string(r.section("meta")) == "120 7 64 3 1");
  const auto weights = pattern(1000, 1);
  CHECK(std::equal(weights.begin(), weights.end(), r.section("param/fc1.weight").begin(),
                   r.section("param/fc1.weight").end()));
  CHECK(r.section("empty").empty());
  CHECK(r.has("big"));
  CHECK(r.section("big").size() == (std::size_t{1} << 20) + 333);
  CHECK(r.section("big")[777] == pattern((std::size_t{1} << 20) + 333, 2)[777]);
  CHECK_FALSE(r.has("optimizer"));
  CHECK_THROWS_WITH_AS((void)r.section("optimizer"),
                       doctest::Contains("has no section 'optimizer' (it has: meta, param/fc1.weight, empty, big)"),
                       invalid_argument);

  // A reader moved elsewhere still points at its bytes.
  auto moved = std::move(r);
  CHECK(as_string(moved.section("meta")) == "120 7 64 3 1");

  // No leftovers from the commit.
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir.path)) files += e.is_regular_file();
  CHECK(files == 1);
}

TEST_CASE("checkpoint: a checkpoint of no sections, and the writer's refusals") {
  scratch_dir dir("empty");
  checkpoint_writer().commit(dir.path / "none");
  CHECK(checkpoint_reader::open(dir.path / "none").names().empty());

  checkpoint_writer w;
  w.add("a", std::string("1"));
  CHECK_THROWS_WITH_AS(w.add("a", std::string("2")), doctest::Contains("\"a\"") , invalid_argument);
  CHECK_THROWS_AS(w.add("", std::string("2")), invalid_argument);
  CHECK_THROWS_WITH_AS((void)checkpoint_path(dir.path, 1000000000000), doctest::Contains("12 digits"), invalid_argument);
}

TEST_CASE("checkpoint: a file cut at any offset is refused, saying where it ends") {
  scratch_dir dir("truncated");
  const auto path = dir.path / "ckpt-000000000120";
  checkpoint_writer w;
  w.add("meta", std::string("120"));
  const auto weights = pattern(4096, 3);
  w.add("weights", std::span<const std::byte>(weights));
  w.commit(path);
  const auto whole = read_bytes(path);
  // magic 8, version 4, count 4; "meta": 4 + 4 + 8 + 3; "weights": 4 + 7 + 8, then its 4096 bytes.
  const std::size_t weights_start = 16 + 19 + 19;
  REQUIRE(whole.size() == weights_start + 4096 + 32);

  const auto cut = dir.path / "ckpt-000000000121";
  for (std::size_t size = 0; size < whole.size(); ++size) {
    CAPTURE(size);
    write_bytes(cut, std::span<const std::byte>(whole).first(size));
    const std::string why = refusal(cut);
    CHECK(why.starts_with("checkpoint " + cut.string() + ": truncated ("));
  }
  write_bytes(cut, std::span<const std::byte>(whole).first(weights_start + 812));
  CHECK(refusal(cut) == "checkpoint " + cut.string() + ": truncated (ends at byte 812 of a section announcing 4096)");
  write_bytes(cut, std::span<const std::byte>(whole).first(0));
  CHECK(refusal(cut) == "checkpoint " + cut.string() + ": truncated (empty file)");
  write_bytes(cut, std::span<const std::byte>(whole).first(5));
  CHECK(refusal(cut) == "checkpoint " + cut.string() + ": truncated (ends at byte 5 of the 8-byte magic)");
  write_bytes(cut, std::span<const std::byte>(whole).first(whole.size() - 10));
  CHECK(refusal(cut) == "checkpoint " + cut.string() + ": truncated (ends at byte 22 of the 32-byte checksum)");
}

TEST_CASE("checkpoint: a flipped byte anywhere is refused") {
  scratch_dir dir("flipped");
  const auto path = dir.path / "ckpt-000000000001";
  checkpoint_writer w;
  w.add("meta", std::string("1 2 3"));
  const auto weights = pattern(300, 4);
  w.add("weights", std::span<const std::byte>(weights));
  w.commit(path);
  const auto whole = read_bytes(path);

  const auto bad = dir.path / "bad";
  for (std::size_t at = 0; at < whole.size(); ++at) {
    for (const auto mask : {std::byte{0x01}, std::byte{0x80}}) {
      CAPTURE(at);
      auto copy = whole;
      copy[at] ^= mask;
      write_bytes(bad, copy);
      CHECK(refusal(bad).starts_with("checkpoint " + bad.string() + ": "));
    }
  }
  // In a section's bytes or in the digest it is the checksum that catches it.
  for (const std::size_t at : {whole.size() - 100, whole.size() - 1}) {
    auto copy = whole;
    copy[at] ^= std::byte{0x10};
    write_bytes(bad, copy);
    CHECK(refusal(bad) == "checkpoint " + bad.string() + ": checksum mismatch (corrupt)");
  }
  auto copy = whole;
  copy[0] = std::byte{'X'};
  write_bytes(bad, copy);
  CHECK(refusal(bad) == "checkpoint " + bad.string() + ": not a tutti checkpoint");
  copy = whole;
  copy[8] = std::byte{7};
  write_bytes(bad, copy);
  CHECK(refusal(bad) == "checkpoint " + bad.string() + ": format version 7, this build reads 1");
  copy = whole;
  copy.push_back(std::byte{0});
  write_bytes(bad, copy);
  CHECK(refusal(bad).find("(corrupt)") != std::string::npos);

  CHECK_THROWS_WITH_AS((void)checkpoint_reader::open(dir.path / "missing"),
                       doctest::Contains("missing: cannot open: No such file or directory"), error);
}

TEST_CASE("checkpoint: latest_checkpoint falls back past damaged newer files and ignores leftovers") {
  scratch_dir dir("latest");
  CHECK_FALSE(latest_checkpoint(dir.path).has_value());
  CHECK_FALSE(latest_checkpoint(dir.path / "absent").has_value());

  for (const std::size_t b : {10, 20, 30}) {
    checkpoint_writer w;
    w.add("meta", std::to_string(b));
    w.commit(checkpoint_path(dir.path, b));
  }
  auto choice = latest_checkpoint(dir.path);
  REQUIRE(choice);
  CHECK(choice->batches == 30);
  CHECK(choice->refused.empty());

  // The newest is corrupted, and an interrupted commit of a still newer one left its temporary
  // file behind: batch 20's wins, and only the corrupt file is reported.
  auto bytes = read_bytes(checkpoint_path(dir.path, 30));
  bytes[bytes.size() / 2] ^= std::byte{0x40};
  write_bytes(checkpoint_path(dir.path, 30), bytes);
  write_bytes(checkpoint_path(dir.path, 40).string() + ".tmp.12345", std::span<const std::byte>(bytes).first(7));
  write_bytes(dir.path / "notes.txt", bytes);
  choice = latest_checkpoint(dir.path);
  REQUIRE(choice);
  CHECK(choice->batches == 20);
  CHECK(choice->path == checkpoint_path(dir.path, 20));
  REQUIRE(choice->refused.size() == 1);
  CHECK(choice->refused[0] == "checkpoint " + checkpoint_path(dir.path, 30).string() + ": checksum mismatch (corrupt)");
  CHECK(as_string(checkpoint_reader::open(choice->path).section("meta")) == "20");

  // Pruning keeps the newest valid ones, deletes what is older, leaves the damaged newer file and
  // the stranger files alone.
  prune_checkpoints(dir.path, 1);
  CHECK(fs::exists(checkpoint_path(dir.path, 30)));
  CHECK(fs::exists(checkpoint_path(dir.path, 20)));
  CHECK_FALSE(fs::exists(checkpoint_path(dir.path, 10)));
  CHECK(fs::exists(dir.path / "notes.txt"));
  CHECK_THROWS_AS(prune_checkpoints(dir.path, 0), invalid_argument);

  // Every checkpoint damaged: refused as a whole rather than "no checkpoint".
  write_bytes(checkpoint_path(dir.path, 20), std::span<const std::byte>(bytes).first(20));
  CHECK_THROWS_WITH_AS((void)latest_checkpoint(dir.path), doctest::Contains("none of its 2 checkpoints opens cleanly"),
                       invalid_argument);
}

TEST_CASE("checkpoint: prune_checkpoints keeps the newest `keep`") {
  scratch_dir dir("prune");
  for (std::size_t b = 1; b <= 5; ++b) {
    checkpoint_writer w;
    w.add("meta", std::to_string(b));
    w.commit(checkpoint_path(dir.path, b));
  }
  prune_checkpoints(dir.path, 2);
  for (std::size_t b = 1; b <= 5; ++b) CHECK(fs::exists(checkpoint_path(dir.path, b)) == (b >= 4));
}

TEST_CASE("checkpoint: a commit that cannot happen names the path and the reason, and keeps the old file") {
  scratch_dir dir("commit");
  const auto missing = dir.path / "no" / "such" / "dir" / "ckpt-000000000001";
  const std::string expected = "checkpoint " + missing.string() + ": cannot create " + missing.string() + ".tmp." +
                               std::to_string(::getpid()) + ": No such file or directory";
  CHECK_THROWS_WITH_AS(sample_writer().commit(missing), expected.c_str(), error);

  // Overwriting: the previous file stays until the new one is whole. A rename onto a directory
  // fails after the temporary file was written; the temporary is removed, the old file intact.
  const auto path = checkpoint_path(dir.path, 7);
  checkpoint_writer first;
  first.add("meta", std::string("first"));
  first.commit(path);
  checkpoint_writer second;
  second.add("meta", std::string("second"));
  second.commit(path);
  CHECK(as_string(checkpoint_reader::open(path).section("meta")) == "second");

  const auto blocked = dir.path / "blocked";
  fs::create_directories(blocked / "child");
  CHECK_THROWS_WITH_AS(first.commit(blocked), doctest::Contains("cannot rename"), error);
  CHECK(fs::is_directory(blocked / "child"));
  for (const auto& e : fs::directory_iterator(dir.path))
    CHECK(e.path().filename().string().find(".tmp.") == std::string::npos);
}

TEST_CASE("checkpoint: names are written and read back in one place (checkpoint_name.hpp)") {
  scratch_dir dir("names");
  CHECK(feedback_path(dir.path, 120, 3) == dir.path / "feedback-000000000120.rank3");
  CHECK_THROWS_WITH_AS((void)feedback_path(dir.path, 1000000000000, 0), doctest::Contains("12 digits"), invalid_argument);

  CHECK(detail::checkpoint_batches("ckpt-000000000120") == 120u);
  CHECK_FALSE(detail::checkpoint_batches("ckpt-000000000120.tmp.4711"));
  CHECK_FALSE(detail::checkpoint_batches("ckpt-00000000012x"));
  CHECK_FALSE(detail::checkpoint_batches("ckpt-120"));
  CHECK(detail::feedback_batches("feedback-000000000120.rank3", 3) == 120u);
  CHECK_FALSE(detail::feedback_batches("feedback-000000000120.rank3", 1));   // another rank's
  CHECK_FALSE(detail::feedback_batches("feedback-000000000120.rank31", 3));  // rank 31's, not 3's
  CHECK_FALSE(detail::feedback_batches("ckpt-000000000120", 3));

  // Listings: newest first, strangers and other ranks' files left out.
  for (const std::size_t b : {5u, 40u, 12u}) {
    write_bytes(checkpoint_path(dir.path, b), {});
    write_bytes(feedback_path(dir.path, b, 1), {});
    write_bytes(feedback_path(dir.path, b, 2), {});
  }
  write_bytes(dir.path / "ckpt-000000000099.tmp.4711", {});
  write_bytes(dir.path / "notes.txt", {});
  const auto ckpts = detail::list_checkpoints(dir.path);
  REQUIRE(ckpts.size() == 3);
  CHECK(ckpts[0] == std::pair<std::size_t, fs::path>{40, checkpoint_path(dir.path, 40)});
  CHECK(ckpts[2].first == 5);
  const auto mine = detail::list_feedback(dir.path, 2);
  REQUIRE(mine.size() == 3);
  CHECK(mine[1] == std::pair<std::size_t, fs::path>{12, feedback_path(dir.path, 12, 2)});
}
