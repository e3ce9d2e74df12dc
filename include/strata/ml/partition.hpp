#pragma once
/// \file Splitting work across workers: a greedy balanced partition of weighted items (the MF
/// trainer's user blocks weighted by ratings, the LDA trainer's documents weighted by tokens).
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <span>
#include <vector>

namespace strata::ml {

/// Greedy longest-processing-time partition of items with the given weights into `parts` parts:
/// items in decreasing order of weight (ties: lower index first), each to the part with the least
/// weight so far (ties: lower part id), so no worker waits on a much heavier one. Returns the
/// part of each item. Deterministic: the same weights give the same partition.
inline std::vector<std::uint32_t> balanced_partition(std::span<const std::uint64_t> weights, std::uint32_t parts) {
  std::vector<std::uint32_t> owner(weights.size(), 0);
  if (parts == 0) return owner;
  std::vector<std::uint64_t> load(parts, 0);
  std::vector<std::uint32_t> order(weights.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](auto a, auto b) { return weights[a] > weights[b]; });
  for (std::uint32_t i : order) {
    const auto p = static_cast<std::uint32_t>(std::min_element(load.begin(), load.end()) - load.begin());
    owner[i] = p;
    load[p] += weights[i];
  }
  return owner;
}

/// The items of each part, in increasing item order, from a partition's owner list.
inline std::vector<std::vector<std::uint32_t>> partition_members(std::span<const std::uint32_t> owner, std::uint32_t parts) {
  std::vector<std::vector<std::uint32_t>> out(parts);
  for (std::uint32_t i = 0; i < owner.size(); ++i) out.at(owner[i]).push_back(i);
  return out;
}

}  // namespace strata::ml
