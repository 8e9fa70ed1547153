//! FastRPC (`adsprpc`) and legacy ION ioctl numbers and argument structs as the Linux driver sees them on an
//! LP64 host (pointers and `size_t` are 8 bytes). Pointer fields are plain `u64` here: only the real device
//! ([`super::real`]) fills them, from slices it borrows for the duration of one ioctl.
//! Layouts and numbers: docs/hw/fastrpc.md §1–§2.

/// `_IOWR(ty, nr, size)` as Linux encodes it: dir 3 in bits 30–31, size in 16–29, type in 8–15, nr in 0–7.
pub const fn iowr(ty: u8, nr: u8, size: usize) -> u32 {
    (3 << 30) | ((size as u32 & 0x3FFF) << 16) | ((ty as u32) << 8) | nr as u32
}

const R: u8 = b'R';
const I: u8 = b'I';

pub const FASTRPC_IOCTL_INVOKE: u32 = iowr(R, 1, size_of::<InvokeArgs>());
pub const FASTRPC_IOCTL_MMAP: u32 = iowr(R, 2, size_of::<MmapArgs>());
pub const FASTRPC_IOCTL_MUNMAP: u32 = iowr(R, 3, size_of::<MunmapArgs>());
pub const FASTRPC_IOCTL_INVOKE_FD: u32 = iowr(R, 4, 24);
pub const FASTRPC_IOCTL_INIT: u32 = iowr(R, 6, size_of::<InitArgs>());
pub const FASTRPC_IOCTL_INVOKE_ATTRS: u32 = iowr(R, 7, size_of::<InvokeAttrsArgs>());
pub const FASTRPC_IOCTL_GETINFO: u32 = iowr(R, 8, 4);
pub const FASTRPC_IOCTL_CONTROL: u32 = iowr(R, 12, size_of::<ControlArgs>());
pub const ION_IOC_ALLOC: u32 = iowr(I, 0, size_of::<IonAllocationData>());
pub const ION_IOC_FREE: u32 = iowr(I, 1, size_of::<IonHandleData>());
pub const ION_IOC_SHARE: u32 = iowr(I, 4, size_of::<IonFdData>());

/// FASTRPC_INIT_CREATE: create a user process on the DSP from the shell ELF.
pub const FASTRPC_INIT_CREATE: u32 = 1;
/// FASTRPC_CONTROL_KALLOC: the control request the bring-up issues.
pub const FASTRPC_CONTROL_KALLOC: u32 = 3;
/// FASTRPC_ATTR_NOVA: "no virtual mapping in userspace", set for every dma-buf handle of a launch.
pub const FASTRPC_ATTR_NOVA: u32 = 1;
/// The compute DSP's domain / GETINFO channel value.
pub const CDSP_DOMAIN: u32 = 3;
/// ION_SYSTEM_HEAP_ID 25 as a heap mask.
pub const ION_SYSTEM_HEAP_MASK: u32 = 1 << 25;
/// ION_FLAG_CACHED.
pub const ION_FLAG_CACHED: u32 = 1;
/// The alignment every ION allocation asks for.
pub const ION_ALIGN: u64 = 0x200;

/// `remote_arg` (a 16-byte union): `buf {pv, len}` or `dma {fd, offset}` in the first 8 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemoteArg {
    pub pv: u64,
    pub len: u64,
}

impl RemoteArg {
    /// The `dma` view: fd in the low word, offset in the high word (little-endian union overlay).
    pub fn dma(fd: i32, offset: u32) -> Self {
        RemoteArg {
            pv: u64::from(fd as u32) | (u64::from(offset) << 32),
            len: 0,
        }
    }
}

/// `fastrpc_ioctl_invoke`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct InvokeArgs {
    pub handle: u32,
    pub sc: u32,
    pub pra: u64,
}

/// `fastrpc_ioctl_invoke_attrs`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct InvokeAttrsArgs {
    pub inv: InvokeArgs,
    pub fds: u64,
    pub attrs: u64,
}

/// `fastrpc_ioctl_init`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct InitArgs {
    pub flags: u32,
    pub file: u64,
    pub filelen: u32,
    pub filefd: i32,
    pub mem: u64,
    pub memlen: u32,
    pub memfd: i32,
}

/// `fastrpc_ioctl_mmap`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MmapArgs {
    pub fd: i32,
    pub flags: u32,
    pub vaddrin: u64,
    pub size: u64,
    pub vaddrout: u64,
}

/// `fastrpc_ioctl_munmap`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MunmapArgs {
    pub vaddrout: u64,
    pub size: u64,
}

/// `fastrpc_ioctl_control`: `req` plus a two-word union (latency {enable, level}, smmu, kalloc).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ControlArgs {
    pub req: u32,
    pub words: [u32; 2],
}

/// `ion_allocation_data`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct IonAllocationData {
    pub len: u64,
    pub align: u64,
    pub heap_id_mask: u32,
    pub flags: u32,
    pub handle: i32,
}

/// `ion_handle_data`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct IonHandleData {
    pub handle: i32,
}

/// `ion_fd_data`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct IonFdData {
    pub handle: i32,
    pub fd: i32,
}
