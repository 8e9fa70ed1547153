//! Calling a loaded kernel: every argument is one 64-bit integer slot (buffer pointers, then the
//! int vars), exactly how tinygrad's `CPUProgram` calls kernels through an unprototyped ctypes call.
//!
//! The function pointer is transmuted to an `extern "C" fn(u64, …, u64)` of the kernel's arity,
//! selected by a macro-generated chain over 0..=63 arguments.

/// Most arguments a kernel may take (tinygrad asserts 63).
pub const MAX_ARGS: usize = 63;

/// Address of a kernel's entry point inside a read-execute mapping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryPoint(pub(crate) *const u8);

// SAFETY: an entry point is just a code address inside a mapping that outlives every use
// (the owning `LoadedKernel` is kept alive by the queue that records it).
unsafe impl Send for EntryPoint {}
// SAFETY: see `Send`; the address itself is immutable.
unsafe impl Sync for EntryPoint {}

macro_rules! u64_for {
    ($idx:tt) => {
        u64
    };
}

macro_rules! call_by_arity {
    ($f:ident, $args:ident; [$($idx:tt)*];) => {{
        let _ = $f;
        false
    }};
    ($f:ident, $args:ident; [$($idx:tt)*]; $next:tt $($rest:tt)*) => {
        if $args.len() == $next {
            // SAFETY: upheld by `call`'s contract: `$f` is a C function taking `$next` integer
            // or pointer arguments, each fitting one 64-bit slot.
            let func: extern "C" fn($(u64_for!($idx)),*) = unsafe { core::mem::transmute($f.0) };
            func($($args[$idx]),*);
            true
        } else {
            call_by_arity!($f, $args; [$($idx)* $next]; $($rest)*)
        }
    };
}

/// Call `entry` with `args` (one 64-bit slot each). Returns `false` (without calling) when there are
/// more than [`MAX_ARGS`] arguments.
///
/// # Safety
/// `entry` must be the entry of a loaded kernel whose C signature takes exactly `args.len()`
/// parameters, each a pointer or an integer of at most 64 bits (SysV x86-64 and Linux AAPCS64 pass
/// these in 64-bit registers / 8-byte stack slots, so a `u64` slot is ABI-compatible), and every
/// pointer argument must be valid for all the accesses the kernel performs.
pub unsafe fn call(entry: EntryPoint, args: &[u64]) -> bool {
    call_by_arity!(entry, args; [];
        0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31
        32 33 34 35 36 37 38 39 40 41 42 43 44 45 46 47 48 49 50 51 52 53 54 55 56 57 58 59 60 61 62 63)
}
