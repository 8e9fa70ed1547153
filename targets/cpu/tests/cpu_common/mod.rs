//! Helpers shared by the CPU backend integration tests: fixture loading and kernel registration.
#![allow(dead_code)] // each test crate uses a different subset

use modelrt_cpu::{CpuDevice, CpuError};
use modelrt_hal::device::{Device, KernelId, KernelImage};
use modelrt_hal::target::{CpuKernelMeta, DType, KernelMeta, ParamDesc, ParamKind};

/// Bytes of `targets/cpu/tests/fixtures/cpu/<rel>`.
pub fn fixture(rel: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/cpu/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

pub fn buf(dtype: DType) -> ParamDesc {
    ParamDesc {
        kind: ParamKind::Buffer,
        dtype,
    }
}

pub fn var() -> ParamDesc {
    ParamDesc {
        kind: ParamKind::Var,
        dtype: DType::I32,
    }
}

pub fn core_id() -> ParamDesc {
    ParamDesc {
        kind: ParamKind::CoreId,
        dtype: DType::I32,
    }
}

/// Load `binary` with entry `entry` into `dev`.
pub fn load(
    dev: &mut CpuDevice,
    binary: &[u8],
    entry: &str,
    params: &[ParamDesc],
    threads: u32,
) -> Result<KernelId, CpuError> {
    let meta = KernelMeta::Cpu(CpuKernelMeta { threads });
    dev.load_kernel(&KernelImage {
        name: entry,
        entry,
        binary,
        params,
        meta: &meta,
    })
}

#[allow(unused_imports)] // each test file uses its own subset
pub use modelrt_core::bundle::writer::{bytes_f32, f32_bytes};

pub fn download_f32(dev: &mut CpuDevice, offset: u64, n: usize) -> Vec<f32> {
    let mut out = vec![0u8; n * 4];
    dev.download(offset, &mut out).expect("download");
    bytes_f32(&out)
}
