//! `sam` through the whole Adreno backend on the executing KGSL model: a hand-assembled kernel with one texture
//! (an `IMAGE=1` image parameter) samples it at (lid + ½, ½) and stores the texel, so the texture descriptor and
//! the sampler the backend writes (docs/hw/adreno-kgsl-pm4.md §8.3, §8.4: nearest, unnormalised, clamp to a
//! zero border) reach the interpreter's `sam` (§16.10). Expected: texel lid of the 4×1 image for fibers 0–3, the
//! zero border for fibers 4 and 5 — written by hand from those sampler rules.
use modelrt_hal::device::{Arg, Device, KernelImage, Queue};
use modelrt_hal::target::{DType, Ir3KernelMeta, KernelMeta, ParamDesc, ParamKind};
use modelrt_qcom::adreno::{AdrenoDevice, AdrenoOptions};
use modelrt_qcom::emu::kgsl::{KgslModel, ModelConfig};

fn r(n: u64, c: u64) -> u64 {
    n * 4 + c
}
const F32: u64 = 1;
const U32: u64 = 3;

/// cat1 `mov` of an immediate; `mov.u32u32 dst, cN`; `cov.SRCDST dst, src` (field layout §16.3).
fn mov_imm(ty: u64, dst: u64, v: u32) -> u64 {
    v as u64 | dst << 32 | ty << 46 | ty << 50 | 0b10 << 53 | 1 << 61
}
fn mov_c(dst: u64, c: u64) -> u64 {
    c | dst << 32 | U32 << 46 | U32 << 50 | 0b01 << 53 | 1 << 61
}
fn cov(src_ty: u64, dst_ty: u64, dst: u64, src: u64) -> u64 {
    src | dst << 32 | dst_ty << 46 | src_ty << 50 | 1 << 61
}
/// cat2 full-precision `op dst, s1, s2` on registers, and with an 11-bit immediate s2.
fn alu_rr(opc: u64, dst: u64, s1: u64, s2: u64) -> u64 {
    s1 | s2 << 16 | dst << 32 | 1 << 52 | opc << 53 | 2 << 61
}
fn alu_ri(opc: u64, dst: u64, s: u64, imm: i64) -> u64 {
    s | (0b100 << 11 | (imm as u64 & 0x7FF)) << 16 | dst << 32 | 1 << 52 | opc << 53 | 2 << 61
}
const ADD_F: u64 = 0;
const ADD_U: u64 = 0b010000;
const MULL_U: u64 = 0b110010;
/// `sam (f32)(xyzw)dst, coord, s#0, t#0` (cat5 opcode 3, full coordinates).
fn sam(dst: u64, coord: u64) -> u64 {
    5 << 61 | 3 << 54 | F32 << 44 | 0xF << 40 | dst << 32 | coord << 1 | 1
}
/// `stg.f32 g[addr], src, 4`.
fn stg4(addr: u64, src: u64) -> u64 {
    src << 1 | 1 << 23 | 4 << 24 | 1 << 40 | addr << 41 | F32 << 49 | 3 << 54 | 6 << 61
}
const END: u64 = 0b0110 << 55;

#[test]
fn sam_samples_the_bound_texture_with_the_backends_sampler() {
    // r0.x = lid. r1.x = lid + 0.5, r1.y = 0.5; sam → r2.xyzw; out[16·lid] ← r2 (out address in c0.xy).
    let words = [
        cov(U32, F32, r(1, 0), r(0, 0)),
        mov_imm(F32, r(1, 2), 0.5f32.to_bits()),
        alu_rr(ADD_F, r(1, 0), r(1, 0), r(1, 2)),
        mov_imm(F32, r(1, 1), 0.5f32.to_bits()),
        sam(r(2, 0), r(1, 0)),
        alu_ri(MULL_U, r(4, 0), r(0, 0), 16),
        mov_c(r(3, 0), 0),
        alu_rr(ADD_U, r(3, 0), r(3, 0), r(4, 0)),
        mov_c(r(3, 1), 1),
        stg4(r(3, 0), r(2, 0)),
        END,
    ];
    let mut isa: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    isa.resize(128, 0);
    let meta = KernelMeta::Ir3(Ir3KernelMeta {
        image_size: isa.len() as u32,
        fregs: 5,
        hregs: 0,
        branchstack: 0,
        pvtmem: 0,
        shmem: 0,
        wgid: 0xC0,
        lid: 0,
        wgsz: 0xFC,
        buf_off: 0,
        imm_off: 64,
        immediates: &[],
        tex_cnt: 1,
        ibo_cnt: 0,
        tex_to_image: heapless::Vec::from_slice(&[0]).unwrap(),
    });
    let params = [
        ParamDesc {
            kind: ParamKind::Buffer,
            dtype: DType::F32,
        },
        ParamDesc {
            kind: ParamKind::Image {
                height: 1,
                width: 4,
            },
            dtype: DType::F32,
        },
    ];
    let mut dev = AdrenoDevice::open(
        KgslModel::new(ModelConfig {
            execute_shaders: true,
            ..Default::default()
        }),
        AdrenoOptions::default(),
    )
    .unwrap();
    dev.alloc_arena(4096).unwrap();
    // The image at arena byte 1024: texel x = (x, 10 + x, −x, 0.25).
    let texels: Vec<u8> = (0..4)
        .flat_map(|x| [x as f32, 10.0 + x as f32, -(x as f32), 0.25])
        .flat_map(f32::to_le_bytes)
        .collect();
    dev.upload(1024, &texels).unwrap();
    dev.upload(0, &[0xFFu8; 96]).unwrap();
    let k = dev
        .load_kernel(&KernelImage {
            name: "sam_4x1",
            entry: "sam_4x1",
            binary: &isa,
            params: &params,
            meta: &meta,
        })
        .unwrap();
    let mut q = dev.create_queue().unwrap();
    q.wait(0).unwrap();
    let args = [
        Arg::Buffer {
            offset: 0,
            size: 96,
        },
        Arg::Buffer {
            offset: 1024,
            size: 64,
        },
    ];
    q.exec(k, &args, [1, 1, 1], [6, 1, 1]).unwrap();
    q.signal(1).unwrap();
    dev.submit(&mut q).unwrap();
    let mut out = vec![0u8; 96];
    dev.download(0, &mut out).unwrap();
    let got: Vec<f32> = out
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    for l in 0..6 {
        let want = if l < 4 {
            let x = l as f32;
            [x, 10.0 + x, -x, 0.25]
        } else {
            [0.0; 4]
        };
        assert_eq!(got[4 * l..4 * l + 4], want, "fiber {l}");
    }
    assert_eq!(dev.with_kgsl(|m| m.exec_stats().dispatches), 1);
}
