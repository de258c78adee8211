//! @file cache.hpp  The response cache: tensor names to small ids, recorded in the same order on every rank.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tutti/core/error.hpp"
#include "tutti/fusion/negotiation/messages.hpp"

namespace tutti::fusion {

class tensor_cache {
 public:
  struct entry {
    std::string name;
    tensor_meta meta;
    bool live = false;  //!< false once the name was given a new id (its meta changed)
  };

  //! Records an assignment (every rank applies the same ones in the same order).
  void assign(const assignment& a) {
    if (a.id != entries_.size())
      throw transport_error("fusion negotiation: tensor id " + std::to_string(a.id) + " assigned out of order (expected " +
                            std::to_string(entries_.size()) + ")");
    if (auto it = ids_.find(a.name); it != ids_.end()) entries_[it->second].live = false;
    entries_.push_back({a.name, a.meta, true});
    ids_[a.name] = a.id;
  }
  //! The id of `name` if it has one with exactly this meta.
  [[nodiscard]] std::optional<std::uint32_t> find(const std::string& name, const tensor_meta& meta) const {
    auto it = ids_.find(name);
    if (it == ids_.end() || !(entries_[it->second].meta == meta)) return std::nullopt;
    return it->second;
  }
  [[nodiscard]] const entry& at(std::uint32_t id) const {
    if (id >= entries_.size() || !entries_[id].live)
      throw transport_error("fusion negotiation: unknown tensor id " + std::to_string(id));
    return entries_[id];
  }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] std::size_t live_names() const noexcept { return ids_.size(); }

 private:
  std::vector<entry> entries_;
  std::unordered_map<std::string, std::uint32_t> ids_;
};

}  // namespace tutti::fusion
