//! Hexagon DSP kernels executed for real under `qemu-hexagon` (feature `emu`): the host side of modelrt's `qemu_harness`
//! harness (qcom/hexagon/dsp/qemu_harness.c). A [`Schedule`] — kernel libraries (the ELF shared objects a hexagon bundle stores),
//! buffers, launches and copies in order — goes to one qemu process, which loads each library, calls its FastRPC
//! `entry` exactly as the DSP skeleton would (docs/hw/hexagon-dsp.md §3), and returns per-step instruction counts and
//! the requested buffers. This is an execution model only: FastRPC/ION traffic is not modelled here.
mod cache;
pub mod protocol;
pub mod qemu;

pub use protocol::{BufArg, Helper, Results, Schedule, Step, StepResult};

/// What can go wrong running DSP kernels under qemu.
#[derive(Debug, thiserror::Error)]
pub enum HexagonError {
    /// A tool (qemu ≥ 8, clang-19) is missing or unusable.
    #[error("{0}")]
    Tool(String),
    /// The schedule breaks a rule (bad reference, > 15 buffers, unaligned view).
    #[error("invalid DSP schedule: {0}")]
    Invalid(String),
    /// The harness refused the input or crashed.
    #[error("qemu_harness failed ({}): {message}", describe(*code))]
    Harness { code: Option<i32>, message: String },
    /// A kernel library's `entry` returned non-zero.
    #[error("DSP step {step}: entry returned {ret}")]
    Entry { step: usize, ret: i32 },
    /// The harness's answer is malformed.
    #[error("qemu_harness protocol error: {0}")]
    Protocol(String),
}

fn describe(code: Option<i32>) -> String {
    match code {
        Some(2) => "exit 2: bad input".into(),
        Some(3) => "exit 3: bad ELF or unsupported relocation".into(),
        Some(4) => "exit 4: unresolved import".into(),
        Some(5) => "exit 5: bad HAP_mmap".into(),
        Some(6) => "exit 6: out of memory".into(),
        Some(c) => format!("exit {c}"),
        None => "killed by a signal: the kernel crashed".into(),
    }
}

/// Run a schedule under qemu; fails if any `entry` returned non-zero.
pub fn run(schedule: &Schedule<'_>) -> Result<Results, HexagonError> {
    let out = qemu::run(schedule.encode()?)?;
    let r = schedule.decode(&out)?;
    if let Some((i, s)) = r.steps.iter().enumerate().find(|(_, s)| s.ret != 0) {
        return Err(HexagonError::Entry {
            step: i,
            ret: s.ret,
        });
    }
    Ok(r)
}

/// Apply one helper-library routine to `pairs` under qemu (raw bits in, raw bits out).
pub fn run_helper(f: Helper, pairs: &[(u64, u64)]) -> Result<Vec<u64>, HexagonError> {
    let out = qemu::run(protocol::encode_helper(f, pairs)?)?;
    protocol::decode_helper(&out, pairs.len())
}
