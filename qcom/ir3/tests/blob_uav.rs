//! Execution vectors for the UAV and texture forms of docs/hw/adreno-kgsl-pm4.md §16.10: `resinfo` (the XML:
//! "image dimensions, 3 components"), the typed 1-D `ldib`/`stib` (row 0), and `sam` under its sampler
//! descriptor (A6XX_TEX_SAMP fields: filter, wrap, unnormalised coordinates), with expected texels and
//! bilinear weights computed by hand.
mod blob_asm;
use blob_asm::*;
use modelrt_ir3::{disasm_word, Image, Program};

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
