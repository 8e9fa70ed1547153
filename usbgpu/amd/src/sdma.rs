//! SDMA 6 packet encoders for the copy ring (docs/hw/amd-driver.md §9.2): header low byte = opcode,
//! bits 15:8 =
//! sub-opcode.

/// COPY_LINEAR (op 1, sub 0).
pub const OP_COPY: u32 = 1;
/// WRITE (op 2, untiled).
pub const OP_WRITE: u32 = 2;
/// FENCE (op 5).
pub const OP_FENCE: u32 = 5;
/// TRAP (op 6).
pub const OP_TRAP: u32 = 6;
/// POLL_REGMEM (op 8).
pub const OP_POLL_REGMEM: u32 = 8;
/// TIMESTAMP (op 13, sub 2 = get global timestamp).
pub const OP_TIMESTAMP: u32 = 13;
/// Largest COPY_LINEAR (bytes) on SDMA ≥ 5.
pub const COPY_MAX: u64 = 1 << 30;
/// POLL_REGMEM compare functions.
pub const FUNC_EQ: u32 = 3;
/// Greater or equal.
pub const FUNC_GEQ: u32 = 5;

/// Append a COPY_LINEAR of `len` (1..=1 GiB) bytes.
pub fn copy_linear(out: &mut Vec<u32>, dst: u64, src: u64, len: u64) {
    debug_assert!((1..=COPY_MAX).contains(&len));
    out.extend_from_slice(&[
        OP_COPY,
        (len - 1) as u32 & 0x3FFF_FFFF,
        0,
        src as u32,
        (src >> 32) as u32,
        dst as u32,
        (dst >> 32) as u32,
    ]);
}

/// Append copies of any length (split at 1 GiB).
pub fn copy(out: &mut Vec<u32>, dst: u64, src: u64, len: u64) {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(COPY_MAX);
        copy_linear(out, dst + done, src + done, n);
        done += n;
    }
}

/// Append a WRITE of one dword.
pub fn write32(out: &mut Vec<u32>, dst: u64, value: u32) {
    out.extend_from_slice(&[OP_WRITE, dst as u32, (dst >> 32) as u32, 0, value]);
}

/// Append a WRITE of one qword.
pub fn write64(out: &mut Vec<u32>, dst: u64, value: u64) {
    out.extend_from_slice(&[
        OP_WRITE,
        dst as u32,
        (dst >> 32) as u32,
        1,
        value as u32,
        (value >> 32) as u32,
    ]);
}

/// Append a FENCE writing `value` to `addr` (mtype 3).
pub fn fence(out: &mut Vec<u32>, addr: u64, value: u32) {
    out.extend_from_slice(&[
        OP_FENCE | (3 << 16),
        addr as u32,
        (addr >> 32) as u32,
        value,
    ]);
}

/// Append a TRAP.
pub fn trap(out: &mut Vec<u32>) {
    out.extend_from_slice(&[OP_TRAP, 0]);
}

/// Append a POLL_REGMEM on memory: wait until `(mem & mask) func reference`.
pub fn poll_mem(out: &mut Vec<u32>, addr: u64, reference: u32, mask: u32, func: u32) {
    out.extend_from_slice(&[
        OP_POLL_REGMEM | (func << 28) | (1 << 31),
        addr as u32,
        (addr >> 32) as u32,
        reference,
        mask,
        4 | (0xFFF << 16),
    ]);
}

/// Append a TIMESTAMP (global) written to `addr`.
pub fn timestamp(out: &mut Vec<u32>, addr: u64) {
    out.extend_from_slice(&[OP_TIMESTAMP | (2 << 8), addr as u32, (addr >> 32) as u32]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_have_the_fact_sheet_layout() {
        let mut v = Vec::new();
        copy_linear(&mut v, 0x2_0000_0010, 0x20_0000, 0x3FFFC);
        assert_eq!(v, [1, 0x3FFFB, 0, 0x20_0000, 0, 0x10, 2]);
        v.clear();
        poll_mem(&mut v, 0x1000, 0x5100_0001, !0, FUNC_EQ);
        assert_eq!(v[0], 0xB000_0008);
        assert_eq!(v[5], 0x0FFF_0004);
        v.clear();
        fence(&mut v, 0x40, 7);
        assert_eq!(v, [0x0003_0005, 0x40, 0, 7]);
        v.clear();
        copy(&mut v, 0, 0, (1 << 30) + 8);
        assert_eq!(v.len(), 14);
        assert_eq!(v[1], 0x3FFF_FFFF);
        assert_eq!(v[8], 7);
    }
}
