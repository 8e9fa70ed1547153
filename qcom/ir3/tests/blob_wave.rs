//! Execution vectors for the wave-level blob forms (`getfiberid`, `movmsk`, `getone`, `getlast`, `shfl`,
//! `quad_shuffle`), local `inc`/`dec`/`cmpxchg` and global atomics, `resinfo` and the typed 1-D `ldib`
//! (docs/hw/adreno-kgsl-pm4.md §16.10). Programs are assembled from the field layouts of §16.9 (each word also
//! checked to print as Mesa prints it); expected values are written by hand from the ISA descriptions: Mesa's
//! XML docs (getlast: "jump for all fibers in the first cluster [of 8] with any active fibers, except for the
//! last fiber in the cluster"; shfl: Vulkan's subgroupShuffleXor/Up/Down and subgroupRotate; resinfo: "image
//! dimensions, 3 components"), the elect idiom getone serves (exactly one fiber per wave falls through), and a
//! 64-fiber wave.
use modelrt_ir3::{disasm_word, run, run_threads, GpuMemory, Image, Launch, Program, SharedMemory};

const OUT: u64 = 0x10_0000;
const WORDS: usize = 2048;

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
        Some(Box::new(View(&self.0)))
    }
}

/// [`Mem`] read-only, so dispatches may run their batches on several threads.
struct View<'a>(&'a [u8]);

impl SharedMemory for View<'_> {
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        let o = offset(self.0.len(), addr, out.len())?;
        out.copy_from_slice(&self.0[o..o + out.len()]);
        Ok(())
    }
    fn check_write(&self, addr: u64, len: usize) -> Result<(), String> {
        offset(self.0.len(), addr, len).map(|_| ())
    }
}

fn r(n: u64, c: u64) -> u64 {
    n * 4 + c
}
const F32: u64 = 1;
const U32: u64 = 3;
const U16: u64 = 2;
const S32: u64 = 5;
const END: u64 = 0b0110 << 55;
const BAR: u64 = 7 << 61 | 1 << 49 | 1 << 51 | 1 << 53;

fn mov_imm(ty: u64, dst: u64, v: u32) -> u64 {
    v as u64 | dst << 32 | ty << 46 | ty << 50 | 0b10 << 53 | 1 << 61
}
fn mov_c(dst: u64, c: u64) -> u64 {
    c | dst << 32 | U32 << 46 | U32 << 50 | 0b01 << 53 | 1 << 61
}
/// cat1 conversion from a GPR.
fn cov(src_ty: u64, dst_ty: u64, dst: u64, src: u64) -> u64 {
    src | dst << 32 | dst_ty << 46 | src_ty << 50 | 1 << 61
}
fn alu_ri(opc: u64, dst: u64, s: u64, imm: i64) -> u64 {
    s | (0b100 << 11 | (imm as u64 & 0x7FF)) << 16 | dst << 32 | 1 << 52 | opc << 53 | 2 << 61
}
const ADD_U: u64 = 0b010000;
const MULL_U: u64 = 0b110010;
fn jump(off: i32) -> u64 {
    off as u32 as u64 | 0b0010 << 55
}
/// `getone #off` (cat0 high group, opcode 5).
fn getone(off: i32) -> u64 {
    off as u32 as u64 | 1 << 49 | 5 << 55
}
/// `getlast.w8 #off` (cat0 high group, opcode 4, W = 2 → 2 << 2 = 8).
fn getlast(off: i32) -> u64 {
    off as u32 as u64 | 1 << 49 | 2 << 52 | 4 << 55
}
/// `movmsk.w(32·regs) dst` (cat1 bits 57–58 = 11, u32 → u32, REPEAT = regs − 1).
fn movmsk(dst: u64, regs: u64) -> u64 {
    1 << 61 | 3 << 57 | 0x033 << 46 | (regs - 1) << 40 | dst << 32
}
/// `getfiberid.u32 dst` (a6xx cat6 opcode 38, bits 22–23 set).
fn getfiberid(dst: u64) -> u64 {
    6 << 61 | 1 << 53 | U32 << 49 | dst << 32 | 0b1100 << 20 | 38 << 14
}
/// `shfl.MODE.TY dst, src, lane` (opcode 27 in bits 54–58, bit 53; lane immediate when `imm`).
fn shfl(mode: u64, ty: u64, dst: u64, src: u64, lane: u64, imm: bool) -> u64 {
    6 << 61
        | 27 << 54
        | 1 << 53
        | ty << 49
        | mode << 45
        | dst << 32
        | lane << 24
        | (imm as u64) << 23
        | src << 1
}
/// `quad_shuffle.MODE (u32)(x)dst, src[, idx]` (cat5 opcode 31 with bit 53, full sources).
fn quad(mode: u64, dst: u64, src: u64, idx: u64) -> u64 {
    5 << 61
        | 31 << 54
        | 1 << 53
        | U32 << 44
        | 1 << 40
        | dst << 32
        | mode << 19
        | idx << 9
        | src << 1
        | 1
}
/// `stg.a.u32 g[base + (idx << 2)], src, 1`.
fn stg_idx(base: u64, idx: u64, src: u64) -> u64 {
    src << 1
        | 1 << 23
        | 1 << 24
        | idx << 32
        | 1 << 40
        | base << 41
        | U32 << 49
        | 1 << 52
        | 3 << 54
        | 6 << 61
}
/// a3xx-layout atomic `atomic[.g].OP.untyped.1d.TY.1 dst, addr, src` (global when `g`).
fn atomic(opc: u64, ty: u64, g: bool, dst: u64, addr: u64, src: u64) -> u64 {
    6 << 61 | opc << 54 | (g as u64) << 52 | ty << 49 | dst << 32 | src << 24 | addr << 14 | 1
}
/// `stl.u32 l[addr + 0], src, 1` / `ldl.u32 dst, l[addr + 0], 1`.
fn stl(addr: u64, src: u64) -> u64 {
    src << 1 | 1 << 23 | 1 << 24 | 1 << 40 | addr << 41 | U32 << 49 | 4 << 54 | 6 << 61
}
fn ldl(dst: u64, addr: u64) -> u64 {
    1 | addr << 14 | 1 << 23 | 1 << 24 | dst << 32 | U32 << 49 | 1 << 54 | 6 << 61
}
/// `resinfo.b.untyped.{d}d.u32.1.imm dst, slot`.
fn resinfo(d: u64, dst: u64, slot: u64) -> u64 {
    6 << 61 | 1 << 53 | U32 << 49 | slot << 41 | dst << 32 | 0b0110 << 20 | 15 << 14 | (d - 1) << 9
}
/// `ldib.b.typed.1d.TY.4.imm dst, coord, slot`.
fn ldib1d(ty: u64, dst: u64, coord: u64, slot: u64) -> u64 {
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
}

