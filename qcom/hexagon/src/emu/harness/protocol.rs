//! The byte protocol between the host and `qemu_harness` (qcom/hexagon/dsp/qemu_harness.c): a whole schedule in one message
//! (`MRH1`), results back (`MRR1`); and the helper-library check (`MRF1`). All little-endian; layout in the C
//! file's header comment.
use super::HexagonError;

/// Most buffers one launch may pass: the FastRPC scalars word has 4 bits for the handle count.
pub const MAX_LAUNCH_BUFFERS: usize = 15;
/// Every buffer or sub-buffer start must be 128-byte aligned on the DSP (kernels declare `align_value(128)`).
pub const BUFFER_ALIGN: u32 = 128;

/// One buffer argument of a launch: a view of a schedule buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufArg {
    pub buffer: u32,
    pub offset: u32,
    pub size: u32,
}

/// One step of a schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Call library `lib`'s `entry` with these buffers (FastRPC handles) and scalar slots (8 bytes each).
    Launch {
        lib: u32,
        bufs: Vec<BufArg>,
        vals: Vec<u64>,
    },
    /// A raw FastRPC invoke of library `lib`'s `entry` with scalars word `sc`: `pra[0]` = `input`, `pra[1]` = a
    /// 16-byte output {u64 µs, u32 ops completed, i32 status}, then one dma handle per buffer in `handles`
    /// (the model library's schedule runner, qcom/hexagon/dsp/schedule_runner.c).
    Invoke {
        lib: u32,
        sc: u32,
        input: Vec<u8>,
        handles: Vec<u32>,
    },
    /// `memmove` between two buffers.
    Copy {
        dst: u32,
        dst_offset: u32,
        src: u32,
        src_offset: u32,
        size: u32,
    },
}

/// A whole run: kernel libraries, buffers with their initial contents, the steps, and which buffers come back.
#[derive(Clone, Debug, Default)]
pub struct Schedule<'a> {
    pub libs: Vec<&'a [u8]>,
    pub buffers: Vec<Vec<u8>>,
    pub steps: Vec<Step>,
    pub outputs: Vec<u32>,
}

/// What one step reported.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StepResult {
    /// `entry`'s return value (0 = success); 0 for copies.
    pub ret: i32,
    /// qemu instructions spent in `entry` (0 for copies).
    pub instructions: u32,
    /// `HAP_power_set` calls during the step.
    pub power_calls: u32,
    /// The µs value `entry` stored into its timer output (instructions / 1000 under the harness).
    pub timer_us: u64,
    /// Invoke steps: the ops the schedule runner completed, and the failing kernel's return value (0 = none).
    pub ops: u32,
    pub status: i32,
}

/// The harness's answer.
#[derive(Clone, Debug, Default)]
pub struct Results {
    pub steps: Vec<StepResult>,
    /// The requested buffers, in request order.
    pub outputs: Vec<Vec<u8>>,
}

fn u32_of(v: usize, what: &str) -> Result<u32, HexagonError> {
    u32::try_from(v).map_err(|_| HexagonError::Invalid(format!("{what} {v} does not fit 32 bits")))
}

