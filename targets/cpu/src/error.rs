//! The error type of the host CPU backend.
use modelrt_hal::target::CpuArch;

/// Everything that can go wrong while loading or running tinygrad CPU kernels on the host.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum CpuError {
    /// The ELF object could not be parsed (truncated, bad offsets, bad tables).
    #[error("kernel object is malformed: {0}")]
    Malformed(String),
    /// The object is not a little-endian 64-bit relocatable ELF.
    #[error("kernel object is not a little-endian ELF64 relocatable object (ET_REL)")]
    NotRelocatable,
    /// The object was compiled for another machine than the one requested.
    #[error("kernel object is for ELF machine {found}, expected {expected} ({arch})", arch = expected_arch.name())]
    WrongMachine {
        found: u16,
        expected: u16,
        expected_arch: CpuArch,
    },
    /// The object's machine is neither x86_64 nor aarch64.
    #[error("kernel object is for unsupported ELF machine {0}")]
    UnsupportedMachine(u16),
    /// A relocation refers to a symbol that the object does not define.
    #[error("kernel references undefined symbol `{0}` (runtime library calls are not supported)")]
    UndefinedSymbol(String),
    /// A relocation refers to a symbol kind the loader does not support (COMMON, extended index, …).
    #[error("kernel symbol `{0}` has an unsupported section index")]
    UnsupportedSymbol(String),
    /// A relocation refers to a section that is not loaded (not SHF_ALLOC PROGBITS/NOBITS).
    #[error("kernel symbol `{0}` lives in a section that is not loaded")]
    SymbolNotLoaded(String),
    /// A relocation type this loader does not implement.
    #[error("unsupported {arch} relocation type {rtype} at offset {offset:#x}", arch = arch.name())]
    UnknownRelocation {
        arch: CpuArch,
        rtype: u32,
        offset: u64,
    },
    /// A relocation result does not fit its instruction/data field.
    #[error("relocation type {rtype} at offset {offset:#x} is out of range (value {value:#x})")]
    RelocationOutOfRange { rtype: u32, offset: u64, value: i64 },
    /// A relocation value violates the alignment its field requires.
    #[error("relocation type {rtype} at offset {offset:#x} has a misaligned value {value:#x}")]
    RelocationMisaligned { rtype: u32, offset: u64, value: i64 },
    /// A relocation patches bytes outside its target section.
    #[error("relocation at offset {offset:#x} lies outside its section")]
    RelocationOutsideSection { offset: u64 },
    /// REL (implicit addend) relocations are not produced by clang for these targets.
    #[error("REL relocation sections are not supported (only RELA)")]
    RelNotSupported,
    /// A section asks for more alignment than a page.
    #[error("section alignment {0} exceeds the 4096-byte page")]
    AlignmentTooLarge(u64),
    /// The object has no defined function symbol named like the kernel's entry.
    #[error("entry symbol `{0}` is not defined in an executable section of the kernel object")]
    EntryNotFound(String),
    /// The entry symbol lies in a writable section: that part of the image is mapped read-write,
    /// never executable, so calling it would crash.
    #[error("entry symbol `{0}` lies in a writable section of the kernel object, which is never mapped executable")]
    EntryNotExecutable(String),
    /// The loaded image would be unreasonably large.
    #[error("kernel image of {0} bytes is too large")]
    ImageTooLarge(u64),
    /// mmap/mprotect failed.
    #[error("{op} failed: {errno}")]
    Os {
        op: &'static str,
        errno: std::io::ErrorKind,
    },
    /// This host's architecture has no CPU backend (only x86_64 and aarch64 do).
    #[error("the CPU backend does not support {0} hosts")]
    UnsupportedHost(&'static str),
    /// The bundle targets another device family.
    #[error("bundle targets `{0}`, but this is the host CPU backend")]
    WrongFamily(&'static str),
    /// The bundle was compiled for another CPU architecture.
    #[error("bundle is compiled for {bundle} but this host is {host}: {hint}", bundle = bundle.name(),
        hint = modelrt_platform::foreign_cpu::hint(*bundle, CpuArch::host()))]
    WrongArch { bundle: CpuArch, host: &'static str },
    /// The host CPU lacks features the kernels were compiled to use.
    #[error("this CPU lacks {missing} required by the bundle's `{baseline}` baseline; recompile the bundle for an older baseline")]
    MissingFeatures { missing: String, baseline: String },
    /// A memory access (upload, download, argument, copy) falls outside the arena.
    #[error("arena access of {len} bytes at offset {offset:#x} exceeds the {arena}-byte arena")]
    OutOfBounds { offset: u64, len: u64, arena: u64 },
    /// The arena was used before [`modelrt_hal::device::Device::alloc_arena`].
    #[error("the arena has not been allocated")]
    NoArena,
    /// The arena size cannot be mapped on this host.
    #[error("arena of {0} bytes cannot be allocated on this host")]
    ArenaTooLarge(u64),
    /// A queue refers to a kernel id that was not loaded when the queue was created.
    #[error(
        "kernel id {0} is not loaded on this device (or was loaded after the queue was created)"
    )]
    UnknownKernel(u32),
    /// The launch arguments do not match the kernel's parameter list.
    #[error("kernel `{kernel}`: {reason}")]
    BadArgs {
        kernel: String,
        reason: &'static str,
    },
    /// Kernel metadata is inconsistent or not CPU metadata.
    #[error("kernel `{kernel}`: {reason}")]
    BadMeta {
        kernel: String,
        reason: &'static str,
    },
    /// A borrowed (zero-copy) input cannot stand in for its arena range.
    #[error("cannot bind the input buffer in place: {0}")]
    Borrow(super::borrow::BorrowRefusal),
    /// The queue was recorded against an arena that has since been replaced.
    #[error("queue was recorded against a previous arena allocation; re-record it")]
    StaleQueue,
    /// A `wait` whose value no submission can ever reach (CPU queues run synchronously).
    #[error("queue waits for timeline value {want}, but the timeline is at {have} and nothing else can advance it")]
    WaitUnsatisfiable { want: u64, have: u64 },
    /// A write (upload of other bytes, recorded copy) into a weight read in place.
    #[error("write of {len} bytes at arena offset {offset:#x} into a weight that is read in place from the bundle file")]
    WeightWrite { offset: u64, len: u64 },
    /// An access reaches both into and out of a weight read in place.
    #[error("access of {len} bytes at arena offset {offset:#x} straddles a weight read in place")]
    WeightStraddled { offset: u64, len: u64 },
    /// `bind_weights` after the arena was allocated.
    #[error("weights must be bound before the bundle is loaded")]
    WeightsAfterArena,
    /// The arena being allocated is not the one of the bundle whose weights were bound.
    #[error("weights were bound for a bundle with another arena size than the one being loaded")]
    WeightsForAnotherBundle,
    /// The thread pool could not be started.
    #[error("could not start CPU worker thread: {0}")]
    Spawn(std::io::ErrorKind),
}

impl From<object::read::Error> for CpuError {
    fn from(e: object::read::Error) -> Self {
        CpuError::Malformed(e.to_string())
    }
}