/// r(reg).xy ← OUT + byte (c0.x = OUT, c0.y = 0).
fn addr_in(reg: u64, byte: i64) -> [u64; 2] {
    [alu_ri(ADD_U, reg, 1 << 12, byte), mov_c(reg + 1, 1)]
}

/// Appends "dword[base_dw + k·128 + lid] = src_k" for each source register and `end` (lid in r0.x).
fn store(mut p: Vec<u64>, srcs: &[u64]) -> Vec<u64> {
    // The immediates are 11-bit signed: the base moves on by 512 bytes per column.
    p.extend(addr_in(r(40, 0), 0));
    for (k, &s) in srcs.iter().enumerate() {
        if k > 0 {
            p.push(alu_ri(ADD_U, r(40, 0), r(40, 0), 512));
        }
        p.push(stg_idx(r(40, 0), r(0, 0), s));
    }
    p.push(END);
    p
}

/// Runs `words` on work groups of `local` fibers (`groups` of them along x); memory starts as `init`.
fn exec(
    words: &[u64],
    local: u32,
    groups: u32,
    init: &[u32],
    uavs: &[Image],
) -> Result<Vec<u32>, String> {
    exec_tex(words, (local, groups), init, uavs, (&[], &[]))
}

/// `exec` with textures and sampler descriptors.
fn exec_tex(
    words: &[u64],
    (local, groups): (u32, u32),
    init: &[u32],
    uavs: &[Image],
    (textures, samplers): (&[Image], &[[u32; 4]]),
) -> Result<Vec<u32>, String> {
    let image: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let prog = Program::decode("wave", &image)?;
    let mut c = vec![OUT as u32, 0, 0, 0];
    c.resize(1024, 0);
    let mut mem = Mem(vec![0u8; WORDS * 4]);
    for (k, v) in init.iter().enumerate() {
        mem.0[4 * k..4 * k + 4].copy_from_slice(&v.to_le_bytes());
    }
    let launch = Launch {
        consts: &c,
        groups: [groups, 1, 1],
        local: [local, 1, 1],
        wgid_reg: Some(192),
        lid_reg: Some(0),
        textures,
        uavs,
        samplers,
        shared_bytes: 256,
    };
    run(&prog, &launch, &mut mem)?;
    Ok(mem
        .0
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect())
}

fn col(out: &[u32], k: usize, n: usize) -> Vec<u32> {
    out[128 * k..128 * k + n].to_vec()
}