fn put(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

impl Schedule<'_> {
    /// Check every reference and the DSP's rules (≤ 15 buffers per launch, 128-byte aligned views).
    pub fn validate(&self) -> Result<(), HexagonError> {
        let inside = |b: u32, off: u32, size: u32| {
            self.buffers
                .get(b as usize)
                .is_some_and(|buf| u64::from(off) + u64::from(size) <= buf.len() as u64)
        };
        for (i, s) in self.steps.iter().enumerate() {
            let bad = |m: String| Err(HexagonError::Invalid(format!("step {i}: {m}")));
            match s {
                Step::Launch { lib, bufs, vals } => {
                    if *lib as usize >= self.libs.len() {
                        return bad(format!("library {lib} does not exist"));
                    }
                    if bufs.len() > MAX_LAUNCH_BUFFERS {
                        return bad(format!(
                            "{} buffers (FastRPC allows {MAX_LAUNCH_BUFFERS})",
                            bufs.len()
                        ));
                    }
                    if vals.len() > 64 {
                        return bad(format!("{} scalars (at most 64)", vals.len()));
                    }
                    for a in bufs {
                        if !inside(a.buffer, a.offset, a.size) {
                            return bad(format!("buffer argument {a:?} lies outside its buffer"));
                        }
                        if !a.offset.is_multiple_of(BUFFER_ALIGN) {
                            return bad(format!(
                                "buffer {} view at offset {} is not {BUFFER_ALIGN}-byte aligned (the DSP faults)",
                                a.buffer, a.offset
                            ));
                        }
                    }
                }
                Step::Invoke {
                    lib,
                    input,
                    handles,
                    ..
                } => {
                    if *lib as usize >= self.libs.len() {
                        return bad(format!("library {lib} does not exist"));
                    }
                    if handles.len() > MAX_LAUNCH_BUFFERS {
                        return bad(format!(
                            "{} handles (FastRPC allows {MAX_LAUNCH_BUFFERS})",
                            handles.len()
                        ));
                    }
                    if input.len() > 16 << 20 || !input.len().is_multiple_of(4) {
                        return bad(format!("input of {} bytes", input.len()));
                    }
                    if let Some(h) = handles.iter().find(|&&h| h as usize >= self.buffers.len()) {
                        return bad(format!("handle buffer {h} does not exist"));
                    }
                }
                Step::Copy {
                    dst,
                    dst_offset,
                    src,
                    src_offset,
                    size,
                } => {
                    if !inside(*dst, *dst_offset, *size) || !inside(*src, *src_offset, *size) {
                        return bad("copy outside its buffers".into());
                    }
                }
            }
        }
        if let Some(o) = self
            .outputs
            .iter()
            .find(|&&o| o as usize >= self.buffers.len())
        {
            return Err(HexagonError::Invalid(format!(
                "output buffer {o} does not exist"
            )));
        }
        Ok(())
    }

    /// The `MRH1` message (validated first).
    pub fn encode(&self) -> Result<Vec<u8>, HexagonError> {
        self.validate()?;
        let mut out = b"MRH1".to_vec();
        put(&mut out, u32_of(self.libs.len(), "library count")?);
        for lib in &self.libs {
            put(&mut out, u32_of(lib.len(), "library size")?);
            out.extend_from_slice(lib);
            out.resize(out.len().next_multiple_of(4), 0);
        }
        put(&mut out, u32_of(self.buffers.len(), "buffer count")?);
        for b in &self.buffers {
            put(&mut out, u32_of(b.len(), "buffer size")?);
        }
        let mut script = Vec::new();
        for s in &self.steps {
            match s {
                Step::Launch { lib, bufs, vals } => {
                    for v in [0, *lib, bufs.len() as u32, vals.len() as u32] {
                        put(&mut script, v);
                    }
                    for a in bufs {
                        for v in [a.buffer, a.offset, a.size] {
                            put(&mut script, v);
                        }
                    }
                    for v in vals {
                        script.extend_from_slice(&v.to_le_bytes());
                    }
                }
                Step::Invoke {
                    lib,
                    sc,
                    input,
                    handles,
                } => {
                    for v in [2, *lib, *sc, input.len() as u32] {
                        put(&mut script, v);
                    }
                    script.extend_from_slice(input);
                    put(&mut script, handles.len() as u32);
                    for h in handles {
                        put(&mut script, *h);
                    }
                }
                Step::Copy {
                    dst,
                    dst_offset,
                    src,
                    src_offset,
                    size,
                } => {
                    for v in [1, *dst, *dst_offset, *src, *src_offset, *size] {
                        put(&mut script, v);
                    }
                }
            }
        }
        put(&mut out, u32_of(self.steps.len(), "step count")?);
        put(&mut out, u32_of(script.len(), "schedule size")?);
        out.extend_from_slice(&script);
        for b in &self.buffers {
            out.extend_from_slice(b);
        }
        put(&mut out, u32_of(self.outputs.len(), "output count")?);
        for o in &self.outputs {
            put(&mut out, *o);
        }
        Ok(out)
    }

    /// Parse the harness's `MRR1` answer to this schedule.
    pub fn decode(&self, stdout: &[u8]) -> Result<Results, HexagonError> {
        let short =
            || HexagonError::Protocol(format!("answer of {} bytes is too short", stdout.len()));
        if stdout.get(..4) != Some(b"MRR1".as_slice()) {
            return Err(HexagonError::Protocol(
                "answer does not start with MRR1".into(),
            ));
        }
        let word = |at: usize| -> Result<u32, HexagonError> {
            let b = stdout.get(at..at + 4).ok_or_else(short)?;
            Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        };
        let n = word(4)? as usize;
        if n != self.steps.len() {
            return Err(HexagonError::Protocol(format!(
                "harness reports {n} steps, the schedule has {}",
                self.steps.len()
            )));
        }
        let mut at = 8;
        let mut steps = Vec::with_capacity(n);
        for _ in 0..n {
            steps.push(StepResult {
                ret: word(at)? as i32,
                instructions: word(at + 4)?,
                power_calls: word(at + 8)?,
                ops: word(at + 12)?,
                timer_us: u64::from(word(at + 16)?) | (u64::from(word(at + 20)?) << 32),
                status: word(at + 24)? as i32,
            });
            at += 32;
        }
        let mut outputs = Vec::with_capacity(self.outputs.len());
        for &o in &self.outputs {
            let len = self.buffers[o as usize].len();
            outputs.push(stdout.get(at..at + len).ok_or_else(short)?.to_vec());
            at += len;
        }
        if at != stdout.len() {
            return Err(HexagonError::Protocol(format!(
                "{} trailing bytes after the outputs",
                stdout.len() - at
            )));
        }
        Ok(Results { steps, outputs })
    }
}

