//! Execution vectors for the bindless and buffer-UAV forms of docs/hw/adreno-kgsl-pm4.md §16.13, all with the
//! blob's own instruction words from `data/ir3-a6xx-blob-vectors.tsv`: untyped `ldib.b`/`stib.b` (u32 × N and
//! u16), bindless `resinfo.b`, `atomic.b.OP` by slot and bindless (typed 2-D), and the bindless `ldc`/`ldc.k`.
//! Descriptor sets are written here from the A6XX_TEX_CONST / A6XX_UBO field layouts (§8.3, §16.12) at a set
//! address with DESC_SIZE = 3 (64-byte entries); expected values are worked out by hand from the buffer
//! contents.
mod blob_asm;
use blob_asm::*;
use modelrt_ir3::{disasm_word, Image};

/// Descriptor set 0 at dword 1024 of the memory object, set 1 at dword 1152; buffers from dword 1280.
const SET0: usize = 1024;
const SET1: usize = 1152;
const BUF: usize = 1280;

fn w(hex: &str) -> u64 {
    u64::from_str_radix(&hex.replace('_', ""), 16).unwrap()
}

fn addr(dword: usize) -> u64 {
    OUT + 4 * dword as u64
}

/// SP_CS_BINDLESS_BASE value: set address | DESC_SIZE 3 (64-byte descriptors).
fn base(dword: usize) -> u64 {
    addr(dword) | 3
}

/// A buffer descriptor (TEX_CONST TYPE 4 = buffer): `elements` in WIDTH (low 15 bits) and HEIGHT (the rest).
fn buffer_desc(at: usize, elements: u32) -> [u32; 16] {
    let a = addr(at);
    let mut d = [0u32; 16];
    d[1] = (elements & 0x7FFF) | (elements >> 15) << 15;
    d[2] = 4 << 29;
    d[4] = a as u32;
    d[5] = (a >> 32) as u32;
    d
}

/// A 2-D image descriptor (TYPE 1): width, height, pitch in bytes, DEPTH 1.
fn image_desc(at: usize, width: u32, height: u32, pitch: u32) -> [u32; 16] {
    let a = addr(at);
    let mut d = [0u32; 16];
    d[1] = width | height << 15;
    d[2] = pitch << 7 | 1 << 29;
    d[4] = a as u32;
    d[5] = (a >> 32) as u32 | 1 << 17;
    d
}

/// Memory with descriptor `k` of the set at `set` = `descs[k]` and buffer dwords from [`BUF`] = 0x3000 + j.
fn memory(set: usize, descs: &[[u32; 16]]) -> Vec<u32> {
    let mut m = vec![0u32; WORDS];
    for (k, d) in descs.iter().enumerate() {
        m[set + 16 * k..set + 16 * k + 16].copy_from_slice(d);
    }
    for j in 0..(WORDS - BUF) {
        m[BUF + j] = 0x3000 + j as u32;
    }
    m
}

/// Copy lid to r2.x, run `body` (which may overwrite r0.x), keep r0.x … r0.z in r3.x … r3.z, restore lid.
fn around_r0(body: &[u64]) -> Vec<u64> {
    let mut p = vec![cov(U32, U32, r(2, 0), r(0, 0))];
    p.extend_from_slice(body);
    p.extend((0..3).map(|c| cov(U32, U32, r(3, c), r(0, c))));
    p.push(cov(U32, U32, r(0, 0), r(2, 0)));
    p
}

/// `add.u dst, a, b` on full registers (cat2, §16.3).
fn add_u(dst: u64, a: u64, b: u64) -> u64 {
    a | b << 16 | dst << 32 | 1 << 52 | ADD_U << 53 | 2 << 61
}

/// `mova1 a1.x, imm` (the blob's `mova1 a1.x, 0`, 204880f5_00000000, with its immediate).
fn mova1(imm: u32) -> u64 {
    w("204880f5_00000000") | imm as u64
}