#[test]
fn the_assembled_words_print_as_mesa_prints_them() {
    // Texts from the blob vectors (qcom/ir3/tests/data) for the same field values, and the forms built here.
    for (w, text) in [
        (getone(20), "getone #20"),
        (getlast(4), "getlast.w8 #4"),
        (movmsk(r(48, 0), 4), "movmsk.w128 r48.x"),
        (getfiberid(r(0, 1)), "getfiberid.u32 r0.y"),
        (
            shfl(2, U32, r(1, 2), r(0, 0), 5, true),
            "shfl.up.u32 r1.z, r0.x, 5",
        ),
        (
            shfl(1, U32, r(1, 1), r(1, 0), 63, true),
            "shfl.xor.u32 r1.y, r1.x, 63",
        ),
        (
            shfl(2, U16, r(5, 3), r(3, 0), r(48, 0), false),
            "shfl.up.u16 hr5.w, hr3.x, r48.x",
        ),
        (
            quad(0, r(1, 3), r(0, 0), r(0, 2)),
            "quad_shuffle.brcst (u32)(x)r1.w, r0.x, r0.z",
        ),
        (
            quad(3, r(1, 0), r(0, 0), 0),
            "quad_shuffle.diag (u32)(x)r1.x, r0.x",
        ),
        (
            atomic(16, U32, true, r(0, 2), r(0, 0), r(0, 2)),
            "atomic.g.add.untyped.1d.u32.1.g r0.z, r0.x, r0.z",
        ),
        (
            atomic(21, U32, false, r(1, 0), r(2, 0), r(3, 0)),
            "atomic.cmpxchg.untyped.1d.u32.1.l r1.x, l[r2.x], r3.x",
        ),
        (
            resinfo(2, r(0, 0), 0),
            "resinfo.b.untyped.2d.u32.1.imm r0.x, 0",
        ),
        (
            ldib1d(F32, r(0, 0), r(0, 3), 1),
            "ldib.b.typed.1d.f32.4.imm r0.x, r0.w, 1",
        ),
    ] {
        assert_eq!(disasm_word(w), text, "{w:016x}");
        Program::decode("k", &w.to_le_bytes()).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
}

#[test]
fn getfiberid_is_the_index_in_a_64_fiber_wave() {
    let out = exec(
        &store(vec![getfiberid(r(1, 0))], &[r(1, 0)]),
        80,
        1,
        &[],
        &[],
    )
    .unwrap();
    let want: Vec<u32> = (0..80).map(|l| l % 64).collect();
    assert_eq!(col(&out, 0, 80), want);
}

#[test]
fn movmsk_sets_one_bit_per_executing_fiber_of_the_wave() {
    // 80 fibers: wave 0 = fibers 0–63 (all bits of r1.x, r1.y), wave 1 = fibers 64–79 (its 16 lowest bits).
    let p = store(
        vec![movmsk(r(1, 0), 4)],
        &[r(1, 0), r(1, 1), r(1, 2), r(1, 3)],
    );
    let out = exec(&p, 80, 1, &[], &[]).unwrap();
    for l in 0..80 {
        let want = if l < 64 {
            [!0, !0, 0, 0]
        } else {
            [0xFFFF, 0, 0, 0]
        };
        let got = [0, 1, 2, 3].map(|k| out[128 * k + l]);
        assert_eq!(got, want, "fiber {l}");
    }
}

#[test]
fn getlast_jumps_all_of_the_first_cluster_but_its_last_fiber() {
    // r1.x = 0xdead; getlast.w8 #3 → the fall-through fibers set r1.x = 1 and run movmsk.w64 r2.x.
    // 20 fibers: cluster 0 = fibers 0–7 jumps except fiber 7; fibers 8–19 (other clusters) fall through.
    let p = store(
        vec![
            mov_imm(U32, r(1, 0), 0xdead),
            mov_imm(U32, r(2, 0), 0xdead),
            getlast(4),
            mov_imm(U32, r(1, 0), 1),
            movmsk(r(2, 0), 2),
            mov_imm(U32, r(2, 1), 0),
        ],
        &[r(1, 0), r(2, 0), r(2, 1)],
    );
    let out = exec(&p, 20, 1, &[], &[]).unwrap();
    let want: Vec<u32> = (0..20).map(|l| if l < 7 { 0xdead } else { 1 }).collect();
    assert_eq!(col(&out, 0, 20), want);
    // Only fibers 7…19 executed the movmsk: bits 7–19.
    let want: Vec<u32> = (0..20)
        .map(|l| if l < 7 { 0xdead } else { 0x000F_FF80 })
        .collect();
    assert_eq!(col(&out, 1, 20), want);
}

#[test]
fn getone_lets_exactly_one_fiber_of_each_wave_fall_through() {
    // The elect idiom: r1.x = 0; getone #2; r1.x = 1; (target) store.
    let p = store(
        vec![
            mov_imm(U32, r(1, 0), 0),
            getone(2),
            mov_imm(U32, r(1, 0), 1),
        ],
        &[r(1, 0)],
    );
    let out = exec(&p, 80, 1, &[], &[]).unwrap();
    let c = col(&out, 0, 80);
    assert!(c.iter().all(|&v| v <= 1));
    assert_eq!(c[..64].iter().sum::<u32>(), 1, "wave 0 elects one fiber");
    assert_eq!(c[64..].iter().sum::<u32>(), 1, "wave 1 elects one fiber");
    // The loop idiom (Mesa's subgroup scan): each pass one fiber of each wave leaves, the others go round again,
    // so a wave of k fibers makes its fibers pass the header 1, 2, …, k times.
    //   0: add.u r1.x, r1.x, 1   1: getone #2   2: jump #2 (the elected fiber leaves)   3: jump #-3   4: store
    let p = store(
        vec![
            mov_imm(U32, r(1, 0), 0),
            alu_ri(ADD_U, r(1, 0), r(1, 0), 1),
            getone(2),
            jump(2),
            jump(-3),
        ],
        &[r(1, 0)],
    );
    let out = exec(&p, 80, 1, &[], &[]).unwrap();
    let mut w0 = col(&out, 0, 64);
    let mut w1 = out[64..80].to_vec();
    w0.sort();
    w1.sort();
    assert_eq!(w0, (1..=64).collect::<Vec<u32>>());
    assert_eq!(w1, (1..=16).collect::<Vec<u32>>());
}

/// r1.x = 3·lid + 100 (the value each fiber offers to the shuffles).
fn offer() -> Vec<u64> {
    vec![
        alu_ri(MULL_U, r(1, 0), r(0, 0), 3),
        alu_ri(ADD_U, r(1, 0), r(1, 0), 100),
    ]
}
fn v(id: usize) -> u32 {
    3 * id as u32 + 100
}

#[test]
fn shfl_follows_vulkan_shuffle_and_rotate_within_the_wave() {
    let mut p = offer();
    p.extend([
        shfl(1, U32, r(2, 0), r(1, 0), 5, true), // xor 5
        shfl(2, U32, r(2, 1), r(1, 0), 3, true), // up 3
        mov_imm(U32, r(3, 0), 2),
        shfl(3, U32, r(2, 2), r(1, 0), r(3, 0), false), // down by r3.x = 2
        shfl(7, U32, r(2, 3), r(1, 0), 5, true),        // rdown 5 = rotate
        shfl(6, U32, r(3, 1), r(1, 0), 5, true),        // rup 5 = rotate by −5
        // 16-bit: hr4.x = low half of r1.x, shfl.xor.u16 hr4.y, hr4.x, 1, widened back into r3.z.
        cov(U32, U16, r(4, 0), r(1, 0)),
        shfl(1, U16, r(4, 1), r(4, 0), 1, true),
        cov(U16, U32, r(3, 2), r(4, 1)),
    ]);
    let p = store(p, &[r(2, 0), r(2, 1), r(2, 2), r(2, 3), r(3, 1), r(3, 2)]);
    let out = exec(&p, 64, 1, &[], &[]).unwrap();
    for id in 0..64usize {
        let got = |k: usize| out[128 * k + id];
        assert_eq!(got(0), v(id ^ 5), "xor, fiber {id}");
        if id >= 3 {
            assert_eq!(got(1), v(id - 3), "up, fiber {id}");
        }
        if id + 2 < 64 {
            assert_eq!(got(2), v(id + 2), "down, fiber {id}");
        }
        assert_eq!(got(3), v((id + 5) % 64), "rdown, fiber {id}");
        assert_eq!(got(4), v((id + 64 - 5) % 64), "rup, fiber {id}");
        assert_eq!(got(5), v(id ^ 1), "xor.u16, fiber {id}");
    }
    // The second wave of an 80-fiber group shuffles among its own fibers (64…79), never with wave 0.
    let mut p = offer();
    p.push(shfl(1, U32, r(2, 0), r(1, 0), 5, true));
    let out = exec(&store(p, &[r(2, 0)]), 80, 1, &[], &[]).unwrap();
    for (l, got) in out.iter().enumerate().take(80).skip(64) {
        assert_eq!(*got, v(64 + ((l - 64) ^ 5)), "fiber {l}");
    }
}

#[test]
fn quad_shuffle_reads_within_groups_of_four_fibers() {
    let mut p = offer();
    p.extend([
        mov_imm(U32, r(3, 0), 2),
        quad(0, r(2, 0), r(1, 0), r(3, 0)), // brcst from quad fiber 2
        quad(1, r(2, 1), r(1, 0), 0),       // horiz: id ^ 1
        quad(2, r(2, 2), r(1, 0), 0),       // vert: id ^ 2
        quad(3, r(2, 3), r(1, 0), 0),       // diag: id ^ 3
    ]);
    let out = exec(
        &store(p, &[r(2, 0), r(2, 1), r(2, 2), r(2, 3)]),
        16,
        1,
        &[],
        &[],
    )
    .unwrap();
    for id in 0..16usize {
        let got = [0, 1, 2, 3].map(|k| out[128 * k + id]);
        assert_eq!(
            got,
            [v(id & !3 | 2), v(id ^ 1), v(id ^ 2), v(id ^ 3)],
            "fiber {id}"
        );
    }
}

/// Every fiber of one 8-fiber work group runs the local atomic `opc` on l[0] = `init` with src = r3.x = a(lid),
/// r3.y = b(lid); returns (final word, old values).
fn local_rmw(opc: u64, init: u32, a: i64, b: i64) -> (u32, Vec<u32>) {
    let p = vec![
        mov_imm(U32, r(5, 0), 0),
        mov_imm(U32, r(6, 0), init),
        stl(r(5, 0), r(6, 0)),
        BAR,
        alu_ri(ADD_U, r(3, 0), r(0, 0), a),
        mov_imm(U32, r(3, 1), b as u32),
        atomic(opc, U32, false, r(1, 0), r(5, 0), r(3, 0)),
        BAR,
        ldl(r(1, 1), r(5, 0)),
    ];
    let out = exec(&store(p, &[r(1, 0), r(1, 1)]), 8, 1, &[], &[]).unwrap();
    (out[128], col(&out, 0, 8))
}

#[test]
fn local_inc_dec_and_cmpxchg() {
    let sorted = |mut v: Vec<u32>| {
        v.sort();
        v
    };
    // inc: 8 fibers from 5 → 13, the olds are 5…12 once each; dec: 5 → 5 − 8 (wraps), olds 5, 4, …, −2.
    let (fin, old) = local_rmw(19, 5, 0, 0);
    assert_eq!(fin, 13);
    assert_eq!(sorted(old), (5..13).collect::<Vec<u32>>());
    let (fin, old) = local_rmw(20, 5, 0, 0);
    assert_eq!(fin, 5u32.wrapping_sub(8));
    assert_eq!(
        sorted(old),
        sorted((0..8).map(|k| 5u32.wrapping_sub(k)).collect())
    );
    // cmpxchg with the pair (new = lid + 100, compare = 7) on l[0] = 7: exactly one fiber finds 7 and swaps in
    // its value; every later fiber finds that value and leaves it.
    let (fin, old) = local_rmw(21, 7, 100, 7);
    let winners: Vec<usize> = (0..8).filter(|&l| old[l] == 7).collect();
    assert_eq!(winners.len(), 1, "{old:?}");
    assert_eq!(fin, 100 + winners[0] as u32);
    assert!(old.iter().all(|&o| o == 7 || o == fin));
    // A compare value no fiber finds: nothing changes.
    let (fin, old) = local_rmw(21, 7, 100, 8);
    assert_eq!((fin, old), (7, vec![7; 8]));
}

/// Two work groups of 4 fibers run global `atomic.g.OP` on dword 256 (= `init`) with src = r3.x = a(lid),
/// r3.y = b; returns (final word, old values of the 8 fibers).
fn global_rmw(opc: u64, ty: u64, init: u32, a: i64, b: u32) -> (u32, Vec<u32>) {
    let mut p = addr_in(r(5, 0), 512).to_vec();
    p.extend([
        alu_ri(ADD_U, r(5, 0), r(5, 0), 512),
        alu_ri(ADD_U, r(3, 0), r(0, 0), a),
        mov_imm(U32, r(3, 1), b),
        atomic(opc, ty, true, r(1, 0), r(5, 0), r(3, 0)),
        // Each work group stores its olds at dwords 4·wg + lid.
        alu_ri(MULL_U, r(6, 0), r(48, 0), 4),
        alu_ri(ADD_U, r(6, 0), r(6, 0), 0),
    ]);
    // r6.x += lid (add.u with a register source).
    p.push(r(0, 0) << 16 | r(6, 0) | r(6, 0) << 32 | 1 << 52 | ADD_U << 53 | 2 << 61);
    p.extend(addr_in(r(40, 0), 0));
    p.extend([stg_idx(r(40, 0), r(6, 0), r(1, 0)), END]);
    let mut init_mem = vec![0u32; 256];
    init_mem.push(init);
    let out = exec(&p, 4, 2, &init_mem, &[]).unwrap();
    (out[256], out[..8].to_vec())
}

#[test]
fn global_atomics_update_one_word_across_work_groups() {
    // add lid + 1 from 1000: final 1000 + 2·(1 + 2 + 3 + 4); the olds are 8 distinct running sums.
    let (fin, mut old) = global_rmw(16, U32, 1000, 1, 0);
    assert_eq!(fin, 1020);
    old.sort();
    old.dedup();
    assert_eq!(old.len(), 8);
    assert!(old.iter().all(|o| (1000..1020).contains(o)));
    // max.s32 of lid − 2 against −5: the largest operand, 1; unsigned max of the same bits: −1 = 0xFFFFFFFF.
    assert_eq!(global_rmw(23, S32, -5i32 as u32, -2, 0).0, 1);
    assert_eq!(global_rmw(23, U32, -5i32 as u32, -2, 0).0, 0xFFFF_FFFF);
    // inc: 8 fibers from 0.
    assert_eq!(global_rmw(19, U32, 0, 0, 0).0, 8);
    // cmpxchg (new = lid + 50, compare = 3) on 3: one fiber wins.
    let (fin, old) = global_rmw(21, U32, 3, 50, 3);
    assert_eq!(old.iter().filter(|&&o| o == 3).count(), 1, "{old:?}");
    assert!((50..54).contains(&fin));
}

#[test]
fn a_global_atomic_outside_every_object_is_a_gpu_fault() {
    let p = vec![
        mov_imm(U32, r(5, 0), 0x1000),
        mov_imm(U32, r(5, 1), 0),
        atomic(16, U32, true, r(1, 0), r(5, 0), r(3, 0)),
        END,
    ];
    let err = exec(&p, 4, 1, &[], &[]).unwrap_err();
    assert!(
        err.contains("atomic.g.add")
            && err.contains("GPU fault in fiber 0")
            && err.contains("0x1000"),
        "{err}"
    );
}

#[test]
fn resinfo_gives_the_uav_dimensions_and_ldib_1d_reads_row_zero() {
    // A 5x2 RGBA32F UAV at dword 512 (pitch 80): texel (x, y) = (x, 10·y, −x, 0.25).
    let mut init = vec![0u32; 512];
    for y in 0..2 {
        for x in 0..5 {
            init.extend([x as f32, 10.0 * y as f32, -(x as f32), 0.25].map(f32::to_bits));
        }
    }
    let img = Image {
        base: OUT + 2048,
        width: 5,
        height: 2,
        pitch: 80,
        half: false,
    };
    let p = store(
        vec![resinfo(2, r(1, 0), 1), ldib1d(F32, r(2, 0), r(0, 0), 1)],
        &[
            r(1, 0),
            r(1, 1),
            r(1, 2),
            r(2, 0),
            r(2, 1),
            r(2, 2),
            r(2, 3),
        ],
    );
    let dummy = Image {
        width: 1,
        height: 1,
        ..img
    };
    let out = exec(&p, 6, 1, &init, &[dummy, img]).unwrap();
    for l in 0..6usize {
        let got: Vec<u32> = (0..7).map(|k| out[128 * k + l]).collect();
        let texel = if l < 5 {
            [l as f32, 0.0, -(l as f32), 0.25]
        } else {
            [0.0; 4]
        };
        let mut want = vec![5, 2, 1];
        want.extend(texel.map(f32::to_bits));
        assert_eq!(got, want, "fiber {l}");
    }
}

#[test]
fn the_blob_forms_left_unexecuted_are_refused_by_name() {
    // From the blob vectors: brac (no public description of its condition), ldc (UBO state the model does not
    // keep), a bindless resinfo; each refused at load with kernel, offset and text.
    for (w, text) in [
        (0x00800063_0000001e_u64, "brac.3 #30"),
        (0xc0260000_00478000, "ldc.offset0.1.imm r0.x, r0.x, 0"),
        (
            0xc0260000_0063c300,
            "resinfo.b.untyped.2d.u32.1.imm.base0 r0.x, 0",
        ),
    ] {
        let mut img = 0u64.to_le_bytes().to_vec();
        img.extend(w.to_le_bytes());
        let err = Program::decode("k_blob", &img).unwrap_err();
        assert_eq!(
            err,
            format!(
                "kernel k_blob: instruction 1 (byte offset 0x8): `{text}` is not executed by the IR3 interpreter \
                 yet (docs/hw/adreno-kgsl-pm4.md §16.9)"
            )
        );
    }
}

/// Prints `word<TAB>text` for mutations of this file's forms that the decoder accepts
/// (`cargo test --test blob_wave -- --ignored --nocapture dump_mutations`), for checking against Mesa's own
/// disassembler (`tests/mesa_disasm.py`): every accepted word must print as Mesa prints it.
#[test]
#[ignore]
fn dump_mutations() {
    let seeds = [
        getone(20),
        getlast(4),
        movmsk(r(48, 0), 4),
        getfiberid(r(0, 1)),
        shfl(2, U32, r(1, 2), r(0, 0), 5, true),
        shfl(6, U16, r(5, 3), r(3, 0), r(48, 0), false),
        quad(0, r(1, 3), r(0, 0), r(0, 2)),
        quad(3, r(1, 0), r(0, 0), 0),
        atomic(16, U32, true, r(0, 2), r(0, 0), r(0, 2)),
        atomic(21, U32, false, r(1, 0), r(2, 0), r(3, 0)),
        resinfo(2, r(0, 0), 0),
        ldib1d(F32, r(0, 0), r(0, 3), 1),
        0xa0c01f04_0cc00005,
        0xa0c00f00_04400002,
    ];
    let mut x = 0x2545_F491_4F6C_DD1D_u64;
    for s in seeds {
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // Flip one to three random bits of the seed.
            let w = s
                ^ 1 << (x % 64)
                ^ (x >> 8 & 1) << ((x >> 16) % 64)
                ^ (x >> 9 & 1) << ((x >> 24) % 64);
            if Program::decode("m", &w.to_le_bytes()).is_ok() {
                println!("{w:016x}\t{}", disasm_word(w));
            }
        }
    }
}

