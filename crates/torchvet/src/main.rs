//! `torchvet`: the PyTorch expert, as one fast program.
use std::process::ExitCode;

/// mimalloc, as Ruff uses: the parser and the analyses allocate many small objects, and the
/// phase-1 trees stay alive until phase 2 (measured: about 20% less CPU than the system
/// allocator on the bench corpus).
#[global_allocator]
static GLOBAL: Allocator = Allocator;

/// mimalloc, called the way the system allocator is: `mi_malloc` for every layout whose
/// alignment mimalloc's blocks have anyway (at most 16 and at most the size), the aligned entry
/// points only for the rest. `mimalloc::MiMalloc` sends every request through
/// `mi_malloc_aligned`, whose fast path gives up on blocks over 1 KiB and then over-allocates
/// (measured on `ckpt scan` of 100 small checkpoints: 3.7% of all instructions).
struct Allocator;

/// The alignment every mimalloc block of at least this size has.
const MI_MIN_ALIGN: usize = 16;

#[inline(always)]
fn natural(align: usize, size: usize) -> bool {
    align <= MI_MIN_ALIGN && align <= size
}

// SAFETY: each method forwards to the mimalloc function of the same contract; the plain ones
// are used only where mimalloc's natural alignment satisfies the layout.
unsafe impl std::alloc::GlobalAlloc for Allocator {
    #[inline]
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys as mi;
        if natural(layout.align(), layout.size()) {
            unsafe { mi::mi_malloc(layout.size()).cast() }
        } else {
            unsafe { mi::mi_malloc_aligned(layout.size(), layout.align()).cast() }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys as mi;
        if natural(layout.align(), layout.size()) {
            unsafe { mi::mi_zalloc(layout.size()).cast() }
        } else {
            unsafe { mi::mi_zalloc_aligned(layout.size(), layout.align()).cast() }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        unsafe { libmimalloc_sys::mi_free(ptr.cast()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        use libmimalloc_sys as mi;
        if natural(layout.align(), new_size) {
            unsafe { mi::mi_realloc(ptr.cast(), new_size).cast() }
        } else {
            unsafe { mi::mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast() }
        }
    }
}

mod args;
mod cache;
mod commands;
mod printer;

/// A closed pipe (`torchvet ... | head`) ends the program quietly with success, whichever
/// subcommand was printing.
fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// `mi_option_purge_delay` in the mimalloc v3 `mi_option_e` enum of the vendored header
/// (libmimalloc-sys 0.1.49, pinned in Cargo.toml; `v3/include/mimalloc.h`).
const MI_OPTION_PURGE_DELAY: std::ffi::c_int = 15;

unsafe extern "C" {
    fn mi_option_set(option: std::ffi::c_int, value: std::ffi::c_long);
}

/// One-shot batch commands (`check`, `review`, `summary`, `project`) never give memory back to
/// the OS before they exit: mimalloc's default purges freed pages after a second, and the run
/// then faults the same (huge) pages in again, which the kernel zeroes each time. On the bench
/// corpus this was about a quarter of all CPU samples (`clear_page_erms`) and three times the
/// page faults of a run that never purges, at the same peak memory. The long-running servers
/// keep the default, so an idle editor server returns memory. `MIMALLOC_PURGE_DELAY` set by
/// the user wins.
fn batch_allocator_settings() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: sets a process-wide integer option of the allocator; any value is valid
        // (-1 = never purge) and it may be changed at any time.
        unsafe { mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
    }
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_none() {
        no_transparent_huge_pages();
    }
}

/// `PR_SET_THP_DISABLE` of `<linux/prctl.h>`.
#[cfg(target_os = "linux")]
const PR_SET_THP_DISABLE: std::ffi::c_int = 41;

#[cfg(target_os = "linux")]
unsafe extern "C" {
    fn prctl(option: std::ffi::c_int, ...) -> std::ffi::c_int;
}

/// Transparent huge pages off for the rest of the run. mimalloc asks for them
/// (`madvise(MADV_HUGEPAGE)`) on the arenas it reserves, and the kernel then zeroes a whole
/// 2 MiB page at the first touch of any byte of it; a batch run touches its heap sparsely and
/// once, so it pays for zeroing far more memory than it uses.
#[cfg(target_os = "linux")]
fn no_transparent_huge_pages() {
    // SAFETY: a process-wide flag read by the kernel at page-fault time; it has no effect on
    // memory already mapped in and cannot fail in a way that matters (huge pages stay on).
    unsafe {
        prctl(
            PR_SET_THP_DISABLE,
            1 as std::ffi::c_ulong,
            0 as std::ffi::c_ulong,
            0 as std::ffi::c_ulong,
            0 as std::ffi::c_ulong,
        );
    }
}

#[cfg(not(target_os = "linux"))]
fn no_transparent_huge_pages() {}

fn main() -> ExitCode {
    quiet_broken_pipe();
    let args = args::Cli::parse_args();
    if !matches!(
        args.command,
        args::Command::Server(_) | args::Command::Mcp(_)
    ) {
        batch_allocator_settings();
    }
    if let Some(n) = args.threads.or_else(|| {
        std::env::var("TORCHVET_THREADS")
            .ok()
            .and_then(|s| s.parse().ok())
    }) {
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global();
    }
    let code = match args.command {
        args::Command::Check(a) => commands::check::run(&a),
        args::Command::Rules(a) => commands::rule::list(&a),
        args::Command::Rule(a) => commands::rule::show(&a),
        args::Command::Ckpt(a) => u8::try_from(torchvet_checkpoint::cli::run(&a)).unwrap_or(2),
        args::Command::Review(a) => u8::try_from(torchvet_review::cli::run(&a)).unwrap_or(2),
        args::Command::Project(a) => u8::try_from(torchvet_project::cli::run(&a)).unwrap_or(2),
        args::Command::Summary(a) => u8::try_from(torchvet_summary::cli::run(&a)).unwrap_or(2),
        args::Command::Server(_) => commands::serve::lsp(),
        args::Command::Mcp(a) => commands::serve::mcp(&a),
    };
    ExitCode::from(code)
}
