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
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace strata {

/// Blocks at least this large get huge pages.
inline constexpr std::size_t huge_page_allocator_threshold = std::size_t{256} << 10;

namespace detail {
/// True on a thread whose malloc heap advise_thread_heap_huge_pages marked for huge pages.
inline bool& thread_heap_advised() noexcept {
  thread_local bool advised = false;
  return advised;
}
/// glibc's M_MMAP_THRESHOLD as advise_thread_heap_huge_pages sets it: smaller blocks come from the heap.
inline constexpr std::size_t advised_mmap_threshold = std::size_t{32} << 20;
}  // namespace detail

/// A stateless allocator (every instance equal) for std::vector and friends.
///
/// On a thread whose heap already has huge pages (advise_thread_heap_huge_pages), a large block
/// comes from that heap like any other: packed with the thread's other blocks, it takes only the
/// huge pages its bytes need. Aligning each block to a page of its own would leave most of each
/// page unused (three 600 KiB arrays took three pages, not one), and a fresh page costs from 0.1
/// to several milliseconds on a VM whose host backs it on first touch.
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
    if (detail::thread_heap_advised() && bytes < detail::advised_mmap_threshold && alignof(T) <= alignof(std::max_align_t)) {
      void* p = std::malloc(bytes);  // from the advised heap (freed with std::free, as the aligned blocks)
      if (!p) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
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

/// Asks for transparent huge pages under the calling thread's malloc heap (glibc on Linux only;
/// elsewhere it does nothing and returns false). The runtime calls it on its threads when
/// `system_config::huge_page_heap` is set.
///
/// Why: a worker's rows, oplog, cache and message buffers are many small blocks from malloc, and
/// the first touch of each fresh 4 KiB heap page is a page fault (about 12 µs each on the 2-core
/// development VM). A trainer's first epoch grows the heaps by a few MiB: about a third of a short
/// MF run's time went to faults there. With 2 MiB pages the same growth costs a few faults.
///
/// What it does: the first call in the process sets glibc's M_TOP_PAD to 32 MiB (a heap grows in
/// steps large enough to hold whole huge pages), M_MMAP_THRESHOLD to 32 MiB (blocks up to that size
/// come from the heap, whose pages are kept and reused, instead of a fresh mapping each time) and
/// M_TRIM_THRESHOLD to 64 MiB (freed heap tops are kept); these are process-wide and stay. Then, if
/// the calling thread's allocations come from a thread heap (glibc maps those at multiples of
/// their 64 MiB maximum size; a probe block's chunk header says which heap it is from), that region
/// is marked MADV_HUGEPAGE. The main thread's heap (the program break) is left alone. Under a
/// sanitizer, whose malloc is not glibc's, the function does nothing and returns false. Advice
/// only: a kernel with transparent huge pages `never` keeps 4 KiB pages, and nothing changes but
/// the malloc settings.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define STRATA_DETAIL_FOREIGN_MALLOC 1  // a sanitizer replaces malloc: no glibc heaps to find
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define STRATA_DETAIL_FOREIGN_MALLOC 1
#endif
#endif
inline bool advise_thread_heap_huge_pages() noexcept {
#if defined(__linux__) && defined(__GLIBC__) && defined(MADV_HUGEPAGE) && !defined(STRATA_DETAIL_FOREIGN_MALLOC)
  static std::once_flag once;
  std::call_once(once, [] {
    (void)::mallopt(M_TOP_PAD, 32 << 20);
    (void)::mallopt(M_MMAP_THRESHOLD, static_cast<int>(detail::advised_mmap_threshold));
    (void)::mallopt(M_TRIM_THRESHOLD, 64 << 20);
  });
  // Which heap serves this thread: probe with a block the per-thread cache does not hold (glibc's
  // tcache keeps chunks up to 1032 bytes, in the *freeing* thread's cache whatever arena they came
  // from, so a small probe can return another thread's chunk). A 4 KiB chunk freed by any thread
  // goes back to its own arena's bins. Then ask the chunk itself: glibc marks chunks of a thread
  // heap with the NON_MAIN_ARENA bit (4) of the size word just below the block, which holds
  // wherever the main heap lies.
  void* probe = std::malloc(4096);
  if (!probe) return false;
  auto at = reinterpret_cast<std::uintptr_t>(probe);
  // An integer GCC cannot trace back to the block: the word below it is glibc's, not out of bounds,
  // and only the address (not the freed block) is used after the free.
  __asm__ volatile("" : "+r"(at));
  std::size_t size_word = 0;
  std::memcpy(&size_word, reinterpret_cast<const void*>(at - sizeof(std::size_t)), sizeof size_word);
  std::free(probe);
  constexpr std::size_t non_main_arena = 4;
  if ((size_word & non_main_arena) == 0) return false;  // the main heap
  constexpr std::uintptr_t heap_max = std::uintptr_t{2} * 4 * 1024 * 1024 * sizeof(long);  // glibc's HEAP_MAX_SIZE
  void* const heap = reinterpret_cast<void*>(at & ~(heap_max - 1));
  // The range may hold unmapped parts (ENOMEM): the mapped ones still take the advice.
  if (::madvise(heap, heap_max, MADV_HUGEPAGE) != 0 && errno != ENOMEM) return false;
  // The heap's first 2 MiB already has 4 KiB pages (glibc wrote its header there), and a region
  // with any small page keeps faulting page by page: collapse it into one huge page now (Linux
  // 6.1+; older kernels refuse, harmlessly).
  constexpr int collapse = 25;  // MADV_COLLAPSE, absent from older headers
  (void)::madvise(heap, std::size_t{2} << 20, collapse);
  detail::thread_heap_advised() = true;
  return true;
#else
  return false;
#endif
}

/// Asks for transparent huge pages under the whole 2 MiB pages inside [p, p + bytes) (advice
/// only; nothing on other systems). For a large array that is about to be filled: a vector's
/// reserved block is a fresh mapping of 4 KiB pages, each a page fault on first touch (about
/// 12 µs on the development VM: a 1.2 GB design read for Lasso took 300,000 faults, several
/// seconds), and with huge pages the same block takes a few hundred. Call it before the first
/// touch (after `reserve`, before `resize` or `push_back`): pages already touched stay small.
inline void advise_huge_pages(const void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t page = std::uintptr_t{2} << 20;
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t lo = (at + page - 1) / page * page, hi = (at + bytes) / page * page;
  if (bytes >= page && hi > lo) (void)::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#else
  (void)p, (void)bytes;
#endif
}

/// reserve(n) on a vector of trivially copyable values, then advise_huge_pages on the block.
template <class V>
void reserve_huge(V& v, std::size_t n) {
  v.reserve(n);
  advise_huge_pages(v.data(), v.capacity() * sizeof(typename V::value_type));
}

}  // namespace strata