/// Prints, for every blob vector, whether the loader accepts it (`cargo test --test blob_wave -- --ignored
/// --nocapture classify_vectors`): the figures of docs/hw/adreno-kgsl-pm4.md §16.10.
#[test]
#[ignore]
fn classify_vectors() {
    let tsv = include_str!("data/ir3-a6xx-blob-vectors.tsv");
    for line in tsv.lines().filter(|l| !l.starts_with('#')) {
        let mut f = line.split('\t');
        let (hex, text) = (f.next().unwrap_or(""), f.next().unwrap_or(""));
        let w = u64::from_str_radix(&hex.replace('_', ""), 16).unwrap_or(0);
        let verdict = match Program::decode("v", &w.to_le_bytes()) {
            Ok(_) => "executed".to_string(),
            Err(e) if e.contains("graphics-only") => "graphics-only".to_string(),
            Err(_) => "refused".to_string(),
        };
        println!("{verdict}\t{text}");
    }
}

/// `sam (TY)(MASK)dst, coord, s#samp, t#tex` (cat5 opcode 3, full coordinates; bit 18 clear as in the blob's).
fn sam(ty: u64, mask: u64, dst: u64, coord: u64, samp: u64, tex: u64) -> u64 {
    5 << 61 | 3 << 54 | ty << 44 | mask << 40 | dst << 32 | tex << 25 | samp << 21 | coord << 1 | 1
}

