//! Execution vectors for the constant-file forms of docs/hw/adreno-kgsl-pm4.md §16.12: `ldc` (UBO loads: the
//! offset counts vec4s, K picks the first component — Mesa's ISA XML and its `load_ubo_vec4` lowering), `ldc.k`
//! (N vec4s into the constant file at a1.x), `ldg.k` (global dwords into the constant file) and `stc`
//! (registers into the constant file). The instruction words are the blob's own from
//! `data/ir3-a6xx-blob-vectors.tsv` wherever it has a non-bindless one; expected values are worked out by hand
//! from the UBO contents (dword j of the test UBO area holds 0x1000 + j).
mod blob_asm;
use blob_asm::*;
use modelrt_ir3::{disasm_word, Ubo};

/// The dword of the memory object where the UBO area starts (dword j of the area = 0x1000 + j).
const UBO_AT: usize = 1536;

fn ubo_init() -> Vec<u32> {
    let mut init = vec![0u32; UBO_AT];
    init.extend((0..256).map(|j| 0x1000 + j));
    init
}

/// A UBO of `vec4s` vec4 from dword `first` of the UBO area.
fn ubo(first: u64, vec4s: u32) -> Ubo {
    Ubo {
        base: OUT + 4 * (UBO_AT as u64 + first),
        size_vec4: vec4s,
    }
}

fn w(hex: &str) -> u64 {
    u64::from_str_radix(&hex.replace('_', ""), 16).unwrap()
}

/// `mova1 a1.x, imm` (the blob's `mova1 a1.x, 0`, 204880f5_00000000, with its immediate).
fn mova1(imm: u32) -> u64 {
    w("204880f5_00000000") | imm as u64
}

/// Copy lid to r2.x, run `body` (which may overwrite r0.x), keep r0.x in r3.x, restore lid into r0.x.
fn around_r0x(body: &[u64]) -> Vec<u64> {
    let mut p = vec![cov(U32, U32, r(2, 0), r(0, 0))];
    p.extend_from_slice(body);
    p.push(cov(U32, U32, r(3, 0), r(0, 0)));
    p.push(cov(U32, U32, r(0, 0), r(2, 0)));
    p
}

#[test]
fn the_blobs_ldc_words_print_as_mesa_and_decode() {
    for (word, text) in [
        ("c0260000_00478000", "ldc.offset0.1.imm r0.x, r0.x, 0"),
        ("c0260000_00478600", "ldc.offset3.1.imm r0.x, r0.x, 0"),
        ("c0260000_00c78040", "ldc.offset0.1.uniform r0.x, 0, r0.x"),
        (
            "c0260201_ffc78080",
            "ldc.offset0.1.nonuniform r0.y, 255, r0.y",
        ),
        ("c7060120_03800000", "stc.u32 c[a1.x+32], r0.x, 3"),
        ("c0160010_00b001a1", "ldg.k.u32 c[16], g[r48.x+208], 1"),
        // The blob's `ldc.1.k.imm.base0` with the bindless bit (8) cleared: the non-bindless `ldc.k`.
        ("c0360000_00c78000", "ldc.1.k.imm c[a1.x], 0, 0"),
        ("c0360001_04c78000", "ldc.2.k.imm c[a1.x], 4, 0"),
    ] {
        assert_eq!(disasm_word(w(word)), text, "{word}");
        let bytes = w(word).to_le_bytes();
        modelrt_ir3::Program::decode("v", &bytes).unwrap_or_else(|e| panic!("{word}: {e}"));
    }
}

