//! The argument layouts of docs/hw/fastrpc.md §3, §5 and §6 as numbers: the one definition of what a launch's and a
//! model-level run's remote arguments and schedule table look like, read by both sides of the FastRPC boundary.
//!
//! Who uses what: the host *packs* with these constants ([`super::pack`] a launch's pra[0..3] and fds/attrs,
//! [`super::table`] the schedule table, [`super::real`] the `remote_arg` array of the ioctl); the FastRPC model
//! (`crate::emu::device`, `launch.rs` and `run.rs`) *decodes and checks* what it receives with its own code, from the
//! same constants. Only the definitions are shared, never the packing or parsing code, so a packing bug is not
//! mirrored by the model: the model only agrees with the host on what the documented layout is. The ioctl structs
//! themselves ([`super::abi`]) are the real device's alone: the model serves the [`super::FastRpcIo`] calls one level
//! above the ioctl, where there is no `remote_arg` array to decode.
//!
//! Nothing here packs or parses; `tests/fastrpc_abi.rs` checks these numbers against the documented values.

/// Handles one invoke carries in each direction: the 4-bit handle counts of the scalars word (§3). A launch passes
/// every kernel buffer as an output handle, so this is also the most buffers one launch carries.
pub const MAX_HANDLES: usize = 15;

/// A launch's remote arguments before its handle slots: pra[0] sizes and scalars, pra[1] offsets, pra[2] timer (§5).
pub const LAUNCH_FIXED_ARGS: usize = 3;
/// pra[0] of a launch: one slot of this many bytes per buffer (its size, as i32 sign-extended), then per scalar.
pub const LAUNCH_SLOT: usize = 8;
/// pra[1] of a launch: one little-endian u32 view offset per buffer.
pub const LAUNCH_OFFSET: usize = 4;
/// pra[2] of a launch: the kernel time in µs the DSP writes (u64).
pub const LAUNCH_TIMER: usize = 8;
/// Every view offset is a multiple of this: kernels declare their buffers `align_value(128)` (§5).
pub const BUFFER_ALIGN: u32 = 128;

/// A model-level run's remote arguments before its arena handles: pra[0] the table, pra[1] the result (§6).
pub const RUN_FIXED_ARGS: usize = 2;
/// The schedule table's first word, `MRS1` little-endian.
pub const TABLE_MAGIC: u32 = 0x3153_524d;
/// Table op kind of a kernel launch: `0, kernel, nbufs, nvals, nbufs × view, nvals × u64`.
pub const OP_LAUNCH: u32 = 0;
/// Table op kind of a copy: `1, dst arena, dst offset, src arena, src offset, size`.
pub const OP_COPY: u32 = 1;
/// Words of one buffer view in a launch op: arena, offset, size.
pub const VIEW_WORDS: usize = 3;
/// Words of a copy op after its kind.
pub const COPY_WORDS: usize = 5;
/// Most scalar slots one launch op may carry (the runner's stack frame).
pub const MAX_VALS: usize = 64;
/// Bytes of a run's result: u64 µs, u32 ops completed, i32 status.
pub const RESULT_LEN: usize = 16;
