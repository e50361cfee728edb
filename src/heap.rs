//! How the process asks the system allocator for memory, set once at start.
//!
//! A first find_symbol lookup compiles a query on one thread while others read and parse
//! files, and every one of them grows its heap many times. glibc grows a heap by what the
//! request needs plus 128 KB; while several threads run, the system calls behind each
//! small growth make the kernel interrupt the other cores to flush their TLBs, which on a
//! virtual machine costs more than the allocation itself (a quarter of a first lookup's
//! CPU on C#, in `perf`). Growing by 16 MB at a time took a first lookup in a fresh
//! process from 24 to 16 ms on the C# corpus, 30 to 21 ms on TypeScript and 67 to 55 ms
//! on googletest (`MALLOC_TOP_PAD_` beside the default, docs/performance.md). Untouched
//! padding is not resident; after the symbols bench's lookups on Boost the peak resident
//! size went from 13.5 to 18.6 MB.
//!
//! Only glibc is tuned: musl (the static release) and macOS have their own allocators,
//! with no such knob.

/// How much more than a request glibc asks the kernel for when a heap grows.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TOP_PAD: libc::c_int = 16 << 20;

/// Applies the settings. Call it first thing in `main`, before any thread starts: the
/// padding applies to heaps grown after it.
pub fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes glibc's allocator parameters, under its own lock.
    unsafe {
        libc::mallopt(libc::M_TOP_PAD, TOP_PAD);
    }
}
