//! @file timeline.hpp  TUTTI_TIMELINE=path.json: Chrome-trace events of the fusion engine.
//!
//! The file is the JSON array form of the Trace Event Format, which chrome://tracing and Perfetto
//! (ui.perfetto.dev) load: one "process" per rank, one "thread" (track) per tensor name plus one
//! for the engine's negotiation rounds and fused collectives. Events are written as they end, so a
//! run that dies still leaves a loadable file (both viewers accept an array without its closing
//! bracket). Rank r writes path.json with ".rank<r>" inserted before the extension when the job has
//! more than one rank, so ranks never share a file; merge them by loading several files at once.
#pragma once
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "tutti/core/config.hpp"
#include "tutti/core/error.hpp"
#include "tutti/core/json_text.hpp"

namespace tutti::fusion {

class timeline {
 public:
  using clock = std::chrono::steady_clock;

  //! The timeline TUTTI_TIMELINE asks for, or none.
  [[nodiscard]] static std::unique_ptr<timeline> from_env(int rank, int world) {
    auto path = config::raw("TUTTI_TIMELINE");
    if (!path) return nullptr;
    return std::make_unique<timeline>(path_for(*path, rank, world), rank);
  }

  //! "t.json" -> "t.rank3.json" when there are several ranks.
  [[nodiscard]] static std::string path_for(const std::string& path, int rank, int world) {
    if (world <= 1) return path;
    const auto dot = path.rfind('.'), slash = path.rfind('/');
    const std::string suffix = ".rank" + std::to_string(rank);
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + suffix;
    return path.substr(0, dot) + suffix + path.substr(dot);
  }

  timeline(const std::string& path, int rank) : rank_(rank) {
    file_ = std::fopen(path.c_str(), "w");
    if (!file_) throw invalid_argument("TUTTI_TIMELINE=" + path + ": cannot open it for writing");
    std::fputs("[\n", file_);
    std::fprintf(file_, R"({"name":"process_name","ph":"M","pid":%d,"args":{"name":"rank %d"}})", rank_, rank_);
  }
  ~timeline() {
    std::fputs("\n]\n", file_);
    std::fclose(file_);
  }
  timeline(const timeline&) = delete;
  timeline& operator=(const timeline&) = delete;

  //! A span [start, end) named `name` on `track`; `args` is a JSON object's body or empty.
  void span(std::string_view track, std::string_view name, clock::time_point start, clock::time_point end,
            std::string_view args = {}) {
    std::lock_guard lock(mutex_);
    const int tid = track_id(track);
    std::fprintf(file_, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f",
                 escaped(name).c_str(), rank_, tid, micros(start), micros(end) - micros(start));
    finish(args);
  }

  //! A point event on `track`.
  void instant(std::string_view track, std::string_view name, clock::time_point at, std::string_view args = {}) {
    std::lock_guard lock(mutex_);
    const int tid = track_id(track);
    std::fprintf(file_, ",\n{\"name\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f",
                 escaped(name).c_str(), rank_, tid, micros(at));
    finish(args);
  }

  void flush() {
    std::lock_guard lock(mutex_);
    std::fflush(file_);
  }

  //! A JSON string's body (core/json_text.hpp).
  [[nodiscard]] static std::string escaped(std::string_view s) { return json_escaped(s); }

 private:
  [[nodiscard]] double micros(clock::time_point t) const {
    // steady_clock's epoch (boot, on Linux) is shared by the processes of one host, so ranks' files
    // line up when loaded together.
    return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
  }

  void finish(std::string_view args) {
    if (!args.empty()) std::fprintf(file_, ",\"args\":{%.*s}", static_cast<int>(args.size()), args.data());
    std::fputc('}', file_);
  }

  //! Track ids in order of first use; each gets its name as thread metadata, sorted in that order.
  int track_id(std::string_view track) {
    auto it = tracks_.find(std::string(track));
    if (it != tracks_.end()) return it->second;
    const int id = static_cast<int>(tracks_.size()) + 1;
    tracks_.emplace(std::string(track), id);
    std::fprintf(file_, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                 rank_, id, escaped(track).c_str());
    std::fprintf(file_, ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
                 rank_, id, id);
    return id;
  }

  int rank_;
  std::FILE* file_ = nullptr;
  std::mutex mutex_;
  std::unordered_map<std::string, int> tracks_;
};

}  // namespace tutti::fusion
