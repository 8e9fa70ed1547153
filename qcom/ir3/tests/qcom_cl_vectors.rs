//! Vectors for the instructions Qualcomm's OpenCL compiler emits that the interpreter executes as described in
//! docs/hw/adreno-kgsl-pm4.md §16.11. The instruction under test is always a real word taken from openpilot's
//! Qualcomm-compiled warp kernels (`qcom/testdata/qcom-cl/`, byte offsets in the kernel's image given),
//! surrounded by `mov`s that set its inputs and `stg`s that store its outputs, assembled here from Mesa's field
//! layout (§16.3). Expected values are worked out by hand from the semantics §16.11 states, never by running the
//! interpreter.
use modelrt_ir3::{disasm_word, run, GpuMemory, Launch, Program};

const OUT: u64 = 0x10_0000;

/// One 4 KiB GPU object at [`OUT`].
struct Mem(Vec<u8>);

impl Mem {
    fn at(&mut self, addr: u64, len: usize) -> Result<&mut [u8], String> {
        let o = addr
            .checked_sub(OUT)
            .filter(|o| o + len as u64 <= self.0.len() as u64)
            .ok_or_else(|| format!("address {addr:#x} outside the test object"))?
            as usize;
        Ok(&mut self.0[o..o + len])
    }
}

impl GpuMemory for Mem {
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        out.copy_from_slice(self.at(addr, out.len())?);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        self.at(addr, data.len())?.copy_from_slice(data);
        Ok(())
    }
}

/// Register number of rN.c / hrN.c.
fn r(n: u64, c: u64) -> u64 {
    n * 4 + c
}
const U16: u64 = 2;
const U32: u64 = 3;
const END: u64 = 0b0110 << 55;
/// `mov.TT dst, #v` (cat1 immediate; a 16-bit type writes a half register).
fn mov_imm(ty: u64, dst: u64, v: u32) -> u64 {
    v as u64 | dst << 32 | ty << 46 | ty << 50 | 0b10 << 53 | 1 << 61
}
/// `cov.u16u32 dst, hsrc`: a half register widened into a full one.
fn widen(dst: u64, hsrc: u64) -> u64 {
    hsrc | dst << 32 | U32 << 46 | U16 << 50 | 1 << 61
}
/// `stg.u32 g[addr], src, 1`.
fn stg32(addr: u64, src: u64) -> u64 {
    src << 1 | 1 << 23 | 1 << 24 | 1 << 40 | addr << 41 | U32 << 49 | 0b00011 << 54 | 6 << 61
}
/// Store full register `reg` to output dword `k` (address pair in r40.xy).
fn store(k: u32, reg: u64) -> [u64; 3] {
    [
        mov_imm(U32, r(40, 0), OUT as u32 + 4 * k),
        mov_imm(U32, r(40, 1), 0),
        stg32(r(40, 0), reg),
    ]
}
/// Set full register `reg` to `v`.
fn set(reg: u64, v: u32) -> u64 {
    mov_imm(U32, reg, v)
}

/// Run `words` then `end` on one fiber with constant dwords `consts` (index = dword) and the object's bytes
/// `init`; the object afterwards.
fn exec(words: &[u64], consts: &[(usize, u32)], init: &[(usize, u8)]) -> Vec<u8> {
    let image: Vec<u8> = words
        .iter()
        .chain(&[END])
        .flat_map(|w| w.to_le_bytes())
        .collect();
    let prog = Program::decode("qcom_cl_vector", &image).unwrap();
    let mut c = vec![0u32; 1024];
    for &(i, v) in consts {
        c[i] = v;
    }
    let mut mem = Mem(vec![0u8; 4096]);
    for &(o, b) in init {
        mem.0[o] = b;
    }
    let launch = Launch {
        consts: &c,
        groups: [1, 1, 1],
        local: [1, 1, 1],
        wgid_reg: None,
        lid_reg: None,
        wgsize_reg: None,
        wgoffset_reg: None,
        textures: &[],
        uavs: &[],
        samplers: &[],
        ubos: &[],
        bindless: [0; 5],
        shared_bytes: 1024,
        items: None,
    };
    run(&prog, &launch, &mut mem).unwrap();
    mem.0
}

fn dword(mem: &[u8], k: usize) -> u32 {
    u32::from_le_bytes([mem[4 * k], mem[4 * k + 1], mem[4 * k + 2], mem[4 * k + 3]])
}

/// The kernels' word prints as Mesa prints it (the text the listings in §16.11 quote).
fn word(w: u64, text: &str) -> u64 {
    assert_eq!(disasm_word(w), text);
    w
}