#[test]
fn the_blobs_bindless_words_decode_and_print_as_mesa() {
    for (word, text) in [
        (
            "c0260200_03676100",
            "stib.b.untyped.1d.u32.3.imm.base0 r0.x, r0.w, 1",
        ),
        (
            "c0240402_00674100",
            "stib.b.untyped.1d.u16.1.imm.base0 hr0.z, r0.x, 2",
        ),
        (
            "c0260c0a_0a61b180",
            "ldib.b.untyped.1d.u32.4.nonuniform.base0 r2.z, r2.z, r1.z",
        ),
        (
            "d0260e0a_09677180",
            "(sy)stib.b.untyped.1d.u32.4.nonuniform.base0 r2.z, r2.y, r1.w",
        ),
        (
            "c0260000_0063c300",
            "resinfo.b.untyped.2d.u32.1.imm.base0 r0.x, 0",
        ),
        (
            "c0260000_0063c382",
            "resinfo.b.untyped.2d.u32.1.nonuniform.base1 r0.x, r0.x",
        ),
        (
            "c03a0003_01640000",
            "atomic.b.add.untyped.1d.s32.1.imm r0.w, r0.y, 0",
        ),
        (
            "c03a0003_01660000",
            "atomic.b.and.untyped.1d.s32.1.imm r0.w, r0.y, 0",
        ),
        (
            "c0360000_0365c800",
            "atomic.b.max.typed.1d.u32.1.imm r0.x, r0.w, 0",
        ),
        (
            "d0360c04_02640b80",
            "(sy)atomic.b.add.typed.2d.u32.1.nonuniform.base0 r1.x, r0.z, r1.z",
        ),
        ("c02600c1_00c7a900", "ldc.u.offset0.3.imm.base0 r48.y, 0, 0"),
        ("c0360000_00c78100", "ldc.1.k.imm.base0 c[a1.x], 0, 0"),
        ("c0360003_00c78100", "ldc.4.k.imm.base0 c[a1.x], 0, 0"),
    ] {
        assert_eq!(disasm_word(w(word)), text, "{word}");
        modelrt_ir3::Program::decode("v", &w(word).to_le_bytes())
            .unwrap_or_else(|e| panic!("{word}: {e}"));
    }
}

#[test]
fn untyped_stib_stores_n_words_or_halves_at_element_x() {
    // stib.b.untyped.1d.u32.3.imm.base0 r0.x, r0.w, 1: fiber l stores (l, l + 100, l + 200) at element
    // r0.w = 3·l of descriptor 1 (a 64-element buffer at dword BUF + 64).
    let m = memory(SET0, &[buffer_desc(BUF, 64), buffer_desc(BUF + 64, 64)]);
    let p = vec![
        alu_ri(MULL_U, r(0, 3), r(0, 0), 3),
        alu_ri(ADD_U, r(0, 1), r(0, 0), 100),
        alu_ri(ADD_U, r(0, 2), r(0, 0), 200),
        w("c0260200_03676100"),
    ];
    let out = exec_bindless(&store(p, &[]), (8, 1), &m, &[], [base(SET0), 0, 0, 0, 0]).unwrap();
    for l in 0..8u32 {
        let at = BUF + 64 + 3 * l as usize;
        assert_eq!(out[at..at + 3], [l, l + 100, l + 200], "fiber {l}");
    }
    assert_eq!(
        out[BUF + 64 + 24],
        0x3000 + 64 + 24,
        "untouched past the last store"
    );
    // stib.b.untyped.1d.u16.1.imm.base0 hr0.z, r0.x, 2: fiber l stores the half l·257 at half-element l of
    // descriptor 2 (16-bit elements at dword BUF + 128).
    let m = memory(
        SET0,
        &[
            buffer_desc(BUF, 64),
            buffer_desc(BUF, 64),
            buffer_desc(BUF + 128, 32),
        ],
    );
    let p = vec![
        alu_ri(MULL_U, r(5, 0), r(0, 0), 257),
        cov(U32, U16, r(0, 2), r(5, 0)),
        w("c0240402_00674100"),
    ];
    let out = exec_bindless(&store(p, &[]), (8, 1), &m, &[], [base(SET0), 0, 0, 0, 0]).unwrap();
    for k in 0..4u32 {
        let (lo, hi) = (2 * k * 257, (2 * k + 1) * 257);
        assert_eq!(
            out[BUF + 128 + k as usize],
            lo | hi << 16,
            "halves {} and {}",
            2 * k,
            2 * k + 1
        );
    }
}

