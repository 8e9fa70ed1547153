//! Execution vectors for the blob-compiler forms the interpreter runs beyond Mesa's subset (see
//! docs/hw/adreno-kgsl-pm4.md §16.9): `ldg.a`/`stg.a` address forms, `ldlw`/`stlw` local memory and local atomics.
//! Programs are assembled here from the field layout of §16.9; expected values follow from the ISA semantics
//! (address = base + ((index << SHIFT) + OFF) << element-size shift; an atomic returns the old word and leaves
//! OP(old, operand)), computed by hand below, not by running the interpreter.
use modelrt_ir3::{run, GpuMemory, Image, Launch, Program, SharedMemory};

const OUT: u64 = 0x10_0000;
const WORDS: usize = 1024;

struct Mem(Vec<u8>);

fn offset(size: usize, addr: u64, len: usize) -> Result<usize, String> {
    let o = addr
        .checked_sub(OUT)
        .filter(|o| o + len as u64 <= size as u64);
    Ok(o.ok_or_else(|| format!("address {addr:#x} outside the test object"))? as usize)
}

impl GpuMemory for Mem {
    fn read(&mut self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        let o = offset(self.0.len(), addr, out.len())?;
        out.copy_from_slice(&self.0[o..o + out.len()]);
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        let o = offset(self.0.len(), addr, data.len())?;
        self.0[o..o + data.len()].copy_from_slice(data);
        Ok(())
    }
    fn shared_view(&self) -> Option<Box<dyn SharedMemory + '_>> {
        None
    }
}

fn r(n: u64, c: u64) -> u64 {
    n * 4 + c
}
const U16: u64 = 2;
const U32: u64 = 3;
const S32: u64 = 5;
const U8: u64 = 6;
const F32: u64 = 1;
const END: u64 = 0b0110 << 55;
/// cat7 `bar` with `.l` and `.w`.
const BAR: u64 = 7 << 61 | 1 << 49 | 1 << 51 | 1 << 53;

/// cat1 `mov` of an immediate (`ty` → `ty`).
fn mov_imm(ty: u64, dst: u64, v: u32) -> u64 {
    v as u64 | dst << 32 | ty << 46 | ty << 50 | 0b10 << 53 | 1 << 61
}
/// cat1 `mov.u32u32 dst, cN` (constant component N).
fn mov_c(dst: u64, c: u64) -> u64 {
    c | dst << 32 | U32 << 46 | U32 << 50 | 0b01 << 53 | 1 << 61
}
/// cat2 full-precision op with a GPR and an immediate source.
fn alu_ri(opc: u64, dst: u64, s: u64, imm: i64) -> u64 {
    s | (0b100 << 11 | (imm as u64 & 0x7FF)) << 16 | dst << 32 | 1 << 52 | opc << 53 | 2 << 61
}
const ADD_U: u64 = 0b010000;
const MULL_U: u64 = 0b110010;

/// `ldg.a.TY dst, g[base + ((idx << shift) + off) << ts], size` (bit 0, idx 1–8, OFF 9–10, SHIFT 12–13, base
/// 14–21, bits 22 and 23 set, SIZE 24–26, DST 32–39, TYPE 49–51, opcode 0).
fn ldg_a(ty: u64, dst: u64, base: u64, idx: u64, shift: u64, off: u64, size: u64) -> u64 {
    1 | idx << 1
        | off << 9
        | shift << 12
        | base << 14
        | 1 << 22
        | 1 << 23
        | size << 24
        | dst << 32
        | ty << 49
        | 6 << 61
}
/// `stg.a.TY g[base + …], src, size` (value 1–8, OFF 9–10, SHIFT 12–13, bit 23, SIZE 24–26, index 32–39, bit
/// 40, base 41–48, TYPE 49–51, bit 52 set, opcode 3).
fn stg_a(ty: u64, base: u64, idx: u64, shift: u64, off: u64, src: u64, size: u64) -> u64 {
    src << 1
        | off << 9
        | shift << 12
        | 1 << 23
        | size << 24
        | idx << 32
        | 1 << 40
        | base << 41
        | ty << 49
        | 1 << 52
        | 3 << 54
        | 6 << 61
}
/// `ldlw`/`ldl` (opcode 10 / 1): bit 0, OFF 1–13, address 14–21, bit 23, SIZE 24–31, DST 32–39.
fn ld_local(opc: u64, dst: u64, addr: u64, off: u64, size: u64) -> u64 {
    1 | off << 1 | addr << 14 | 1 << 23 | size << 24 | dst << 32 | U32 << 49 | opc << 54 | 6 << 61
}
/// `stlw`/`stl` (opcode 11 / 4): value 1–8, OFF_HI 9–13, bit 23, SIZE 24–31, OFF_LO 32–39, bit 40, address 41–48.
fn st_local(opc: u64, addr: u64, off: u64, src: u64) -> u64 {
    src << 1
        | (off >> 8) << 9
        | 1 << 23
        | 1 << 24
        | (off & 0xFF) << 32
        | 1 << 40
        | addr << 41
        | U32 << 49
        | opc << 54
        | 6 << 61
}
/// Local atomic `atomic.OP.untyped.1d.TY.1.l dst, l[addr], src` (bit 0, address 14–21, operand 24–31, DST 32–39).
fn atomic_l(opc: u64, ty: u64, dst: u64, addr: u64, src: u64) -> u64 {
    1 | addr << 14 | src << 24 | dst << 32 | ty << 49 | opc << 54 | 6 << 61
}

