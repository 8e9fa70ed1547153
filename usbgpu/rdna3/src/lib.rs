//! `modelrt-rdna3`: an RDNA3 (gfx1100) shader interpreter — the [`ShaderExecutor`](shader::ShaderExecutor)
//! that makes the Navi31 GPU model in `modelrt-amd` (feature `emu`) compute — and the
//! [`shader`] contract between a GPU model's command processor and a shader executor.
//!
//! Scope is the instruction subset tinygrad 0.14's gfx1100 kernels use (the census in
//! `docs/hw/rdna3-isa.md`): 15 encodings, wave32 only. Pieces, one idea each:
//! - [`shader`]: the executor contract (dispatch request, GPU memory, execution errors);
//! - [`ops`]: the operation table (opcode per encoding, LLVM mnemonic, operand types);
//! - [`operand`], [`decode`]: raw dwords → typed [`decode::Inst`]; anything unknown is an error;
//! - [`disasm`]: the LLVM-style listing the decoder golden test compares with `llvm-objdump-19`;
//! - [`program`]: a kernel decoded once, with branch targets resolved;
//! - [`float`]: f32/f16 rules (denormals kept, RNE, IEEE min/max, saturating conversions,
//!   transcendentals against a correctly-rounded reference; binary16 conversion itself is
//!   `modelrt_core::half`);
//! - [`f16`]: binary16 arithmetic with one rounding (add, mul, fused multiply-add, class);
//! - [`wave`], [`salu`], [`valu`], [`valu16`] (16-bit and packed operations), [`mem`]: one wave's state
//!   and its instruction semantics;
//! - [`group`]: one workgroup's waves, LDS and `s_barrier`;
//! - [`dispatch`]: the dispatch ABI, the program cache, workgroups in order;
//! - [`parallel`]: the workgroups of a dispatch on several host threads (std only).
//!
//! Decoding, the listing, instruction semantics and [`group`] use only `core` + `alloc` APIs,
//! except [`float`] and [`f16`], which call std's float math (`mul_add`, `sqrt`, `floor`…, libm's `exp2`/
//! `log2`/`sin`/`cos`); [`dispatch`] (a std `HashMap` program cache) and [`parallel`] (threads,
//! channels) are the std layer; [`shader`]'s error type derives `thiserror::Error`. No `unsafe`
//! anywhere.
#![forbid(unsafe_code)]
pub mod decode;
pub mod disasm;
pub mod dispatch;
pub mod f16;
pub mod float;
pub mod group;
pub mod mem;
pub mod operand;
pub mod ops;
pub mod parallel;
pub mod program;
pub mod salu;
pub mod shader;
pub mod valu;
pub mod valu16;
pub mod wave;

pub use dispatch::{Rdna3, Stats};