#[test]
fn untyped_ldib_and_stib_take_the_descriptor_from_a_register() {
    // ldib.b.untyped.1d.u32.4.nonuniform.base0 r2.z, r2.z, r1.z: descriptor r1.z = lid (buffer k at dword
    // BUF + 64·k), element r2.z = 2: fiber l reads 0x3000 + 64·l + 2 … + 5.
    let descs: Vec<[u32; 16]> = (0..3).map(|k| buffer_desc(BUF + 64 * k, 64)).collect();
    let m = memory(SET0, &descs);
    let p = vec![
        cov(U32, U32, r(1, 2), r(0, 0)),
        mov_imm(U32, r(2, 2), 2),
        w("c0260c0a_0a61b180"),
    ];
    let regs = [r(2, 2), r(2, 3), r(3, 0), r(3, 1)];
    let out = exec_bindless(&store(p, &regs), (3, 1), &m, &[], [base(SET0), 0, 0, 0, 0]).unwrap();
    for c in 0..4 {
        let want: Vec<u32> = (0..3).map(|l| 0x3000 + 64 * l + 2 + c as u32).collect();
        assert_eq!(col(&out, c, 3), want, "component {c}");
    }
    // (sy)stib.b.untyped.1d.u32.4.nonuniform.base0 r2.z, r2.y, r1.w: descriptor r1.w = 0, element
    // r2.y = 4·l, values (l, l + 1, l + 2, l + 3).
    let p = vec![
        alu_ri(MULL_U, r(2, 1), r(0, 0), 4),
        cov(U32, U32, r(2, 2), r(0, 0)),
        alu_ri(ADD_U, r(2, 3), r(0, 0), 1),
        alu_ri(ADD_U, r(3, 0), r(0, 0), 2),
        alu_ri(ADD_U, r(3, 1), r(0, 0), 3),
        w("d0260e0a_09677180"),
    ];
    let out = exec_bindless(&store(p, &[]), (4, 1), &m, &[], [base(SET0), 0, 0, 0, 0]).unwrap();
    let want: Vec<u32> = (0..4).flat_map(|l| [l, l + 1, l + 2, l + 3]).collect();
    assert_eq!(out[BUF..BUF + 16], want[..]);
}

#[test]
fn bindless_resinfo_reads_width_height_depth_from_the_descriptor() {
    // resinfo.b.untyped.2d.u32.1.imm.base0 r0.x, 0: descriptor 0 = a 7x5 image → (7, 5, 1).
    let m = memory(SET0, &[image_desc(BUF, 7, 5, 128)]);
    let p = store(
        around_r0(&[w("c0260000_0063c300")]),
        &[r(3, 0), r(3, 1), r(3, 2)],
    );
    let out = exec_bindless(&p, (2, 1), &m, &[], [base(SET0), 0, 0, 0, 0]).unwrap();
    for (c, want) in [7, 5, 1].into_iter().enumerate() {
        assert_eq!(col(&out, c, 2), [want; 2]);
    }
    // resinfo.b.untyped.2d.u32.1.nonuniform.base1 r0.x, r0.x: set 1, descriptor r0.x = lid: (10 + l) x (20 + l).
    let descs: Vec<[u32; 16]> = (0..3)
        .map(|l| image_desc(BUF, 10 + l, 20 + l, 128))
        .collect();
    let m = memory(SET1, &descs);
    let p = store(
        around_r0(&[w("c0260000_0063c382")]),
        &[r(3, 0), r(3, 1), r(3, 2)],
    );
    let out = exec_bindless(&p, (3, 1), &m, &[], [0, base(SET1), 0, 0, 0]).unwrap();
    assert_eq!(col(&out, 0, 3), [10, 11, 12]);
    assert_eq!(col(&out, 1, 3), [20, 21, 22]);
    assert_eq!(col(&out, 2, 3), [1, 1, 1]);
    // The same word with SP_CS_BINDLESS_BASE[1] unset.
    let e = exec_bindless(&p, (3, 1), &m, &[], [base(SET1), 0, 0, 0, 0]).unwrap_err();
    assert!(
        e.contains("bindless base 1 (SP_CS_BINDLESS_BASE[1]) is not set"),
        "{e}"
    );
    // DESC_SIZE 2 is not a value the XML defines; 1 (16-byte entries) is too small for an image descriptor.
    for (size, want) in [
        (2, "DESC_SIZE 2 is neither"),
        (1, "16-byte descriptors, 24 bytes needed"),
    ] {
        let e = exec_bindless(&p, (3, 1), &m, &[], [0, addr(SET1) | size, 0, 0, 0]).unwrap_err();
        assert!(e.contains(want), "{e}");
    }
}

