#pragma once
/// \file An allocator for large, long-lived working arrays (a trainer's local model copies) that
/// asks the kernel for transparent huge pages.
///
/// Why: a fresh 4 KiB page costs one page fault on first touch, and on virtual machines a fault
/// is expensive (about 12 µs per page measured on the 2-core development VM: zero-filling 4 MiB
/// took 12 ms, against 0.8 ms with huge pages). A trainer that sets up a few MiB of local copies per
/// worker pays that at the start of every run. Blocks of at least `huge_page_allocator_threshold`
/// bytes are aligned to 2 MiB and marked MADV_HUGEPAGE (Linux; the kernel may still decline, e.g.
/// with transparent huge pages set to `never`); smaller ones come from operator new as usual.
/// The price is up to 2 MiB of slack per large block.
#include <cstddef>
#include <cstdlib>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace strata {

/// Blocks at least this large get huge pages.
inline constexpr std::size_t huge_page_allocator_threshold = std::size_t{256} << 10;

/// A stateless allocator (every instance equal) for std::vector and friends.
template <class T>
struct huge_page_allocator {
  using value_type = T;
  static constexpr std::size_t page = std::size_t{2} << 20;

  huge_page_allocator() noexcept = default;
  template <class U>
  huge_page_allocator(const huge_page_allocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    const std::size_t bytes = n * sizeof(T);
    if (bytes < huge_page_allocator_threshold) return static_cast<T*>(::operator new(bytes, std::align_val_t{alignof(T)}));
    const std::size_t rounded = (bytes + page - 1) / page * page;
    void* p = std::aligned_alloc(page, rounded);
    if (!p) throw std::bad_alloc();
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    (void)::madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure leaves ordinary pages
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    if (n * sizeof(T) < huge_page_allocator_threshold) ::operator delete(p, std::align_val_t{alignof(T)});
    else std::free(p);
  }
  template <class U>
  bool operator==(const huge_page_allocator<U>&) const noexcept {
    return true;
  }
};

}  // namespace strata