/// A 4x2 RGBA32F texture at dword 512 (pitch 64): texel (x, y) = (x + 10·y, 100 + x, −1, 0.5).
fn tex4x2() -> (Vec<u32>, Image) {
    let mut init = vec![0u32; 512];
    for y in 0..2 {
        for x in 0..4 {
            init.extend([(x + 10 * y) as f32, 100.0 + x as f32, -1.0, 0.5].map(f32::to_bits));
        }
    }
    let img = Image {
        base: OUT + 2048,
        width: 4,
        height: 2,
        pitch: 64,
        half: false,
    };
    (init, img)
}

/// Each fiber samples at coordinates (c0.z + lid·c0.w, c1.x) — constants set per test — and stores r2.xyzw.
fn sample(
    coords: [f32; 3],
    ty: u64,
    samplers: &[[u32; 4]],
    n: u32,
) -> Result<Vec<[u32; 4]>, String> {
    let (init, img) = tex4x2();
    // r4.x = (float)lid · step + x0, r4.y = y (mov from immediates; cov.u32f32 for lid; mad via mul/add.f).
    let [x0, step, y] = coords;
    const MUL_F: u64 = 0b000011;
    const ADD_F: u64 = 0;
    let p = vec![
        cov(U32, F32, r(5, 0), r(0, 0)),
        mov_imm(F32, r(6, 0), step.to_bits()),
        // mul.f r5.x, r5.x, r6.x; add.f r4.x, r5.x, r6.y (= x0)
        r(5, 0) | r(6, 0) << 16 | r(5, 0) << 32 | 1 << 52 | MUL_F << 53 | 2 << 61,
        mov_imm(F32, r(6, 1), x0.to_bits()),
        r(5, 0) | r(6, 1) << 16 | r(4, 0) << 32 | 1 << 52 | ADD_F << 53 | 2 << 61,
        mov_imm(F32, r(4, 1), y.to_bits()),
        sam(ty, 0xF, r(2, 0), r(4, 0), 0, 0),
    ];
    let half = ty == 0;
    let srcs: Vec<u64> = if half {
        // Widen the four half results into r3.xyzw (cov.f16f32).
        vec![r(3, 0), r(3, 1), r(3, 2), r(3, 3)]
    } else {
        vec![r(2, 0), r(2, 1), r(2, 2), r(2, 3)]
    };
    let mut p = p;
    if half {
        for c in 0..4 {
            p.push(cov(0, F32, r(3, c), r(2, c)));
        }
    }
    let out = exec_tex(&store(p, &srcs), (n, 1), &init, &[], (&[img], samplers))?;
    Ok((0..n as usize)
        .map(|l| [0, 1, 2, 3].map(|k| out[128 * k + l]))
        .collect())
}

