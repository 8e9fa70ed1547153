//! Execution vectors for the wave-level blob forms (`getfiberid`, `movmsk`, `getone`, `getlast`, `shfl`,
//! `quad_shuffle`) on a 64-fiber wave (docs/hw/adreno-kgsl-pm4.md §16.10), the check that every instruction
//! builder of `blob_asm` prints as Mesa prints the same fields, the refusals that remain, and two dumps behind the `dumps` feature
//! (mutated words for Mesa's disassembler, the verdict on each blob vector). Expected values are written by hand
//! from the ISA descriptions: Mesa's XML docs (getlast: "jump for all fibers in the first cluster [of 8] with any
//! active fibers, except for the last fiber in the cluster"; shfl: Vulkan's subgroupShuffleXor/Up/Down and
//! subgroupRotate), the elect idiom getone serves (exactly one fiber per wave falls through), quads of 4 fibers.
mod blob_asm;
use blob_asm::*;
use modelrt_ir3::{disasm_word, Program};

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

#[test]
fn the_blob_forms_left_unexecuted_are_refused_by_name() {
    // From the blob vectors: brac (no public description of its condition), a bindless sam with per-fiber
    // indices (their register layout is not documented) and getspid (a hardware placement id); each refused at
    // load with kernel, offset and text.
    for (w, text) in [
        (0x00800063_0000001e_u64, "brac.3 #30"),
        (
            0xa0c81f00_40000005_u64,
            "sam.s2en.nonuniform.base0 (f32)(xyzw)r0.x, r0.z, r0.x",
        ),
        (0xc0260004_00490000, "getspid.u32 r1.x"),
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
/// (`cargo test -p modelrt-ir3 --features dumps --test blob_wave -- --nocapture dump_mutations`), for checking against Mesa's own
/// disassembler (`tests/mesa_disasm.py`): every accepted word must print as Mesa prints it.
#[cfg(feature = "dumps")]
#[test]
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
        // §16.12–§16.14: the blob's ldc, ldc.k, ldg.k, stc, bindless/buffer UAV, sam and cat7 words.
        0xc0260000_00478200,
        0xc0260201_00c78080,
        0xc02600c1_00c7a900,
        0xc0360003_00c78100,
        0xc0160188_00b01261,
        0xc7060120_03800000,
        0xc0260200_03676100,
        0xc0240402_00674100,
        0xc0260c0a_0a61b180,
        0xd0260e0a_09677180,
        0xc0260000_0063c382,
        0xc03a0003_01640000,
        0xc0360000_0365c800,
        0xd0360c04_02640b80,
        0xa0c89f04_c4600005,
        0xa0c81108_e2000001,
        0xe1080000_00000000,
        0xe2080000_00000000,
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

/// Prints, for every blob vector, whether the loader accepts it (`cargo test -p modelrt-ir3 --features dumps --test
/// blob_wave -- --nocapture classify_vectors`): the figures of docs/hw/adreno-kgsl-pm4.md §16.10.
#[cfg(feature = "dumps")]
#[test]
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

#[test]
fn bany_and_ball_vote_per_wave() {
    // p0.x = (lid == 70) for bany, (lid < 70) for ball; taken → r1.x = 1. 80 fibers: wave 1 (fibers 64–79) holds
    // fiber 70, so only wave 1 takes bany; wave 0 is all below 70, so only wave 0 takes ball.
    const CMPS_U: u64 = 0b010100;
    let p0x = 62 * 4;
    for (cond, brtype, name, want_w0, want_w1) in [(4u64, 4u64, "bany", 0, 1), (0, 5, "ball", 1, 0)]
    {
        // cat0 branch (opcode 1) with BRTYPE bits 37–39, p0.x, offset 2.
        let b = 2u64 | brtype << 37 | 0b0001 << 55;
        assert_eq!(disasm_word(b), format!("{name} p0.x, #2"));
        let p = store(
            vec![
                mov_imm(U32, r(1, 0), 0),
                alu_ri(CMPS_U, p0x, r(0, 0), 70) | cond << 48,
                b,
                jump(2),
                mov_imm(U32, r(1, 0), 1),
            ],
            &[r(1, 0)],
        );
        let out = exec(&p, 80, 1, &[], &[]).unwrap();
        for (l, got) in out.iter().enumerate().take(80) {
            let want = if l < 64 { want_w0 } else { want_w1 };
            assert_eq!(*got, want, "{name}, fiber {l}");
        }
    }
}
