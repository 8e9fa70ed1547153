//! The contract between the emulated GPU's command processor and a shader executor.
//!
//! The Navi31 GPU model (`modelrt_amd::emu::navi31_gpu`) decodes a PM4 `DISPATCH_DIRECT` into a [`DispatchRequest`]
//! holding the compute registers exactly as the stream programmed them (no interpretation of the
//! kernel descriptor happens here: the executor reads the fields it needs, as the hardware's
//! shader processor input does). Memory is reached through [`GpuMemory`], which the GPU model
//! implements with its page tables, so a wild address is a [`MemFault`], never a host crash.
//!
//! Until an interpreter is plugged in, [`NotModelled`] refuses every dispatch honestly.
//! Register names and the dispatch ABI: `docs/hw/amd-gpu.md`.

/// One compute dispatch as the command processor sees it when `DISPATCH_DIRECT` executes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DispatchRequest {
    /// Byte address of the first instruction: `(COMPUTE_PGM_HI << 32 | COMPUTE_PGM_LO) << 8`.
    pub code_va: u64,
    /// `COMPUTE_PGM_RSRC1` (float modes, register counts).
    pub pgm_rsrc1: u32,
    /// `COMPUTE_PGM_RSRC2` (USER_SGPR_COUNT, workgroup-id enables, TIDIG_COMP_CNT, LDS size).
    pub pgm_rsrc2: u32,
    /// `COMPUTE_PGM_RSRC3`.
    pub pgm_rsrc3: u32,
    /// `COMPUTE_USER_DATA_0..15`; the first USER_SGPR_COUNT (from `pgm_rsrc2`) load into s0…
    pub user_data: [u32; 16],
    /// `COMPUTE_NUM_THREAD_X/Y/Z`: the workgroup size in threads.
    pub workgroup_size: [u32; 3],
    /// `COMPUTE_START_X/Y/Z`: the first workgroup id.
    pub start: [u32; 3],
    /// The `DISPATCH_DIRECT` grid in workgroups (x, y, z).
    pub grid: [u32; 3],
    /// The `DISPATCH_DIRECT` initiator dword (`CS_W32_EN` selects wave32).
    pub initiator: u32,
    /// `COMPUTE_TMPRING_SIZE` (scratch: WAVESIZE sizes each lane's private memory;
    /// docs/hw/amd-driver.md §5.1).
    pub tmpring_size: u32,
}

/// A GPU virtual address the page tables do not map (or map read-only, for a write).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemFault {
    /// The faulting GPU virtual address.
    pub va: u64,
    /// Whether the access was a write.
    pub write: bool,
}

/// GPU virtual memory as a shader sees it (through the GPU's page tables).
pub trait GpuMemory {
    /// Read `out.len()` bytes at `va`.
    fn read(&mut self, va: u64, out: &mut [u8]) -> Result<(), MemFault>;
    /// Write `data` at `va`.
    fn write(&mut self, va: u64, data: &[u8]) -> Result<(), MemFault>;
    /// Read ahead: like [`GpuMemory::read`], but a failure leaves no trace (no fault recorded
    /// for the GPU's fault status registers), because no shader asked for these bytes yet.
    fn read_ahead(&mut self, va: u64, out: &mut [u8]) -> bool {
        self.read(va, out).is_ok()
    }
}

/// Why a dispatch did not complete.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExecError {
    /// No shader executor is plugged in: the model accepts dispatches but cannot run them.
    #[error("kernel execution not modelled (no shader interpreter is plugged into the GPU model)")]
    NotModelled,
    /// A shader touched an unmapped address.
    #[error("GPU page fault at {:#x} ({}) in the shader at {code_va:#x}", .fault.va, if .fault.write { "write" } else { "read" })]
    PageFault {
        /// The dispatch's code address (the driver maps it back to a kernel name).
        code_va: u64,
        /// The faulting access.
        fault: MemFault,
    },
    /// An instruction the executor cannot decode or does not support.
    #[error("unsupported instruction at {code_va:#x}+{offset:#x}: {dwords:08x?} ({what})")]
    Unsupported {
        /// The dispatch's code address.
        code_va: u64,
        /// Byte offset of the instruction from `code_va`.
        offset: u64,
        /// The raw instruction dwords (1–3).
        dwords: heapless::Vec<u32, 3>,
        /// What was wrong.
        what: &'static str,
    },
    /// The dispatch's registers are inconsistent (e.g. wave64 requested, a zero workgroup size).
    #[error("bad dispatch at {code_va:#x}: {what}")]
    BadDispatch {
        /// The dispatch's code address.
        code_va: u64,
        /// What was wrong.
        what: &'static str,
    },
    /// A wave ran past its instruction budget (a hang on hardware).
    #[error("shader at {code_va:#x} exceeded {budget} instructions (a GPU hang)")]
    Hang {
        /// The dispatch's code address.
        code_va: u64,
        /// The budget that was exceeded.
        budget: u64,
    },
}

/// Runs the waves of one dispatch to completion.
pub trait ShaderExecutor: Send {
    /// Execute every workgroup of `req`; memory effects are complete when this returns.
    fn dispatch(&mut self, req: &DispatchRequest, mem: &mut dyn GpuMemory)
        -> Result<(), ExecError>;
}

/// The executor used until an interpreter is plugged in: refuses every dispatch.
#[derive(Clone, Copy, Debug, Default)]
pub struct NotModelled;

impl ShaderExecutor for NotModelled {
    fn dispatch(
        &mut self,
        _req: &DispatchRequest,
        _mem: &mut dyn GpuMemory,
    ) -> Result<(), ExecError> {
        Err(ExecError::NotModelled)
    }
}