fn rgba(v: [f32; 4]) -> [u32; 4] {
    v.map(f32::to_bits)
}

#[test]
fn sam_reads_texels_as_its_sampler_says() {
    // The KGSL model's sampler (§8.4): nearest, unnormalised, clamp to border (zero). Fiber l samples
    // (l − 0.5, 1.7): texel (l − 1, 1), lid 0 is left of the image and lid 5 right of it.
    let border = [[0x1B60, 0x30, 0, 0]];
    let got = sample([-0.5, 1.0, 1.7], F32, &border, 6).unwrap();
    for (l, t) in got.iter().enumerate() {
        let want = if (1..5).contains(&l) {
            let x = (l - 1) as f32;
            [x + 10.0, 100.0 + x, -1.0, 0.5]
        } else {
            [0.0; 4]
        };
        assert_eq!(*t, rgba(want), "fiber {l}");
    }
    // Normalised coordinates, REPEAT (descriptor all zero): u = (l + 0.5)/4 + 1 wraps to texel l; v = 0.25 → row 0.
    let got = sample([1.125, 0.25, 0.25], F32, &[[0, 0, 0, 0]], 4).unwrap();
    for (l, t) in got.iter().enumerate() {
        assert_eq!(
            *t,
            rgba([l as f32, 100.0 + l as f32, -1.0, 0.5]),
            "fiber {l}"
        );
    }
    // Bilinear (XY_MAG = XY_MIN = 1), unnormalised, clamp to edge (WRAP_S/T/R = 1): at (1.75 + l, 2.0) the
    // four texels are x = 1 + l, 2 + l (weights 0.75, 0.25) and rows 1 and 2 → 1 (weights 0.5, 0.5).
    let linear = [[0x2 | 0x8 | 0x20 | 0x100 | 0x800, 0x20, 0, 0]];
    let got = sample([1.75, 1.0, 2.0], F32, &linear, 3).unwrap();
    for (l, t) in got.iter().enumerate() {
        let x = |i: usize| (i.min(3)) as f32;
        let r = 0.75 * x(1 + l) + 0.25 * x(2 + l) + 10.0;
        assert_eq!(*t, rgba([r, 90.0 + r, -1.0, 0.5]), "fiber {l}");
    }
    // (f16) results: the same bilinear value rounded to binary16 (101.25 and 11.25 are exact in it).
    let got = sample([1.75, 1.0, 2.0], 0, &linear, 1).unwrap();
    assert_eq!(got[0], rgba([11.25, 101.25, -1.0, 0.5]));
    // A mirrored wrap mode is refused with the sampler named.
    let err = sample([0.0, 0.0, 0.0], F32, &[[2 << 5, 0x20, 0, 0]], 1).unwrap_err();
    assert!(
        err.contains("sam") && err.contains("mirrored wrap modes are not modelled"),
        "{err}"
    );
    // A sampler slot with no descriptor.
    let err = sample([0.0, 0.0, 0.0], F32, &[], 1).unwrap_err();
    assert!(err.contains("sampler s#0 is not bound"), "{err}");
}