#[test]
fn ldc_offset_k_reads_dword_4_offset_plus_k() {
    // The blob's ldc.offsetK.1.imm r0.x, r0.x, 0 with r0.x = lid: fiber l reads dword 4·l + K of UBO 0.
    for (k, word) in [
        "c0260000_00478000",
        "c0260000_00478200",
        "c0260000_00478400",
        "c0260000_00478600",
    ]
    .into_iter()
    .enumerate()
    {
        let p = store(around_r0x(&[w(word)]), &[r(3, 0)]);
        let out = exec_ubo(&p, (8, 1), &ubo_init(), &[ubo(0, 32)]).unwrap();
        let want: Vec<u32> = (0..8).map(|l| 0x1000 + 4 * l + k as u32).collect();
        assert_eq!(col(&out, 0, 8), want, "offset{k}");
    }
}

#[test]
fn ldc_takes_the_ubo_slot_from_a_register_and_loads_n_components() {
    // ldc.offset0.1.uniform r0.x, 0, r0.x: slot = lid; UBO s starts at area dword 16·s, so fiber l gets
    // 0x1000 + 16·l.
    let ubos = [ubo(0, 4), ubo(16, 4), ubo(32, 4)];
    let p = store(around_r0x(&[w("c0260000_00c78040")]), &[r(3, 0)]);
    let out = exec_ubo(&p, (3, 1), &ubo_init(), &ubos).unwrap();
    assert_eq!(col(&out, 0, 3), [0x1000, 0x1010, 0x1020]);
    // The blob's ldc.offset0.1.nonuniform r0.y, 0, r0.y: r0.y (local id y) is 0 for every fiber → UBO 0, dword 0.
    let p = store(vec![w("c0260201_00c78080")], &[r(0, 1)]);
    let out = exec_ubo(&p, (3, 1), &ubo_init(), &ubos).unwrap();
    assert_eq!(col(&out, 0, 3), [0x1000; 3]);
    // ldc.offset1.3.imm r4.x, 2, 1 (immediate offset 2, N = 3, slot 1): dwords 16 + 8 + 1 … 16 + 8 + 3.
    let ldc3 = w("c0260000_00478000") & !(0xFF << 24 | 0xFF << 32 | 3 << 9 | 0xFF << 41)
        | 2 << 24
        | 1 << 23
        | r(4, 0) << 32
        | 1 << 9
        | 2 << 12
        | 1 << 41;
    assert_eq!(disasm_word(ldc3), "ldc.offset1.3.imm r4.x, 2, 1");
    let p = store(vec![ldc3], &[r(4, 0), r(4, 1), r(4, 2)]);
    let out = exec_ubo(&p, (2, 1), &ubo_init(), &ubos).unwrap();
    for (c, want) in [0x1019, 0x101a, 0x101b].into_iter().enumerate() {
        assert_eq!(col(&out, c, 2), [want; 2], "component {c}");
    }
}

#[test]
fn ldc_past_the_ubo_or_from_an_unbound_slot_is_an_error() {
    // The blob's ldc.offset0.1.nonuniform r0.y, 255, r0.y: vec4 255 of a 32-vec4 UBO.
    let p = store(vec![w("c0260201_ffc78080")], &[r(0, 1)]);
    let e = exec_ubo(&p, (1, 1), &ubo_init(), &[ubo(0, 32)]).unwrap_err();
    assert!(
        e.contains("GPU fault") && e.contains("past the end of the UBO"),
        "{e}"
    );
    // Slot = lid = 2 with two UBOs bound.
    let p = store(around_r0x(&[w("c0260000_00c78040")]), &[r(3, 0)]);
    let e = exec_ubo(&p, (3, 1), &ubo_init(), &[ubo(0, 4), ubo(16, 4)]).unwrap_err();
    assert!(e.contains("UBO 2 is not bound (2 loaded)"), "{e}");
}

