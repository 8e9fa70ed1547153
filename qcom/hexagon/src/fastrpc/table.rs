//! The schedule table the host sends with the one invoke per step that runs a whole model on the DSP
//! (qcom/hexagon/dsp/schedule_runner.c, docs/hw/fastrpc.md §6). Little-endian u32 words: `MRS1`, op count, arena count, each
//! arena's size; then per op `0, kernel, nbufs, nvals, nbufs × {arena, offset, size}, nvals × u64` (a launch) or
//! `1, dst arena, dst offset, src arena, src offset, size` (a copy). The scalars word of the invoke is
//! [`run_sc`]: method 3, one input buffer (the table), one 16-byte output {u64 µs, u32 ops completed, i32 status},
//! one dma handle per arena.
use super::layout::{OP_COPY, OP_LAUNCH};
use super::pack::BUFFER_ALIGN;
use super::scalars::MAX_LAUNCH_BUFFERS;
use super::FastRpcError;

/// `MRS1`, the most scalar slots of one launch, the runner's output bytes ([`super::layout`]).
pub use super::layout::{MAX_VALS, RESULT_LEN, TABLE_MAGIC};
/// Method 3, 1 in, 1 out, no input handles; the low nibble carries the arena count.
pub const SC_RUN_BASE: u32 = 0x0301_0100;

/// The scalars word of a run with `narenas` arenas (1 ..= 15), or `None`.
pub const fn run_sc(narenas: usize) -> Option<u32> {
    if narenas == 0 || narenas > MAX_LAUNCH_BUFFERS {
        None
    } else {
        Some(SC_RUN_BASE | narenas as u32)
    }
}

/// A view of an arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArenaView {
    pub arena: u32,
    pub offset: u32,
    pub size: u32,
}

/// One op of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TableOp<'a> {
    Launch {
        kernel: u32,
        bufs: &'a [ArenaView],
        vals: &'a [u64],
    },
    Copy {
        dst: ArenaView,
        src: ArenaView,
    },
}

fn inside(arenas: &[u32], v: &ArenaView) -> bool {
    arenas
        .get(v.arena as usize)
        .is_some_and(|&a| u64::from(v.offset) + u64::from(v.size) <= u64::from(a))
}

/// Encode `ops` over arenas of the given sizes, checking what the runner (and the DSP) would refuse: at most 15
/// buffers and 64 scalars per launch, views inside their arena and 128-byte aligned, copies of equal size.
/// Errors name the op.
pub fn encode(arenas: &[u32], ops: &[TableOp<'_>]) -> Result<Vec<u8>, FastRpcError> {
    let bad = |i: usize, m: String| FastRpcError::invalid("schedule table", format!("op {i}: {m}"));
    if run_sc(arenas.len()).is_none() {
        return Err(FastRpcError::invalid(
            "schedule table",
            format!("{} arenas (1 to {MAX_LAUNCH_BUFFERS})", arenas.len()),
        ));
    }
    let mut w: Vec<u32> = vec![TABLE_MAGIC, ops.len() as u32, arenas.len() as u32];
    w.extend_from_slice(arenas);
    for (i, op) in ops.iter().enumerate() {
        match op {
            TableOp::Launch { kernel, bufs, vals } => {
                if bufs.len() > MAX_LAUNCH_BUFFERS || vals.len() > MAX_VALS {
                    return Err(bad(
                        i,
                        format!(
                            "{} buffers / {} scalars (at most {MAX_LAUNCH_BUFFERS} / {MAX_VALS})",
                            bufs.len(),
                            vals.len()
                        ),
                    ));
                }
                w.extend_from_slice(&[OP_LAUNCH, *kernel, bufs.len() as u32, vals.len() as u32]);
                for b in bufs.iter() {
                    if !inside(arenas, b) {
                        return Err(bad(i, format!("{b:?} lies outside its arena")));
                    }
                    if !b.offset.is_multiple_of(BUFFER_ALIGN) {
                        return Err(bad(
                            i,
                            format!(
                                "view at arena offset {} is not {BUFFER_ALIGN}-byte aligned",
                                b.offset
                            ),
                        ));
                    }
                    w.extend_from_slice(&[b.arena, b.offset, b.size]);
                }
                for v in vals.iter() {
                    w.extend_from_slice(&[*v as u32, (*v >> 32) as u32]);
                }
            }
            TableOp::Copy { dst, src } => {
                if dst.size != src.size || !inside(arenas, dst) || !inside(arenas, src) {
                    return Err(bad(i, "copy outside its arenas or of unequal sizes".into()));
                }
                w.extend_from_slice(&[
                    OP_COPY, dst.arena, dst.offset, src.arena, src.offset, src.size,
                ]);
            }
        }
    }
    Ok(w.iter().flat_map(|v| v.to_le_bytes()).collect())
}

/// The runner's 16-byte answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunResult {
    pub dsp_us: u64,
    pub ops_done: u32,
    pub status: i32,
}

impl RunResult {
    pub fn parse(b: &[u8; RESULT_LEN]) -> Self {
        let w = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        RunResult {
            dsp_us: u64::from(w(0)) | (u64::from(w(4)) << 32),
            ops_done: w(8),
            status: w(12) as i32,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_the_documented_words_and_refuses_bad_views() {
        let v = |arena, offset, size| ArenaView {
            arena,
            offset,
            size,
        };
        let bufs = [v(0, 128, 64)];
        let t = encode(
            &[512],
            &[
                TableOp::Launch {
                    kernel: 2,
                    bufs: &bufs,
                    vals: &[0x1_0000_0005],
                },
                TableOp::Copy {
                    dst: v(0, 0, 8),
                    src: v(0, 300, 8),
                },
            ],
        )
        .unwrap();
        let words: Vec<u32> = t
            .chunks(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        assert_eq!(
            words,
            [
                0x3153_524d,
                2,
                1,
                512,
                0,
                2,
                1,
                1,
                0,
                128,
                64,
                5,
                1,
                1,
                0,
                0,
                0,
                300,
                8
            ]
        );
        assert_eq!(run_sc(1), Some(0x0301_0101));
        assert_eq!(run_sc(16), None);
        let bad = [v(0, 64, 64)];
        let e = encode(
            &[512],
            &[TableOp::Launch {
                kernel: 0,
                bufs: &bad,
                vals: &[],
            }],
        )
        .unwrap_err();
        assert!(e.to_string().contains("128-byte aligned"), "{e}");
        let out = [v(0, 384, 256)];
        let e = encode(
            &[512],
            &[TableOp::Launch {
                kernel: 0,
                bufs: &out,
                vals: &[],
            }],
        )
        .unwrap_err();
        assert!(e.to_string().contains("outside"), "{e}");
    }
}
