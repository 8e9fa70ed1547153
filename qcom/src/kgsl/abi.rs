//! KGSL UAPI subset used by the Adreno backend: ioctl numbers, `#[repr(C)]` structs and flag values (docs/hw/adreno-kgsl-pm4.md §2).

/// `_IOC(dir, 0x09, nr, size)`.
pub const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    dir << 30 | (size as u32) << 16 | 0x09 << 8 | nr
}
const W: u32 = 1;
const WR: u32 = 3;

pub const IOCTL_DEVICE_GETPROPERTY: u32 = ioc(WR, 0x02, core::mem::size_of::<DeviceGetProperty>());
pub const IOCTL_DEVICE_WAITTIMESTAMP_CTXTID: u32 =
    ioc(W, 0x07, core::mem::size_of::<WaitTimestamp>());
pub const IOCTL_DRAWCTXT_CREATE: u32 = ioc(WR, 0x13, core::mem::size_of::<DrawctxtCreate>());
pub const IOCTL_MAP_USER_MEM: u32 = ioc(WR, 0x15, core::mem::size_of::<MapUserMem>());
pub const IOCTL_SHAREDMEM_FREE: u32 = ioc(W, 0x21, core::mem::size_of::<SharedmemFree>());
pub const IOCTL_SETPROPERTY: u32 = ioc(W, 0x32, core::mem::size_of::<DeviceGetProperty>());
pub const IOCTL_GPUOBJ_ALLOC: u32 = ioc(WR, 0x45, core::mem::size_of::<GpuobjAlloc>());
pub const IOCTL_GPUOBJ_FREE: u32 = ioc(W, 0x46, core::mem::size_of::<GpuobjFree>());
pub const IOCTL_GPU_COMMAND: u32 = ioc(WR, 0x4A, core::mem::size_of::<GpuCommand>());

pub const CONTEXT_NO_GMEM_ALLOC: u32 = 0x2;
pub const CONTEXT_PREAMBLE: u32 = 0x10;
pub const CONTEXT_NO_FAULT_TOLERANCE: u32 = 0x200;
pub const CONTEXT_PWR_CONSTRAINT: u32 = 0x800;
pub const CONTEXT_PRIORITY_SHIFT: u32 = 12;
pub const CONTEXT_PRIORITY_MASK: u32 = 0xF000;
pub const CONTEXT_PREEMPT_STYLE_FINEGRAIN: u32 = 2 << 25;

/// Context flags tinygrad uses, with the priority field set to `priority` (0–15; default 8 → 0x04008A12).
pub const fn context_flags(priority: u32) -> u32 {
    CONTEXT_PREAMBLE
        | CONTEXT_PWR_CONSTRAINT
        | CONTEXT_NO_FAULT_TOLERANCE
        | CONTEXT_NO_GMEM_ALLOC
        | (priority << CONTEXT_PRIORITY_SHIFT) & CONTEXT_PRIORITY_MASK
        | CONTEXT_PREEMPT_STYLE_FINEGRAIN
}

pub const MEMFLAGS_USE_CPU_MAP: u64 = 0x1000_0000;
pub const MEMALIGN_SHIFT: u64 = 16;
pub const MEMALIGN_MASK: u64 = 0x00FF_0000;
pub const CACHEMODE_MASK: u64 = 0x0C00_0000;
/// GPUOBJ_ALLOC flags: USE_CPU_MAP | MEMALIGN(12), cache mode 0 (docs/hw/adreno-kgsl-pm4.md §4.1) = 0x100C0000.
pub const ALLOC_FLAGS: u64 = MEMFLAGS_USE_CPU_MAP | 12 << MEMALIGN_SHIFT;
pub const PAGE: u64 = 0x1000;