#[test]
fn ldc_k_copies_vec4s_into_the_constant_file_at_a1x() {
    // a1.x = 16; ldc.2.k.imm c[a1.x], 4, 0: UBO 0 vec4s 4 and 5 (area dwords 16…23) into c[16]…c[23] = c4.x…c5.w,
    // read back with mov.
    let mut p = vec![mova1(16), w("c0360001_04c78000")];
    let regs: Vec<u64> = (0..8).map(|k| r(8 + k / 4, k % 4)).collect();
    p.extend((0..8).map(|k| mov_c(regs[k as usize], 16 + k)));
    let out = exec_ubo(&store(p, &regs), (4, 1), &ubo_init(), &[ubo(0, 32)]).unwrap();
    for k in 0..8 {
        assert_eq!(
            col(&out, k, 4),
            [0x1000 + 16 + k as u32; 4],
            "c[{}]",
            16 + k
        );
    }
    // A constant offset that is not a multiple of 16 dwords is refused.
    let p = store(vec![mova1(4), w("c0360001_04c78000")], &[]);
    let e = exec_ubo(&p, (1, 1), &ubo_init(), &[ubo(0, 32)]).unwrap_err();
    assert!(e.contains("multiples of 4 vec4s"), "{e}");
}

#[test]
fn stc_writes_registers_into_the_constant_file() {
    // r0.x… is the lid; use r5 for the values. The blob's stc words with SRC r0.x rewritten to r5.x (bits 1–8).
    let stc = |hex: &str| w(hex) & !(0xFF << 1) | r(5, 0) << 1;
    let vals = [0xAAAA_0001u32, 0xBBBB_0002, 0xCCCC_0003];
    let set: Vec<u64> = (0..3)
        .map(|c| mov_imm(U32, r(5, c), vals[c as usize]))
        .collect();
    // stc.u32 c[32], r5.x, 3 → c8.x…c8.z.
    let mut p = set.clone();
    p.push(stc("c7060020_03800000"));
    p.extend((0..3).map(|c| mov_c(r(6, c), 32 + c)));
    let out = exec_ubo(&store(p, &[r(6, 0), r(6, 1), r(6, 2)]), (2, 1), &[], &[]).unwrap();
    for (c, v) in vals.iter().enumerate() {
        assert_eq!(col(&out, c, 2), [*v; 2]);
    }
    // stc.f32 c[32], r5.x, 1 writes c8.x only: c8.y stays the dispatch's 0.
    let mut p = set.clone();
    p.push(stc("c7020020_01800000"));
    p.extend([mov_c(r(6, 0), 32), mov_c(r(6, 1), 33)]);
    let out = exec_ubo(&store(p, &[r(6, 0), r(6, 1)]), (1, 1), &[], &[]).unwrap();
    assert_eq!((out[0], out[128]), (vals[0], 0));
    // stc.u32 c[a1.x+32], r5.x, 3 with a1.x = 8 → c[40]…c[42]; and c[a1.x] with a1.x = 20 → c[20]…c[22].
    for (hex, a1, at) in [("c7060120_03800000", 8, 40), ("c7060100_03800000", 20, 20)] {
        let mut p = set.clone();
        p.extend([mova1(a1), stc(hex)]);
        p.extend((0..3).map(|c| mov_c(r(6, c), at + c)));
        let out = exec_ubo(&store(p, &[r(6, 0), r(6, 1), r(6, 2)]), (1, 1), &[], &[]).unwrap();
        assert_eq!([out[0], out[128], out[256]], vals, "{hex}");
    }
    // Past the 1024-dword file: a1.x = 1022, stc c[a1.x+32], 3 dwords.
    let mut p = set;
    p.extend([mova1(1022), stc("c7060120_03800000")]);
    let e = exec_ubo(&store(p, &[]), (1, 1), &[], &[]).unwrap_err();
    assert!(e.contains("outside the 1024-dword constant file"), "{e}");
}