/// The helper routines `qemu_harness` can check (`MRF1` function ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Helper {
    UDivSi3 = 0,
    DivSi3 = 1,
    UModSi3 = 2,
    ModSi3 = 3,
    UDivDi3 = 4,
    DivDi3 = 5,
    UModDi3 = 6,
    ModDi3 = 7,
    TruncF = 8,
    ExtendHfSf2 = 9,
    TruncSfHf2 = 10,
}

/// The `MRF1` message: apply `f` to each `(a, b)` pair (operands as raw bits in a u64).
pub fn encode_helper(f: Helper, pairs: &[(u64, u64)]) -> Result<Vec<u8>, HexagonError> {
    let mut out = b"MRF1".to_vec();
    put(&mut out, f as u32);
    put(&mut out, u32_of(pairs.len(), "vector count")?);
    for (a, b) in pairs {
        out.extend_from_slice(&a.to_le_bytes());
        out.extend_from_slice(&b.to_le_bytes());
    }
    Ok(out)
}

/// Results of an `MRF1` run.
pub fn decode_helper(stdout: &[u8], n: usize) -> Result<Vec<u64>, HexagonError> {
    if stdout.get(..4) != Some(b"MRF1".as_slice()) || stdout.len() != 4 + 8 * n {
        return Err(HexagonError::Protocol(format!(
            "helper answer of {} bytes, expected MRF1 + {n} results",
            stdout.len()
        )));
    }
    Ok(stdout[4..]
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched() -> Schedule<'static> {
        Schedule {
            libs: vec![b"lib"],
            buffers: vec![vec![1; 256], vec![2; 8]],
            steps: vec![
                Step::Launch {
                    lib: 0,
                    bufs: vec![BufArg {
                        buffer: 0,
                        offset: 128,
                        size: 128,
                    }],
                    vals: vec![7],
                },
                Step::Copy {
                    dst: 1,
                    dst_offset: 0,
                    src: 0,
                    src_offset: 4,
                    size: 8,
                },
            ],
            outputs: vec![1],
        }
    }

    #[test]
    fn encoding_layout() {
        let e = sched().encode().unwrap();
        let w = |i: usize| u32::from_le_bytes(e[i..i + 4].try_into().unwrap());
        assert_eq!(&e[..4], b"MRH1");
        assert_eq!((w(4), w(8)), (1, 3)); // one library of 3 bytes, padded to 4
        assert_eq!(&e[12..16], b"lib\0");
        assert_eq!((w(16), w(20), w(24)), (2, 256, 8));
        assert_eq!(w(28), 2); // steps
        let script = w(32) as usize;
        assert_eq!(script, (4 + 3) * 4 + 8 + 6 * 4);
        assert_eq!((w(36), w(40), w(44), w(48)), (0, 0, 1, 1)); // launch, lib 0, 1 buffer, 1 value
        assert_eq!((w(52), w(56), w(60)), (0, 128, 128));
        assert_eq!(e.len(), 36 + script + 256 + 8 + 8);
    }

    #[test]
    fn dsp_rules_are_enforced() {
        let mut s = sched();
        if let Step::Launch { bufs, .. } = &mut s.steps[0] {
            bufs[0].offset = 64;
        }
        assert!(s
            .encode()
            .unwrap_err()
            .to_string()
            .contains("128-byte aligned"));
        let mut s = sched();
        if let Step::Launch { bufs, .. } = &mut s.steps[0] {
            *bufs = vec![
                BufArg {
                    buffer: 1,
                    offset: 0,
                    size: 8
                };
                16
            ];
        }
        assert!(s.encode().unwrap_err().to_string().contains("16 buffers"));
        let mut s = sched();
        s.steps[1] = Step::Copy {
            dst: 1,
            dst_offset: 4,
            src: 0,
            src_offset: 0,
            size: 8,
        };
        assert!(s.encode().unwrap_err().to_string().contains("outside"));
    }

    #[test]
    fn answers_are_checked() {
        let s = sched();
        let mut a = b"MRR1".to_vec();
        a.extend_from_slice(&2u32.to_le_bytes());
        for v in [0u32, 1000, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] {
            a.extend_from_slice(&v.to_le_bytes());
        }
        a.extend_from_slice(&[9; 8]);
        let r = s.decode(&a).unwrap();
        assert_eq!(r.steps[0].instructions, 1000);
        assert_eq!(r.steps[0].timer_us, 1);
        assert_eq!(r.outputs, vec![vec![9; 8]]);
        assert!(s.decode(&a[..a.len() - 1]).is_err());
        a.push(0);
        assert!(s.decode(&a).is_err());
    }
}