pub const CMDLIST_IB: u32 = 0x1;
pub const USER_MEM_TYPE_ADDR: u32 = 2;
pub const PROP_DEVICE_INFO: u32 = 0x1;
pub const PROP_PWR_CONSTRAINT: u32 = 0x12;
pub const CONSTRAINT_PWRLEVEL: u32 = 1;
pub const CONSTRAINT_PWR_MAX: u32 = 1;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DevInfo {
    pub device_id: u32,
    pub chip_id: u32,
    pub mmu_enabled: u32,
    pub gmem_gpubaseaddr: u64,
    pub gpu_id: u32,
    pub gmem_sizebytes: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceGetProperty {
    pub type_: u32,
    pub value: u64,
    pub sizebytes: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceConstraint {
    pub type_: u32,
    pub context_id: u32,
    pub data: u64,
    pub size: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DrawctxtCreate {
    pub flags: u32,
    pub drawctxt_id: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuobjAlloc {
    pub size: u64,
    pub flags: u64,
    pub va_len: u64,
    pub mmapsize: u64,
    pub id: u32,
    pub metadata_len: u32,
    pub metadata: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuobjFree {
    pub flags: u64,
    pub priv_: u64,
    pub id: u32,
    pub type_: u32,
    pub len: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MapUserMem {
    pub fd: i32,
    pub gpuaddr: u64,
    pub len: u64,
    pub offset: u64,
    pub hostptr: u64,
    pub memtype: u32,
    pub flags: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct SharedmemFree {
    pub gpuaddr: u64,
}

/// One IB of a submission.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandObject {
    pub offset: u64,
    pub gpuaddr: u64,
    pub size: u64,
    pub flags: u32,
    pub id: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuCommand {
    pub flags: u64,
    pub cmdlist: u64,
    pub cmdsize: u32,
    pub numcmds: u32,
    pub objlist: u64,
    pub objsize: u32,
    pub numobjs: u32,
    pub synclist: u64,
    pub syncsize: u32,
    pub numsyncs: u32,
    pub context_id: u32,
    pub timestamp: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct WaitTimestamp {
    pub context_id: u32,
    pub timestamp: u32,
    pub timeout: u32,
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::mem::size_of;

    #[test]
    fn struct_sizes_match_spec() {
        assert_eq!(size_of::<DevInfo>(), 40);
        assert_eq!(size_of::<DeviceGetProperty>(), 24);
        assert_eq!(size_of::<DeviceConstraint>(), 24);
        assert_eq!(size_of::<DrawctxtCreate>(), 8);
        assert_eq!(size_of::<GpuobjAlloc>(), 48);
        assert_eq!(size_of::<GpuobjFree>(), 32);
        assert_eq!(size_of::<MapUserMem>(), 48);
        assert_eq!(size_of::<SharedmemFree>(), 8);
        assert_eq!(size_of::<CommandObject>(), 32);
        assert_eq!(size_of::<GpuCommand>(), 64);
        assert_eq!(size_of::<WaitTimestamp>(), 12);
    }

    #[test]
    fn ioctl_numbers_match_spec() {
        assert_eq!(IOCTL_DEVICE_GETPROPERTY, 0xC018_0902);
        assert_eq!(IOCTL_DEVICE_WAITTIMESTAMP_CTXTID, 0x400C_0907);
        assert_eq!(IOCTL_DRAWCTXT_CREATE, 0xC008_0913);
        assert_eq!(IOCTL_MAP_USER_MEM, 0xC030_0915);
        assert_eq!(IOCTL_SHAREDMEM_FREE, 0x4008_0921);
        assert_eq!(IOCTL_SETPROPERTY, 0x4018_0932);
        assert_eq!(IOCTL_GPUOBJ_ALLOC, 0xC030_0945);
        assert_eq!(IOCTL_GPUOBJ_FREE, 0x4020_0946);
        assert_eq!(IOCTL_GPU_COMMAND, 0xC040_094A);
    }

    #[test]
    fn flags_match_spec() {
        assert_eq!(context_flags(8), 0x0400_8A12);
        assert_eq!(ALLOC_FLAGS, 0x100C_0000);
    }
}