#[test]
fn atomic_b_by_slot_and_bindless() {
    // UAV slot 0 = a 16x1 RGBA32F-described image at dword BUF (256 bytes as a raw buffer); word 0 = 0x3000.
    let uav = Image {
        base: addr(BUF),
        width: 16,
        height: 1,
        pitch: 256,
        half: false,
    };
    let m = memory(SET0, &[]);
    // atomic.b.add.untyped.1d.s32.1.imm r0.w, r0.y, 0: element r0.y = 0, operand r0.w = lid + 1 (8 fibers):
    // the word ends 0x3000 + 36; every fiber got an old value below that.
    let p = vec![alu_ri(ADD_U, r(0, 3), r(0, 0), 1), w("c03a0003_01640000")];
    let out = exec_bindless(&store(p, &[r(0, 3)]), (8, 1), &m, &[uav], [0; 5]).unwrap();
    assert_eq!(out[BUF], 0x3000 + 36);
    let mut olds = col(&out, 0, 8);
    olds.sort();
    assert!(olds[0] == 0x3000 && olds[7] < 0x3000 + 36, "{olds:x?}");
    // atomic.b.and.untyped.1d.s32.1.imm r0.w, r0.y, 0 with operand 0x3000 | 0x0F0 → 0x3000 & 0x30F0 = 0x3000.
    let p = vec![mov_imm(U32, r(0, 3), 0x30F0), w("c03a0003_01660000")];
    let out = exec_bindless(&store(p, &[]), (2, 1), &m, &[uav], [0; 5]).unwrap();
    assert_eq!(out[BUF], 0x3000);
    // atomic.b.max.typed.1d.u32.1.imm r0.x, r0.w, 0: texel r0.w = 0, operand 0x2FFD + lid (8 fibers) → 0x3004.
    let p = around_r0(&[
        mov_imm(U32, r(5, 0), 0x2FFD),
        add_u(r(0, 0), r(0, 0), r(5, 0)),
        w("c0360000_0365c800"),
    ]);
    let out = exec_bindless(&store(p, &[]), (8, 1), &m, &[uav], [0; 5]).unwrap();
    assert_eq!(out[BUF], 0x2FFD + 7);
    // (sy)atomic.b.add.typed.2d.u32.1.nonuniform.base0 r1.x, r0.z, r1.z: descriptor r1.z = 0 = an 8x2 image
    // (pitch 64) at BUF, texel (r0.z, r0.w) = (lid, 1), operand r1.x = lid + 1: texel (l, 1) = dword BUF + 16 + l
    // becomes 0x3000 + 16 + l + l + 1, and r1.x returns the old 0x3000 + 16 + l.
    let m = memory(SET0, &[image_desc(BUF, 8, 2, 64)]);
    let p = vec![
        cov(U32, U32, r(0, 2), r(0, 0)),
        mov_imm(U32, r(0, 3), 1),
        alu_ri(ADD_U, r(1, 0), r(0, 0), 1),
        w("d0360c04_02640b80"),
    ];
    let out = exec_bindless(
        &store(p, &[r(1, 0)]),
        (8, 1),
        &m,
        &[],
        [base(SET0), 0, 0, 0, 0],
    )
    .unwrap();
    for l in 0..8u32 {
        assert_eq!(
            out[BUF + 16 + l as usize],
            0x3000 + 16 + 2 * l + 1,
            "texel ({l}, 1)"
        );
        assert_eq!(out[l as usize], 0x3000 + 16 + l, "old value of fiber {l}");
    }
    // y = 2 is outside the 8x2 image: a GPU fault.
    let p = vec![mov_imm(U32, r(0, 3), 2), w("d0360c04_02640b80")];
    let e = exec_bindless(&store(p, &[]), (1, 1), &m, &[], [base(SET0), 0, 0, 0, 0]).unwrap_err();
    assert!(
        e.contains("GPU fault in fiber 0") && e.contains("outside the 8x2 image"),
        "{e}"
    );
}

#[test]
fn untyped_access_past_the_buffer_is_a_gpu_fault() {
    // ldib …u32.4 at element 62 of a 64-element buffer reads elements 62…65.
    let m = memory(SET0, &[buffer_desc(BUF, 64)]);
    let p = vec![mov_imm(U32, r(2, 2), 62), w("c0260c0a_0a61b180")];
    let e = exec_bindless(&store(p, &[]), (1, 1), &m, &[], [base(SET0), 0, 0, 0, 0]).unwrap_err();
    assert!(
        e.contains("GPU fault in fiber 0") && e.contains("outside the 256-byte buffer"),
        "{e}"
    );
}