#[test]
fn the_blob_sam_vectors_execute() {
    // `sam (f32)(xyzw)r1.x, r0.z, s#6, t#6` and `sam (f16)(xyzw)hr0.x, hr0.y, s#2, t#2` from the vectors decode as
    // executable; the builder above produces the first one's fields.
    assert_eq!(sam(F32, 0xF, r(1, 0), r(0, 2), 6, 6), 0xa0c01f04_0cc00005);
    for w in [0xa0c01f04_0cc00005u64, 0xa0c00f00_04400002] {
        Program::decode("k", &w.to_le_bytes()).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn sam_s2en_takes_sampler_and_texture_per_fiber_from_half_registers() {
    // Textures: 0 = the 4x2 image, 1 = its second row as a 4x1 image. hr8.x = sampler 0 (nearest, unnormalised,
    // border), hr8.y = lid & 1; each fiber samples (lid + 0.5, 0.5): texel (lid, 0) of texture lid & 1.
    let (init, img) = tex4x2();
    let row1 = Image {
        base: img.base + 64,
        height: 1,
        ..img
    };
    const AND_B: u64 = 0b011100;
    const ADD_F: u64 = 0;
    let s2en = |nonuniform: bool| {
        5 << 61
            | 3 << 54
            | 1 << 51
            | F32 << 44
            | 0xF << 40
            | r(2, 0) << 32
            | (if nonuniform { 4 } else { 0 }) << 29
            | r(8, 0) << 21
            | r(4, 0) << 1
            | 1
    };
    for nonuniform in [false, true] {
        let p = vec![
            mov_imm(U16, r(8, 0), 0),
            alu_ri(AND_B, r(7, 0), r(0, 0), 1),
            cov(U32, U16, r(8, 1), r(7, 0)),
            cov(U32, F32, r(5, 0), r(0, 0)),
            mov_imm(F32, r(6, 0), 0.5f32.to_bits()),
            // add.f r4.x, r5.x, r6.x; r4.y = 0.5
            r(5, 0) | r(6, 0) << 16 | r(4, 0) << 32 | 1 << 52 | ADD_F << 53 | 2 << 61,
            mov_imm(F32, r(4, 1), 0.5f32.to_bits()),
            s2en(nonuniform),
        ];
        let text = disasm_word(s2en(nonuniform));
        assert!(text.starts_with("sam.s2en."), "{text}");
        let out = exec_tex(
            &store(p, &[r(2, 0), r(2, 1)]),
            (4, 1),
            &init,
            &[],
            (&[img, row1], &[[0x1B60, 0x30, 0, 0]]),
        )
        .unwrap();
        for l in 0..4usize {
            let y = (l & 1) as f32;
            let x = l as f32;
            assert_eq!(
                [out[l], out[128 + l]],
                [(x + 10.0 * y).to_bits(), (100.0 + x).to_bits()],
                "{text}, fiber {l}"
            );
        }
    }
}

#[test]
fn a_shader_with_a_global_atomic_runs_its_work_groups_in_order_even_with_threads() {
    // 24 work groups of 64 fibers (three batches of 512) each add 1 to one word: 1536 whatever the thread count.
    // (Run on separate threads, each batch would see the word as the dispatch began and the last log would win.)
    let mut p = addr_in(r(5, 0), 0).to_vec();
    p.extend([
        mov_imm(U32, r(3, 0), 1),
        atomic(16, U32, true, r(1, 0), r(5, 0), r(3, 0)),
        END,
    ]);
    let image: Vec<u8> = p.iter().flat_map(|w| w.to_le_bytes()).collect();
    let prog = Program::decode("count", &image).unwrap();
    let mut c = vec![OUT as u32, 0, 0, 0];
    c.resize(1024, 0);
    for threads in [1, 3] {
        let mut mem = Mem(vec![0u8; 64]);
        let launch = Launch {
            consts: &c,
            groups: [24, 1, 1],
            local: [64, 1, 1],
            wgid_reg: None,
            lid_reg: Some(0),
            textures: &[],
            uavs: &[],
            samplers: &[],
            shared_bytes: 0,
        };
        run_threads(&prog, &launch, &mut mem, threads).unwrap();
        assert_eq!(
            u32::from_le_bytes([mem.0[0], mem.0[1], mem.0[2], mem.0[3]]),
            1536,
            "{threads} threads"
        );
    }
}

/// `stib.b.typed.{d}d.TY.4.imm src, coord, slot`.
fn stib(d: u64, ty: u64, src: u64, coord: u64, slot: u64) -> u64 {
    6 << 61
        | 1 << 53
        | ty << 49
        | slot << 41
        | src << 32
        | coord << 24
        | 0b110 << 20
        | 29 << 14
        | 3 << 12
        | 1 << 11
        | (d - 1) << 9
}

#[test]
fn stib_1d_writes_row_zero_and_drops_stores_outside() {
    // A 3x2 RGBA32F UAV at dword 512 (pitch 48), zero. Fiber l stores (l, 2l, −l, 7) at x = l: fibers 0–2 land
    // in row 0, fiber 3 is outside and dropped; row 1 stays zero.
    let img = Image {
        base: OUT + 2048,
        width: 3,
        height: 2,
        pitch: 48,
        half: false,
    };
    const MUL_F: u64 = 0b000011;
    let p = vec![
        cov(U32, F32, r(4, 0), r(0, 0)),
        mov_imm(F32, r(6, 0), 2.0f32.to_bits()),
        r(4, 0) | r(6, 0) << 16 | r(4, 1) << 32 | 1 << 52 | MUL_F << 53 | 2 << 61,
        mov_imm(F32, r(6, 1), (-1.0f32).to_bits()),
        r(4, 0) | r(6, 1) << 16 | r(4, 2) << 32 | 1 << 52 | MUL_F << 53 | 2 << 61,
        mov_imm(F32, r(4, 3), 7.0f32.to_bits()),
        stib(1, F32, r(4, 0), r(0, 0), 0),
        END,
    ];
    assert_eq!(disasm_word(p[6]), "stib.b.typed.1d.f32.4.imm r4.x, r0.x, 0");
    let out = exec(&p, 4, 1, &[], &[img]).unwrap();
    let texels: Vec<[f32; 4]> = out[512..512 + 24]
        .chunks_exact(4)
        .map(|t| [0, 1, 2, 3].map(|c| f32::from_bits(t[c])))
        .collect();
    for (k, t) in texels.iter().enumerate() {
        let want = if k < 3 {
            let l = k as f32;
            [l, 2.0 * l, -l, 7.0]
        } else {
            [0.0; 4]
        };
        assert_eq!(*t, want, "texel {k}");
    }
}
