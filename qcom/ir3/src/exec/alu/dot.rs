//! Execution of the blob compiler's cat3 byte dot products `dp2acc`/`dp4acc` ([`ExtKind::Dot`],
//! docs/hw/adreno-kgsl-pm4.md §16.9), fiber by fiber on full registers.
use crate::exec::group::Group;
use crate::instr::*;

impl Group {
    /// `dp2acc`/`dp4acc` for the issued fibers.
    pub(in crate::exec) fn dot(&mut self, kind: ExtKind, lanes: &[u32]) {
        let ExtKind::Dot {
            four,
            mixed,
            high,
            sat,
            neg3,
            dst,
            src,
        } = kind
        else {
            return;
        };
        for &i in lanes {
            let [a, b, c] = src.map(|r| self.reg_raw(r, i, false));
            let v = dot((four, high), (mixed, sat, neg3), [a, b, c]);
            self.set_reg_raw(dst, i, v, false);
        }
    }
}

/// `dp2acc`/`dp4acc` on one fiber's register values (see [`ExtKind::Dot`]).
/// `shape` = (four, high), `mode` = (mixed, sat, neg3), `v` = the three source values.
fn dot(shape: (bool, bool), mode: (bool, bool, bool), v: [u32; 3]) -> u32 {
    let ((four, high), (mixed, sat, neg3), [a, b, c]) = (shape, mode, v);
    let bytes: &[usize] = match (four, high) {
        (true, _) => &[0, 1, 2, 3],
        (false, false) => &[0, 1],
        (false, true) => &[2, 3],
    };
    let byte = |v: u32, k: usize| (v >> (8 * k)) as u8;
    let mut sum: i64 = bytes
        .iter()
        .map(|&k| {
            let x = if mixed {
                byte(a, k) as i8 as i64
            } else {
                byte(a, k) as i64
            };
            x * byte(b, k) as i64
        })
        .sum();
    let acc = if mixed { c as i32 as i64 } else { c as i64 };
    sum += if neg3 { -acc } else { acc };
    match (sat, mixed) {
        (true, true) => sum.clamp(i32::MIN as i64, i32::MAX as i64) as u32,
        (true, false) => sum.clamp(0, u32::MAX as i64) as u32,
        _ => sum as u32,
    }
}