#[test]
fn sad_s32_is_a_three_input_add() {
    // E_131072_3 +0x8: the source's idx0*3.
    let w = word(0x6780_0006_0000_0000, "sad.s32 r1.z, r0.x, r0.x, r0.x");
    for (x, want) in [
        (7u32, 21u32),
        (0x7FFF_FFFF, 0x7FFF_FFFD),
        (0xFFFF_FFFF, 0xFFFF_FFFD),
    ] {
        let mut p = vec![set(r(0, 0), x), w];
        p.extend(store(0, r(1, 2)));
        assert_eq!(dword(&exec(&p, &[], &[]), 0), want, "3·{x:#x}");
    }
    // E_131072_3 +0xa8: an address high word = base_hi − sign + carry (|a − b| + c would give 0x11 for the
    // first case and 0x12 for the second).
    let w = word(
        0x6782_8001_4009_1055,
        "sad.s32 r0.y, c21.y, (neg)r1.y, r2.y",
    );
    for (sign, carry, want) in [(1u32, 0u32, 0x0Fu32), (1, 1, 0x10), (0, 1, 0x11)] {
        let mut p = vec![set(r(1, 1), sign), set(r(2, 1), carry), w];
        p.extend(store(0, r(0, 1)));
        assert_eq!(dword(&exec(&p, &[(85, 0x10)], &[]), 0), want);
    }
}

#[test]
fn sel_s32_selects_on_the_sign() {
    // E_960_480_3 +0x3e8: (i < 0) ? i + n : i with n already added into r1.y.
    let w = word(
        0x6580_8801_0005_8001,
        "(nop3) sel.s32 r0.y, r0.y, r0.y, r1.y",
    );
    for (i, want) in [(0u32, 0u32), (7, 7), (0xFFFF_FFFB, 99), (0x8000_0000, 99)] {
        let mut p = vec![set(r(0, 1), i), set(r(1, 1), 99), w];
        p.extend(store(0, r(0, 1)));
        assert_eq!(dword(&exec(&p, &[], &[]), 0), want, "i = {i:#x}");
    }
}

#[test]
fn ei_add_u_halves_the_33_bit_sum() {
    // E_128_64_4 +0x478: (lo + mid) >> 1 without losing the carry.
    let w = word(0x4210_8016_0011_0015, "add.u (ei)r5.z, r5.y, r4.y");
    for (a, b, want) in [
        (0xFFFF_FFFFu32, 3u32, 0x8000_0001u32),
        (10, 4, 7),
        (0xFFFF_FFFF, 0xFFFF_FFFF, 0xFFFF_FFFF),
    ] {
        let mut p = vec![set(r(5, 1), a), set(r(4, 1), b), w];
        p.extend(store(0, r(5, 2)));
        assert_eq!(dword(&exec(&p, &[], &[]), 0), want);
    }
}

#[test]
fn mad_u16_into_a_full_register_reads_full_registers() {
    // E_128_64_4 +0x460: lo16(c28.y) · lo16(r2.w) + r5.y; the half registers of the same names hold junk.
    let w = word(0x6005_c015_0015_1071, "mad.u16 r5.y, hc28.y, hr2.w, hr5.y");
    let mut p = vec![
        set(r(2, 3), 0x0003_0005),
        set(r(5, 1), 0x1234),
        mov_imm(U16, r(2, 3), 0x7777),
        mov_imm(U16, r(5, 1), 0x7777),
        w,
    ];
    p.extend(store(0, r(5, 1)));
    // 0xf011 · 5 + 0x1234 = 0x4b055 + 0x1234.
    assert_eq!(dword(&exec(&p, &[(113, 0x10FE_F011)], &[]), 0), 0x4_C289);
}

#[test]
fn u8_32_loads_and_stores_move_half_registers() {
    // E_131072_3 +0x188: the loaded byte lands in hr1.x; r1.x (an address of the next load) is kept.
    let w = word(0xC00E_0004_0180_8001, "ldg.u8_32 r1.x, g[r0.z], 1");
    let mut p = vec![
        set(r(0, 2), OUT as u32 + 0x800),
        set(r(0, 3), 0),
        set(r(1, 0), 0x1234_5678),
        w,
    ];
    p.push(widen(r(3, 0), r(1, 0)));
    p.extend(store(0, r(3, 0)));
    p.extend(store(1, r(1, 0)));
    let m = exec(&p, &[], &[(0x800, 0xAB)]);
    assert_eq!((dword(&m, 0), dword(&m, 1)), (0xAB, 0x1234_5678));
    // E_131072_3 +0x250: the stored byte comes from hr0.z, not r0.z.
    let w = word(0xC0CE_0100_0180_0004, "stg.u8_32 g[r0.x], r0.z, 1");
    let p = vec![
        set(r(0, 0), OUT as u32 + 0x900),
        set(r(0, 1), 0),
        set(r(0, 2), 0x11),
        mov_imm(U16, r(0, 2), 0xCD),
        w,
    ];
    assert_eq!(exec(&p, &[], &[])[0x900], 0xCD);
}

#[test]
fn cov_s32f32_even_rounds_to_nearest_even() {
    // E_960_480_3 +0x28.
    let w = word(0x2094_400F_0000_000E, "cov.s32f32 (even)r3.w, r3.z");
    for (i, want) in [
        (-7i32, -7.0f32),
        (16_777_217, 16_777_216.0),
        (16_777_219, 16_777_220.0),
        (i32::MIN, -2_147_483_648.0),
    ] {
        let mut p = vec![set(r(3, 2), i as u32), w];
        p.extend(store(0, r(3, 3)));
        assert_eq!(dword(&exec(&p, &[], &[]), 0), want.to_bits(), "{i}");
    }
}