#[test]
fn bindless_ldc_and_ldc_k_read_the_ubo_descriptor_of_the_set() {
    // Set 0 entry 0 = A6XX_UBO descriptor of 8 vec4 at BUF (dword j = 0x3000 + j).
    let a = addr(BUF);
    let mut ubo = [0u32; 16];
    ubo[0] = a as u32;
    ubo[1] = (a >> 32) as u32 | 8 << 17;
    let m = memory(SET0, &[ubo]);
    // ldc.u.offset0.3.imm.base0 r48.y, 0, 0 → r48.y, r48.z, r48.w = dwords 0, 1, 2.
    let p = store(
        vec![w("c02600c1_00c7a900")],
        &[r(48, 1), r(48, 2), r(48, 3)],
    );
    let out = exec_bindless(&p, (2, 1), &m, &[], [base(SET0), 0, 0, 0, 0]).unwrap();
    for c in 0..3 {
        assert_eq!(col(&out, c, 2), [0x3000 + c as u32; 2]);
    }
    // a1.x = 16; ldc.4.k.imm.base0 c[a1.x], 0, 0 → c[16…31] = dwords 0…15; read c[16], c[23], c[31] back.
    let p = vec![
        mova1(16),
        w("c0360003_00c78100"),
        mov_c(r(5, 0), 16),
        mov_c(r(5, 1), 23),
        mov_c(r(5, 2), 31),
    ];
    let out = exec_bindless(
        &store(p, &[r(5, 0), r(5, 1), r(5, 2)]),
        (2, 1),
        &m,
        &[],
        [base(SET0), 0, 0, 0, 0],
    )
    .unwrap();
    for (c, want) in [0x3000, 0x3007, 0x300F].into_iter().enumerate() {
        assert_eq!(col(&out, c, 2), [want; 2]);
    }
}

#[test]
fn sleep_dccln_and_dcflu_change_nothing_and_dcinv_stays_refused() {
    // The blob's sleep.l and dccln.all, and dcflu.shr / sleep.s built from the cat7 layout (§16.9): between a
    // register write and its store they change neither the value nor memory.
    let words = [
        ("e1080000_00000000", "sleep.l"),
        ("e2080000_00000000", "dccln.all"),
        ("e3000000_00000000", "dcflu.shr"),
        ("e1000000_00000000", "sleep.s"),
    ];
    let mut p = vec![mov_imm(U32, r(5, 0), 0x1234_5678)];
    for (hex, text) in words {
        assert_eq!(disasm_word(w(hex)), text);
        p.push(w(hex));
    }
    let m = memory(SET0, &[]);
    let out = exec_bindless(&store(p, &[r(5, 0)]), (4, 1), &m, &[], [0; 5]).unwrap();
    assert_eq!(col(&out, 0, 4), [0x1234_5678; 4]);
    assert_eq!(out[BUF..], m[BUF..]);
    // dcinv.all: an invalidate could drop stores on the hardware; refused at load.
    assert_eq!(disasm_word(w("e2880000_00000000")), "dcinv.all");
    let e = modelrt_ir3::Program::decode("k", &w("e2880000_00000000").to_le_bytes()).unwrap_err();
    assert!(e.contains("`dcinv.all` is not executed"), "{e}");
}

/// A 4x2 RGBA32F texture at dword `at` (pitch 64): texel (x, y) = (x + 10·y, 100 + x, −1, 0.5), and its 2-D
/// descriptor (FMT6_32_32_32_32_FLOAT = 0x82 in dword 0 bits 22–29).
fn texture(m: &mut [u32], at: usize) -> [u32; 16] {
    for y in 0..2 {
        for x in 0..4 {
            let t = [(x + 10 * y) as f32, 100.0 + x as f32, -1.0, 0.5];
            let o = at + 16 * y + 4 * x;
            m[o..o + 4].copy_from_slice(&t.map(f32::to_bits));
        }
    }
    let mut d = image_desc(at, 4, 2, 64);
    d[0] = 0x82 << 22;
    d
}

/// tinygrad's sampler (nearest, unnormalised, clamp to border: §8.4) as a set entry.
fn sampler_entry() -> [u32; 16] {
    let mut d = [0u32; 16];
    d[0] = 0x1B60;
    d[1] = 0x30;
    d
}

