//! The 216 a6xx encodings that Mesa's disassembler tests list as seen in Qualcomm's own compiler output
//! (`tests/data/ir3-a6xx-blob-vectors.tsv`, see `tests/data/README.md`): every one must decode and print as
//! column 2 (Mesa 25.2.7's text), including graphics-only instructions the interpreter refuses to execute.
use modelrt_ir3::disasm_word;

fn vectors() -> Vec<(u64, String)> {
    let text = include_str!("data/ir3-a6xx-blob-vectors.tsv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut cols = l.split('\t');
            let hex = cols.next().unwrap().replace('_', "");
            let w = u64::from_str_radix(&hex, 16).unwrap();
            (w, cols.next().unwrap().to_string())
        })
        .collect()
}

#[test]
fn all_216_blob_encodings_print_as_mesa() {
    let v = vectors();
    assert_eq!(v.len(), 216, "the vector file lists 216 encodings");
    let mut bad = Vec::new();
    for (w, want) in &v {
        let got = disasm_word(*w);
        if &got != want {
            bad.push(format!(
                "{:08x}_{:08x}: want `{want}`, got `{got}`",
                w >> 32,
                *w as u32
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "{} of 216 differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// One `ldib.b`/`stib.b` variant, encoded from the field description of the a6xx UAV load/store form
/// (docs/hw/adreno-kgsl-pm4.md §16.9): the expected text is composed from the same field values, not by the
/// decoder under test.
struct Uav {
    store: bool,
    typed: bool,
    dim: u64,
    ty: u64,
    comps: u64,
    /// 0 immediate slot, 1 uniform, 2 nonuniform (slot in a register).
    mode: u64,
    /// `Some(n)`: bindless, descriptor base n.
    base: Option<u64>,
    /// Immediate element offset (0..=127), 0 = none.
    offset: u64,
    value: u64,
    coord: u64,
    slot: u64,
}

const TY: [&str; 8] = ["f16", "f32", "u16", "u32", "s16", "s32", "u8", "u8_32"];

fn reg(n: u64) -> String {
    format!("r{}.{}", n >> 2, ['x', 'y', 'z', 'w'][(n & 3) as usize])
}

impl Uav {
    fn encode(&self) -> u64 {
        let mut w = 6u64 << 61 | 1 << 53 | self.ty << 49 | self.slot << 41 | self.value << 32;
        w |= self.coord << 24 | 0b110 << 20 | (self.comps - 1) << 12 | (self.dim - 1) << 9;
        w |= if self.store { 29 } else { 6 } << 14;
        w |= (self.typed as u64) << 11 | self.mode << 6;
        if let Some(b) = self.base {
            w |= 1 << 8 | b << 1;
        }
        if self.offset != 0 {
            w |= 1 << 23 | (self.offset >> 5) << 4 | (self.offset & 31) << 54;
        }
        w
    }

    fn text(&self) -> String {
        let half = matches!(self.ty, 0 | 2 | 4 | 6 | 7);
        format!(
            "{}.{}.{}d.{}.{}.{}{} {}{}, {}{}, {}",
            if self.store { "stib.b" } else { "ldib.b" },
            if self.typed { "typed" } else { "untyped" },
            self.dim,
            TY[self.ty as usize],
            self.comps,
            ["imm", "uniform", "nonuniform"][self.mode as usize],
            self.base.map(|b| format!(".base{b}")).unwrap_or_default(),
            if half { "h" } else { "" },
            reg(self.value),
            reg(self.coord),
            if self.offset != 0 {
                format!("+{}", self.offset)
            } else {
                String::new()
            },
            if self.mode == 0 {
                self.slot.to_string()
            } else {
                reg(self.slot)
            }
        )
    }
}

/// The generated variants: load and store × untyped/typed × 1d/2d/3d × five shapes (type, component count,
/// descriptor mode, bindless base, immediate offset), 60 in all.
fn uav_variants() -> Vec<Uav> {
    let shapes: [(u64, u64, u64, Option<u64>, u64); 5] = [
        (3, 4, 0, None, 0),
        (0, 1, 1, Some(2), 0),
        (3, 2, 2, Some(0), 0),
        (5, 3, 0, Some(1), 7),
        (2, 2, 0, None, 37),
    ];
    let mut v = Vec::new();
    for store in [false, true] {
        for typed in [false, true] {
            for dim in 1..=3 {
                for (k, &(ty, comps, mode, base, offset)) in shapes.iter().enumerate() {
                    let k = k as u64;
                    v.push(Uav {
                        store,
                        typed,
                        dim,
                        ty,
                        comps,
                        mode,
                        base,
                        offset,
                        value: 4 + k,
                        coord: 20 + dim,
                        slot: if mode == 0 { 3 + k } else { 40 + k },
                    });
                }
            }
        }
    }
    v
}

#[test]
fn generated_ldib_stib_variants_print_from_their_fields() {
    let v = uav_variants();
    assert_eq!(v.len(), 60);
    let bad: Vec<String> = v
        .iter()
        .filter_map(|u| {
            let (w, want, got) = (u.encode(), u.text(), disasm_word(u.encode()));
            (got != want).then(|| format!("{w:016x}: want `{want}`, got `{got}`"))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{} of 60 differ:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// Prints the generated words and texts (`cargo test -p modelrt-ir3 --features dumps --test blob_vectors -- --nocapture dump_uav`), for checking the
/// generator against Mesa's own disassembler (`tests/mesa_disasm.py`).
#[cfg(feature = "dumps")]
#[test]
fn dump_uav_variants() {
    for u in uav_variants() {
        println!("{:016x}\t{}", u.encode(), u.text());
    }
}

fn image(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn the_loader_refuses_unexecuted_instructions_by_kernel_offset_and_name() {
    // nop; bary.f (graphics-only); end
    let err = modelrt_ir3::Program::decode(
        "k_bary",
        &image(&[0, 0x47308a02_00002000, 0x03000000_00000000]),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "kernel k_bary: instruction 1 (byte offset 0x8): `(rpt2)bary.f (ei)r0.z, (r)0, r0.x` is a graphics-only \
         instruction; a compute kernel cannot use it"
    );
    assert_eq!(err.lines().count(), 1);
    // dsx is graphics-only too; an unknown word is named by its bits.
    let err = modelrt_ir3::Program::decode("k", &image(&[0xa3801102_00000001])).unwrap_err();
    assert!(
        err.contains("`dsx (f32)(x)r0.z, r0.x` is a graphics-only"),
        "{err}"
    );
    let err = modelrt_ir3::Program::decode("k", &image(&[0xffffffff_ffffffff])).unwrap_err();
    assert!(
        err.contains("byte offset 0x0") && err.contains("ffffffff_ffffffff"),
        "{err}"
    );
}