/// r2.xy ← the address OUT + `byte` (c0.x = OUT, c0.y = 0).
fn addr_in(reg: u64, byte: i64) -> [u64; 2] {
    [alu_ri(ADD_U, reg, 1 << 12, byte), mov_c(reg + 1, 1)]
}

/// Run `words` on `lanes` fibers of one work group; memory starts as `init` (dwords); returns all dwords.
fn exec(words: &[u64], lanes: u32, init: &[u32]) -> Result<Vec<u32>, String> {
    exec_uavs(words, lanes, init, &[])
}

fn exec_uavs(words: &[u64], lanes: u32, init: &[u32], uavs: &[Image]) -> Result<Vec<u32>, String> {
    let image: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let prog = Program::decode("blob", &image)?;
    let mut c = vec![OUT as u32, 0, 0, 0];
    c.resize(1024, 0);
    let mut mem = Mem(vec![0u8; WORDS * 4]);
    for (k, v) in init.iter().enumerate() {
        mem.0[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
    }
    let launch = Launch {
        consts: &c,
        groups: [1, 1, 1],
        local: [lanes, 1, 1],
        wgid_reg: Some(192),
        lid_reg: Some(0),
        wgsize_reg: None,
        wgoffset_reg: None,
        textures: &[],
        uavs,
        samplers: &[],
        ubos: &[],
        bindless: [0; 5],
        shared_bytes: 256,
        items: None,
    };
    run(&prog, &launch, &mut mem)?;
    Ok(mem
        .0
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

/// `ldib.b.typed.2d.TY.4.imm dst, coord, slot` (a6xx UAV form: bit 53, opcode 6 in bits 14–19, bits 20–22 =
/// 110, typed bit 11, dimensions − 1 in 9–10, components − 1 in 12–13, coordinate 24–31, value 32–39, slot 41–48).
fn ldib(ty: u64, dst: u64, coord: u64, slot: u64) -> u64 {
    6 << 61
        | 1 << 53
        | ty << 49
        | slot << 41
        | dst << 32
        | coord << 24
        | 0b110 << 20
        | 6 << 14
        | 3 << 12
        | 1 << 11
        | 1 << 9
}

/// Appends "dword[OUT_DW + lid] = r1.x; dword[OUT_DW + 16 + lid] = r1.y" with plain `stg` and `end`.
fn store_r1xy(mut p: Vec<u64>, out_dw: i64) -> Vec<u64> {
    p.extend(addr_in(r(2, 0), 4 * out_dw));
    p.extend([
        stg_a(U32, r(2, 0), r(0, 0), 0, 0, r(1, 0), 1),
        alu_ri(ADD_U, r(2, 0), r(2, 0), 64),
        stg_a(U32, r(2, 0), r(0, 0), 0, 0, r(1, 1), 1),
        END,
    ]);
    p
}

#[test]
fn ldg_a_scales_index_and_offset_by_the_element_size() {
    // d[k] = 1000 + k from dword 64. ldg.a.u32 r1.x, g[base + (((lid << 1) + 3) << 2)]: d[2·lid + 3];
    // ldg.a.u32 with SHIFT 0, OFF 1: d[lid + 1].
    let init: Vec<u32> = (0..64)
        .map(|_| 0)
        .chain((0..64).map(|k| 1000 + k))
        .collect();
    let mut p = addr_in(r(3, 0), 256).to_vec();
    p.extend([
        ldg_a(U32, r(1, 0), r(3, 0), r(0, 0), 1, 3, 1),
        ldg_a(U32, r(1, 1), r(3, 0), r(0, 0), 0, 1, 1),
    ]);
    let out = exec(&store_r1xy(p, 0), 4, &init).unwrap();
    assert_eq!(&out[..4], &[1003, 1005, 1007, 1009]);
    assert_eq!(&out[16..20], &[1001, 1002, 1003, 1004]);
}

#[test]
fn ldg_a_u16_and_stg_a_u8_use_two_and_one_byte_units() {
    // Halfwords h[k] = 0x4000 + k from byte 256: ldg.a.u16 hr4.x, g[base + ((lid << 2) + 1) << 1] = h[4·lid + 1];
    // widened by storing it with stg.a.u8 (low byte) at byte 4·lid + 1 of dword lid: dword = (low byte) << 8.
    let mut init = vec![0u32; 64];
    init.extend((0..64).map(|k| (0x4000 + 2 * k) | (0x4000 + 2 * k + 1) << 16));
    let mut p = addr_in(r(3, 0), 256).to_vec();
    p.extend(addr_in(r(2, 0), 0));
    p.extend([
        ldg_a(U16, r(4, 0), r(3, 0), r(0, 0), 2, 1, 1),
        alu_ri(MULL_U, r(5, 0), r(0, 0), 4),
        stg_a(U8, r(2, 0), r(5, 0), 0, 1, r(4, 0), 1),
        END,
    ]);
    let out = exec(&p, 4, &init).unwrap();
    let want: Vec<u32> = (0..4).map(|l| ((4 * l + 1) & 0xFF) << 8).collect();
    assert_eq!(&out[..4], &want[..]);
}

#[test]
fn stg_a_f32_writes_at_the_scaled_address() {
    // stg.a.f32 g[base + (((lid << 1) + 3) << 2)], r4.x with r4.x = lid·7 (a bit pattern; the type only sizes it).
    let mut p = addr_in(r(2, 0), 0).to_vec();
    p.extend([
        alu_ri(MULL_U, r(4, 0), r(0, 0), 7),
        stg_a(F32, r(2, 0), r(0, 0), 1, 3, r(4, 0), 1),
        END,
    ]);
    let out = exec(&p, 4, &[]).unwrap();
    for l in 0..4u32 {
        assert_eq!(out[(2 * l + 3) as usize], 7 * l);
    }
    assert_eq!(out[0], 0);
}

#[test]
fn ldlw_and_stlw_are_work_group_local_memory() {
    // stlw.u32 l[8·lid + 8], 100 + lid; ldlw.u32 r1.x, l[8·lid + 8]; ldl.u32 r1.y from the same address.
    let p = store_r1xy(
        vec![
            alu_ri(MULL_U, r(5, 0), r(0, 0), 8),
            alu_ri(ADD_U, r(4, 0), r(0, 0), 100),
            st_local(11, r(5, 0), 8, r(4, 0)),
            ld_local(10, r(1, 0), r(5, 0), 8, 1),
            ld_local(1, r(1, 1), r(5, 0), 8, 1),
        ],
        0,
    );
    let out = exec(&p, 4, &[]).unwrap();
    assert_eq!(&out[..4], &[100, 101, 102, 103]);
    assert_eq!(&out[16..20], &[100, 101, 102, 103]);
}

/// Every fiber applies `atomic.OP` with operand `operand(lid)` to l[0] = `init`; returns (final word as each
/// fiber reads it after `bar`, the old values the fibers got).
fn atomic_run(opc: u64, ty: u64, init: u32, operands: &[u32]) -> (Vec<u32>, Vec<u32>) {
    let n = operands.len();
    let mut p = vec![mov_imm(U32, r(5, 0), 0), mov_imm(U32, r(4, 0), init)];
    p.push(st_local(4, r(5, 0), 0, r(4, 0)));
    p.push(BAR);
    // r4.x = operand of this fiber, read from dwords 64.. of memory.
    p.extend(addr_in(r(3, 0), 256));
    p.push(ldg_a(U32, r(4, 0), r(3, 0), r(0, 0), 0, 0, 1));
    p.push(atomic_l(opc, ty, r(1, 1), r(5, 0), r(4, 0)));
    p.push(BAR);
    p.push(ld_local(1, r(1, 0), r(5, 0), 0, 1));
    let mut init_mem = vec![0u32; 64];
    init_mem.extend_from_slice(operands);
    let out = exec(&store_r1xy(p, 0), n as u32, &init_mem).unwrap();
    (out[..n].to_vec(), out[16..16 + n].to_vec())
}

#[test]
fn local_atomics_return_the_old_word_and_combine_every_operand() {
    let ops = [5u32, 7, 11, 13];
    let sorted = |mut v: Vec<u32>| {
        v.sort();
        v
    };
    // add: final = 1000 + 36; the olds are the running sums before each fiber's turn, so old + operand is the
    // next one and the largest old + its operand is the final word.
    let (fin, old) = atomic_run(16, U32, 1000, &ops);
    assert_eq!(fin, vec![1036; 4]);
    assert!(old.iter().all(|&o| (1000..1036).contains(&o)));
    let mut ends: Vec<u32> = old.iter().zip(ops).map(|(o, v)| o + v).collect();
    ends.sort();
    let mut starts = sorted(old.clone());
    starts.remove(0);
    starts.push(1036);
    assert_eq!(
        ends, starts,
        "each fiber's old + operand is the next fiber's old"
    );
    // sub wraps: 10 − 36.
    let (fin, _) = atomic_run(17, U32, 10, &ops);
    assert_eq!(fin, vec![10u32.wrapping_sub(36); 4]);
    // xchg: the olds and the final word are the initial word and the operands, each once.
    let (fin, old) = atomic_run(18, U32, 99, &ops);
    let mut all = old.clone();
    all.push(fin[0]);
    assert_eq!(sorted(all), vec![5, 7, 11, 13, 99]);
    // min/max: unsigned vs signed on −2 (0xFFFF_FFFE).
    let neg = [3u32, 0xFFFF_FFFE, 9, 1];
    assert_eq!(atomic_run(22, U32, 50, &neg).0[0], 1);
    assert_eq!(atomic_run(22, S32, 50, &neg).0[0], 0xFFFF_FFFE);
    assert_eq!(atomic_run(23, U32, 50, &neg).0[0], 0xFFFF_FFFE);
    assert_eq!(atomic_run(23, S32, 50, &neg).0[0], 50);
    // and/or/xor.
    let bitsv = [0b1010u32, 0b0110, 0b1000, 0b0001];
    assert_eq!(atomic_run(24, U32, 0xFF, &bitsv).0[0], 0);
    assert_eq!(atomic_run(25, U32, 0x100, &bitsv).0[0], 0x10F);
    // 1010 ^ 0110 = 1100, ^ 1000 = 0100, ^ 0001 = 0101.
    assert_eq!(atomic_run(26, U32, 0, &bitsv).0[0], 0b0101);
}

#[test]
fn ldib_typed_2d_reads_the_rgba_texel_and_zeros_outside() {
    // A 3x2 RGBA32F UAV at dword 256 (pitch 48 bytes): texel (x, y) = (x + 10·y, 100 + x, −1, 0.5).
    let mut init = vec![0u32; 256];
    for y in 0..2 {
        for x in 0..3 {
            init.extend([(x + 10 * y) as f32, 100.0 + x as f32, -1.0, 0.5].map(f32::to_bits));
        }
    }
    let img = Image {
        base: OUT + 1024,
        width: 3,
        height: 2,
        pitch: 48,
        half: false,
    };
    // r6.x = lid, r6.y = 1; ldib.b.typed.2d.f32.4.imm r1.x, r6.x, 0 → r1.xyzw = texel (lid, 1); lid 3 is outside.
    let p = store_r1xy(
        vec![
            alu_ri(ADD_U, r(6, 0), r(0, 0), 0),
            mov_imm(U32, r(6, 1), 1),
            ldib(F32, r(1, 0), r(6, 0), 0),
        ],
        0,
    );
    let out = exec_uavs(&p, 4, &init, &[img]).unwrap();
    let want_x: Vec<u32> = [10.0f32, 11.0, 12.0, 0.0].map(f32::to_bits).to_vec();
    let want_y: Vec<u32> = [100.0f32, 101.0, 102.0, 0.0].map(f32::to_bits).to_vec();
    assert_eq!(&out[..4], &want_x[..]);
    assert_eq!(&out[16..20], &want_y[..]);
    // An unbound slot is an error, not a read of something else.
    let p = store_r1xy(vec![ldib(F32, r(1, 0), r(6, 0), 5)], 0);
    let e = exec_uavs(&p, 1, &init, &[img]).unwrap_err();
    assert!(e.contains("UAV 5 is not bound"), "{e}");
}

/// `dp4acc`/`dp2acc` (cat3 alternative group, opcode 13): src1 bits 0–7, bit 13 set, bit 14 `.mixed`, src3
/// bits 16–23, bit 30 `.high`, bit 31 negates src3, DST 32–39, bit 42 `(sat)`, bit 46 dp4acc, src2 47–54.
fn dot(four: bool, mixed: bool, high: bool, neg3: bool, sat: bool) -> u64 {
    let (s1, s2, s3) = (r(4, 0), r(4, 1), r(4, 2));
    s1 | 1 << 13
        | (mixed as u64) << 14
        | s3 << 16
        | (high as u64) << 30
        | (neg3 as u64) << 31
        | r(1, 0) << 32
        | (sat as u64) << 42
        | (four as u64) << 46
        | s2 << 47
        | 13 << 55
        | 3 << 61
}

/// r1.x of one fiber after `op` with r4.x = a, r4.y = b, r4.z = c.
fn dot_run(op: u64, a: u32, b: u32, c: u32) -> u32 {
    let p = store_r1xy(
        vec![
            mov_imm(U32, r(4, 0), a),
            mov_imm(U32, r(4, 1), b),
            mov_imm(U32, r(4, 2), c),
            op,
        ],
        0,
    );
    exec(&p, 1, &[]).unwrap()[0]
}

#[test]
fn dp4acc_and_dp2acc_are_byte_dot_products_plus_the_accumulator() {
    // Unsigned: bytes (1, 2, 3, 4)·(5, 6, 7, 8) = 70, + 100.
    assert_eq!(
        dot_run(
            dot(true, false, false, false, false),
            0x0403_0201,
            0x0807_0605,
            100
        ),
        170
    );
    // (neg) on the accumulator: 70 − 100 wraps.
    assert_eq!(
        dot_run(
            dot(true, false, false, true, false),
            0x0403_0201,
            0x0807_0605,
            100
        ),
        (-30i32) as u32
    );
    // Mixed: src1 bytes signed (1, −2, 2, −1), src2 unsigned (13, 12, 11, 10): 13 − 24 + 22 − 10 = 1, + 5.
    let (a, b) = (0xFF02_FE01, 0x0A0B_0C0D);
    assert_eq!(dot_run(dot(true, true, false, false, false), a, b, 5), 6);
    // dp2acc: low bytes 13 − 24 = −11, + 5 = −6; high bytes 22 − 10 = 12, + 5 = 17.
    assert_eq!(
        dot_run(dot(false, true, false, false, false), a, b, 5),
        (-6i32) as u32
    );
    assert_eq!(dot_run(dot(false, true, true, false, false), a, b, 5), 17);
    // (sat): unsigned 70 + 0xFFFF_FFF0 clamps to 0xFFFF_FFFF; without it the sum wraps to 54.
    assert_eq!(
        dot_run(
            dot(true, false, false, false, true),
            0x0403_0201,
            0x0807_0605,
            0xFFFF_FFF0
        ),
        u32::MAX
    );
    assert_eq!(
        dot_run(
            dot(true, false, false, false, false),
            0x0403_0201,
            0x0807_0605,
            0xFFFF_FFF0
        ),
        54
    );
}