#[test]
fn ldg_k_loads_global_dwords_into_the_constant_file() {
    // r48.xy = OUT. The blob's ldg.k.u32 c[16], g[r48.x+208], 1 (dword 52 → c4.x) and
    // ldg.k.u32 c[a1.x+136], g[r48.x+2352], 1 (dword 588 → c[a1.x + 136], a1.x = 0 → c34.x).
    let mut init = vec![0u32; 600];
    init[52] = 0x5252_5252;
    init[588] = 0x0588_0588;
    let p = vec![
        mov_imm(U32, r(48, 0), OUT as u32),
        mov_imm(U32, r(48, 1), (OUT >> 32) as u32),
        w("c0160010_00b001a1"),
        w("c0160188_00b01261"),
        mov_c(r(6, 0), 16),
        mov_c(r(6, 1), 136),
    ];
    let out = exec_ubo(&store(p, &[r(6, 0), r(6, 1)]), (2, 1), &init, &[]).unwrap();
    assert_eq!(col(&out, 0, 2), [0x5252_5252; 2]);
    assert_eq!(col(&out, 1, 2), [0x0588_0588; 2]);
    // An address outside memory is a GPU fault.
    let p = vec![
        mov_imm(U32, r(48, 0), 0),
        mov_imm(U32, r(48, 1), 0),
        w("c0160010_00b001a1"),
    ];
    let e = exec_ubo(&store(p, &[]), (1, 1), &[], &[]).unwrap_err();
    assert!(e.contains("GPU fault"), "{e}");
}

#[test]
fn every_batch_of_work_groups_starts_from_the_dispatchs_constants() {
    // 16 work groups of 64 fibers = two batches of 8 work groups. Every fiber reads c[64] (the dispatch
    // has 0x64 there), then `stc.f32 c[64], r5.x, 1` with r5.x = 7, then reads c[64] again. The second batch must
    // not see the first batch's write: 0x64 then 7 for every fiber, on 1 and on 3 threads.
    let stc = w("c7020020_01800000") & !(0x1FF << 32 | 0xFF << 1) | 64 << 32 | r(5, 0) << 1;
    assert_eq!(disasm_word(stc), "stc.f32 c[64], r5.x, 1");
    let add_u =
        |dst: u64, a: u64, b: u64| a | b << 16 | dst << 32 | 1 << 52 | ADD_U << 53 | 2 << 61;
    let mut p = vec![
        mov_c(r(1, 0), 64),
        mov_imm(U32, r(5, 0), 7),
        stc,
        mov_c(r(1, 1), 64),
        // r7.x = wgid · 64 + lid, r7.y = r7.x + 1024.
        alu_ri(MULL_U, r(7, 0), r(48, 0), 64),
        add_u(r(7, 0), r(7, 0), r(0, 0)),
        alu_ri(ADD_U, r(7, 1), r(7, 0), 1000),
        alu_ri(ADD_U, r(7, 1), r(7, 1), 24),
    ];
    p.extend(addr_in(r(40, 0), 0));
    p.extend([
        stg_idx(r(40, 0), r(7, 0), r(1, 0)),
        stg_idx(r(40, 0), r(7, 1), r(1, 1)),
        END,
    ]);
    let image: Vec<u8> = p.iter().flat_map(|w| w.to_le_bytes()).collect();
    let prog = modelrt_ir3::Program::decode("stc", &image).unwrap();
    let mut c = vec![OUT as u32, 0, 0, 0];
    c.resize(1024, 0);
    c[64] = 0x64;
    for threads in [1, 3] {
        let mut mem = Mem(vec![0u8; 4 * 2048]);
        let launch = modelrt_ir3::Launch {
            consts: &c,
            groups: [16, 1, 1],
            local: [64, 1, 1],
            wgid_reg: Some(192),
            lid_reg: Some(0),
            wgsize_reg: None,
            wgoffset_reg: None,
            textures: &[],
            uavs: &[],
            samplers: &[],
            ubos: &[],
            bindless: [0; 5],
            shared_bytes: 0,
            items: None,
        };
        modelrt_ir3::run_threads(&prog, &launch, &mut mem, threads).unwrap();
        let words: Vec<u32> = mem
            .0
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(
            words[..1024],
            [0x64; 1024][..],
            "before the write, {threads} threads"
        );
        assert_eq!(
            words[1024..],
            [7; 1024][..],
            "after the write, {threads} threads"
        );
    }
}