#[test]
fn bindless_sam_takes_texture_and_sampler_from_the_set() {
    let texel =
        |x: u32, y: u32| [(x + 10 * y) as f32, 100.0 + x as f32, -1.0, 0.5].map(f32::to_bits);
    // sam.base1 (f32)(xyzw)r1.x, r0.z, s#3, t#2: set 1 entry 2 = the texture, entry 3 = the sampler; at
    // (2.5, 1.5) nearest gives texel (2, 1).
    let mut m = memory(SET1, &[[0; 16], [0; 16], [0; 16], sampler_entry()]);
    let t = texture(&mut m, BUF);
    m[SET1 + 32..SET1 + 48].copy_from_slice(&t);
    let p = vec![
        mov_imm(F32, r(0, 2), 2.5f32.to_bits()),
        mov_imm(F32, r(0, 3), 1.5f32.to_bits()),
        w("a0c89f04_c4600005"),
    ];
    let regs = [r(1, 0), r(1, 1), r(1, 2), r(1, 3)];
    let out = exec_bindless(&store(p, &regs), (2, 1), &m, &[], [0, base(SET1), 0, 0, 0]).unwrap();
    for (c, v) in texel(2, 1).into_iter().enumerate() {
        assert_eq!(col(&out, c, 2), [v; 2], "component {c}");
    }
    // sam.base0 (f32)(xyzw)r0.x, r0.z, s#1, a1.x with a1.x = 2: texture = set 0 entry 2, sampler entry 1; at
    // (1.5, 0.5) → texel (1, 0).
    let mut m = memory(SET0, &[[0; 16], sampler_entry()]);
    let t = texture(&mut m, BUF);
    m[SET0 + 32..SET0 + 48].copy_from_slice(&t);
    let mut p = vec![
        cov(U32, U32, r(2, 0), r(0, 0)),
        mova1(2),
        mov_imm(F32, r(0, 2), 1.5f32.to_bits()),
        mov_imm(F32, r(0, 3), 0.5f32.to_bits()),
        w("a0c81f00_e0200005"),
    ];
    p.extend((0..4).map(|c| cov(U32, U32, r(3, c), r(0, c))));
    p.push(cov(U32, U32, r(0, 0), r(2, 0)));
    let regs = [r(3, 0), r(3, 1), r(3, 2), r(3, 3)];
    let out = exec_bindless(&store(p, &regs), (2, 1), &m, &[], [base(SET0), 0, 0, 0, 0]).unwrap();
    for (c, v) in texel(1, 0).into_iter().enumerate() {
        assert_eq!(col(&out, c, 2), [v; 2], "component {c}");
    }
    // sam.base0 (f32)(x)r2.x, r0.x, s#16, a1.x: sampler entry 16 (the set at dword 512 so it fits), texture
    // a1.x = 0; coordinates (lid + 0.5, 1.5) → x component of texel (lid, 1) = lid + 10, and 0 (the border)
    // for lid 4.
    let mut m = memory(512, &[]);
    let t = texture(&mut m, BUF);
    m[512..528].copy_from_slice(&t);
    m[512 + 256..512 + 272].copy_from_slice(&sampler_entry());
    // lid is kept in r6.x (the sam writes r2.x, where `around_r0` would keep it).
    let p = vec![
        cov(U32, U32, r(6, 0), r(0, 0)),
        cov(U32, F32, r(0, 0), r(0, 0)),
        mov_imm(F32, r(5, 0), 0.5f32.to_bits()),
        r(0, 0) | r(5, 0) << 16 | r(0, 0) << 32 | 1 << 52 | 2 << 61, // add.f r0.x, r0.x, r5.x
        mov_imm(F32, r(0, 1), 1.5f32.to_bits()),
        w("a0c81108_e2000001"),
        cov(U32, U32, r(0, 0), r(6, 0)),
    ];
    let out = exec_bindless(
        &store(p, &[r(2, 0)]),
        (5, 1),
        &m,
        &[],
        [base(512), 0, 0, 0, 0],
    )
    .unwrap();
    let want: Vec<u32> = (0..5)
        .map(|l| {
            if l < 4 {
                (l as f32 + 10.0).to_bits()
            } else {
                0
            }
        })
        .collect();
    assert_eq!(col(&out, 0, 5), want);
}
