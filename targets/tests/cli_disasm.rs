//! `modelrt disasm` driven as a user would, against references independent of our decoders:
//!
//! - IR3: the 216 a6xx words of `qcom/ir3/tests/data/ir3-a6xx-blob-vectors.tsv` (Mesa's text for
//!   encodings seen in Qualcomm's compiler output) decode from `--hex` to Mesa's text, and listed as
//!   two kernels of an adreno-a630 bundle they show at their offsets with their raw words;
//! - RDNA3: instructions assembled by `llvm-mc-19 --mcpu=gfx1100` decode from `--hex` to the text
//!   llvm-mc prints, and the same code assembled into an object and stored as a kernel of an
//!   amd-gfx1100 bundle lists as `llvm-objdump-19` lists it (tests skip visibly without LLVM 19);
//! - an encoding the decoder does not know prints as Mesa prints it (`raw 0x…`, a6xx) or `unknown
//!   <hex>` (gfx1100) with exit status 1, and bad input
//!   (bad hex, a cpu bundle, an unknown kernel name) is one `error:` line.
//!
//! Real tinygrad kernels (a tiny model compiled for both targets) are listed in
//! `tests/tests/compile/disasm_bundles.rs`.
mod cli_common;
#[path = "../../tests/src/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};
use std::process::Command;

use cli_common::{modelrt, ok, one_line_error, scratch, text, write};
use modelrt_core::bundle::writer::{write_bundle, BundleSpec};
use modelrt_core::bundle::{BufRef, BufferKind, KernelDesc, Producer, Step};
use modelrt_hal::target::{AmdKernelMeta, DType, Ir3KernelMeta, KernelMeta, Target};

/// `(word as HI_LO, Mesa's text)` of every blob vector Mesa decodes (all but one, the word Mesa
/// prints as `raw 0xFFFFFFFFFFFFFFFF`: see [`unknown_encodings_print_unknown_and_exit_1`]).
fn ir3_vectors() -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../qcom/ir3/tests/data/ir3-a6xx-blob-vectors.tsv");
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let mut cols = l.split('\t');
            (
                cols.next().unwrap().to_string(),
                cols.next().unwrap().to_string(),
            )
        })
        .filter(|(_, text)| !text.starts_with("raw 0x"))
        .collect()
}

/// Mesa's text for the blob vector `hi_lo`, whatever it is.
fn blob_vector_text(hi_lo: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../qcom/ir3/tests/data/ir3-a6xx-blob-vectors.tsv");
    std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .find_map(|l| {
            let mut cols = l.split('\t');
            (cols.next() == Some(hi_lo)).then(|| cols.next().unwrap().to_string())
        })
        .unwrap_or_else(|| panic!("{hi_lo} is not a blob vector"))
}

fn ir3_word(hi_lo: &str) -> u64 {
    u64::from_str_radix(&hi_lo.replace('_', ""), 16).unwrap()
}

#[test]
fn a6xx_words_print_as_mesa() {
    let v = ir3_vectors();
    assert_eq!(v.len(), 215);
    // Half the words as HI_LO, half as 16 digits: both spellings are accepted.
    let args: Vec<String> = v
        .iter()
        .enumerate()
        .map(|(i, (w, _))| {
            if i % 2 == 0 {
                w.clone()
            } else {
                w.replace('_', "")
            }
        })
        .collect();
    let mut argv = vec!["disasm", "--isa", "a6xx", "--hex"];
    argv.extend(args.iter().map(String::as_str));
    let out = ok(&modelrt(&argv));
    let got: Vec<&str> = out.lines().collect();
    let want: Vec<&str> = v.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(got, want);
}

/// Assemble `asm` for gfx1100 into the object `dir/name.o` with `llvm-mc-19`, or `None` after a
/// visible skip when LLVM 19 is not installed.
fn assemble(dir: &Path, name: &str, asm: &str) -> Option<PathBuf> {
    let has = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !has("llvm-mc-19") || !has("llvm-objdump-19") {
        skip::skip("llvm-mc-19/llvm-objdump-19 not installed (Debian package llvm-19)");
        return None;
    }
    let src = dir.join(format!("{name}.s"));
    std::fs::write(&src, format!(".text\n{asm}")).unwrap();
    let obj = dir.join(format!("{name}.o"));
    let st = Command::new("llvm-mc-19")
        .args(["--triple=amdgcn", "--mcpu=gfx1100", "-filetype=obj", "-o"])
        .arg(&obj)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "llvm-mc-19 assembles {}", src.display());
    Some(obj)
}

/// `(offset, text, dwords)` of each instruction `llvm-objdump-19 --mcpu=gfx1100 -d` lists in `obj`
/// (text with whitespace normalised, as `tests/tests/amd/rdna3_support/objdump.rs` compares it).
fn objdump(obj: &Path) -> Vec<(u32, String, Vec<String>)> {
    let out = Command::new("llvm-objdump-19")
        .args(["--mcpu=gfx1100", "-d"])
        .arg(obj)
        .output()
        .expect("llvm-objdump-19 runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with('\t'))
        .filter_map(|l| {
            let (ins, rest) = l.split_once("//")?;
            let (addr, words) = rest.trim().split_once(':')?;
            let addr = u32::from_str_radix(addr.trim(), 16).ok()?;
            let words = words
                .split_whitespace()
                // a branch's words are followed by its target `<label>`
                .filter(|w| w.len() == 8 && w.bytes().all(|b| b.is_ascii_hexdigit()))
                .map(str::to_lowercase)
                .collect();
            let text = ins.split_whitespace().collect::<Vec<_>>().join(" ");
            Some((addr, text, words))
        })
        .collect()
}

/// gfx1100 instructions of the kinds tinygrad's kernels use: scalar loads and ALU, vector ALU
/// (VOP1/VOP2/VOP3/VOPC, literals), global memory, LDS, waits and branches.
const GFX1100_ASM: &str = "\
s_load_b128 s[0:3], s[0:1], 0x0
s_load_b64 s[4:5], s[0:1], 0x10
s_waitcnt lgkmcnt(0)
s_lshl_b32 s2, s15, 6
v_add_nc_u32 v1, s2, v0
v_lshlrev_b32 v2, 2, v1
v_mov_b32 v3, 0x3f000000
v_fma_f32 v4, v3, v1, -v2
v_cmp_gt_i32 vcc_lo, 0x100, v1
s_and_saveexec_b32 s6, vcc_lo
global_load_b32 v5, v2, s[0:1]
s_waitcnt vmcnt(0)
v_max_f32 v5, v5, v5
ds_store_b32 v2, v5 offset:16
s_barrier
global_store_b32 v2, v5, s[2:3]
s_cbranch_scc1 2
v_mul_f32 v6, v5, 0.5
s_nop 0
s_endpgm
";

#[test]
fn gfx1100_words_print_as_llvm() {
    let dir = scratch("disasm-gfx1100-hex");
    let Some(obj) = assemble(&dir, "words", GFX1100_ASM) else {
        return;
    };
    let llvm = objdump(&obj);
    assert_eq!(llvm.len(), GFX1100_ASM.lines().count());
    let hex: Vec<&str> = llvm
        .iter()
        .flat_map(|(_, _, w)| w.iter().map(String::as_str))
        .collect();
    let mut argv = vec!["disasm", "--isa", "gfx1100", "--hex"];
    argv.extend(hex);
    let out = ok(&modelrt(&argv));
    let got: Vec<&str> = out.lines().collect();
    let want: Vec<&str> = llvm.iter().map(|(_, t, _)| t.as_str()).collect();
    assert_eq!(got, want);
}

#[test]
fn unknown_encodings_print_unknown_and_exit_1() {
    // a6xx: a `nop`, then the blob vector Mesa prints as `raw 0xFFFFFFFFFFFFFFFF` (it knows no
    // such instruction); gfx1100: `s_endpgm`, then a dword llvm-objdump-19 lists as `<unknown>`.
    let o = modelrt(&[
        "disasm",
        "--isa",
        "a6xx",
        "--hex",
        "00000000_00000000",
        "ffffffff_ffffffff",
    ]);
    let (out, _) = text(&o);
    // Mesa's own text for the word, from the blob vectors (`raw 0xFFFFFFFFFFFFFFFF`).
    let mesa = blob_vector_text("ffffffff_ffffffff");
    assert_eq!(mesa, "raw 0xFFFFFFFFFFFFFFFF");
    assert_eq!(out, format!("nop\n{mesa}\n"));
    let err = one_line_error(&o);
    assert!(err.contains("1 of 2 instructions"), "{err}");

    let o = modelrt(&[
        "disasm", "--isa", "gfx1100", "--hex", "bfb00000", "ffffffff",
    ]);
    let (out, _) = text(&o);
    assert_eq!(out, "s_endpgm\nunknown ffffffff\n");
    one_line_error(&o);
}

#[test]
fn bad_input_is_one_error_line() {
    for (argv, needle) in [
        (
            &["disasm", "--isa", "a6xx", "--hex", "0x1_zz"][..],
            "is not an a6xx instruction word",
        ),
        (
            &["disasm", "--isa", "gfx1100", "--hex", "123456789"][..],
            "is not a gfx1100 dword",
        ),
    ] {
        let err = one_line_error(&modelrt(argv));
        assert!(err.contains(needle), "{err}");
    }
    let demo = cli_common::asset("demo-x86_64.mrt");
    let err = one_line_error(&modelrt(&["disasm", demo.to_str().unwrap()]));
    assert!(
        err.contains("adreno-a630 (IR3) and amd-gfx1100 (RDNA3)") && err.contains("cpu-x86_64"),
        "{err}"
    );
    // clap refuses a bundle together with --isa/--hex, and --hex without --isa.
    let o = modelrt(&["disasm", "x.mrt", "--isa", "a6xx", "--hex", "0"]);
    assert_eq!(o.status.code(), Some(2));
    let o = modelrt(&["disasm", "--hex", "0"]);
    assert_eq!(o.status.code(), Some(2));
}

/// A bundle for `target` holding `kernels` (name, code, metadata) and one copy step.
fn kernel_bundle(
    target: Target<'static>,
    kernels: Vec<(&'static str, &'static [u8], KernelMeta<'static>)>,
) -> Vec<u8> {
    let mut spec = BundleSpec::new(
        target,
        Producer {
            tinygrad: "0.14.0",
            tinymesa: None,
            source_sha256: [7; 32],
            dev: "TEST",
            flags: "",
        },
    );
    let x = spec.buffer("input:x", 16, DType::F32, BufferKind::Input, None);
    let y = spec.buffer("output:0", 16, DType::F32, BufferKind::Output, None);
    for (name, binary, meta) in kernels {
        spec.kernel(KernelDesc {
            name,
            entry: name,
            binary,
            source: None,
            params: Default::default(),
            meta,
        });
    }
    spec.run.push(Step::Copy {
        dst: BufRef {
            buffer: y,
            offset: 0,
        },
        src: BufRef {
            buffer: x,
            offset: 0,
        },
        size: 16,
    });
    spec.input("x", x, DType::F32, &[4])
        .output("y", y, DType::F32, &[4]);
    write_bundle(&spec).expect("test bundle is valid")
}

/// `(offset, raw, text)` of the instruction lines of kernel `name` in a `modelrt disasm` listing.
fn listed(listing: &str, name: &str) -> Vec<(u32, String, String)> {
    let mut lines = listing
        .lines()
        .skip_while(|l| !l.contains(&format!(" {name} (entry {name})")));
    assert!(
        lines.next().is_some(),
        "kernel {name} not listed:\n{listing}"
    );
    lines
        .take_while(|l| l.starts_with("  ") && !l.starts_with("  ("))
        .map(|l| {
            let (off, rest) = l.trim_start().split_once(":  ").unwrap();
            let (raw, text) = rest.split_once("  ").unwrap();
            (
                u32::from_str_radix(off, 16).unwrap(),
                raw.to_string(),
                text.trim_start().to_string(),
            )
        })
        .collect()
}

fn ir3_meta(words: usize) -> KernelMeta<'static> {
    KernelMeta::Ir3(Ir3KernelMeta {
        image_size: (words * 8) as u32,
        fregs: 4,
        hregs: 0,
        branchstack: 0,
        pvtmem: 0,
        shmem: 0,
        wgid: 0,
        lid: 0,
        wgsz: 0,
        buf_off: 0,
        imm_off: 0,
        immediates: &[],
        tex_cnt: 0,
        ibo_cnt: 0,
        tex_to_image: Default::default(),
    })
}

#[test]
fn a630_bundle_lists_every_kernel_as_mesa() {
    let v = ir3_vectors();
    let code: Vec<u8> = v
        .iter()
        .flat_map(|(w, _)| ir3_word(w).to_le_bytes())
        .collect();
    let code: &'static [u8] = Box::leak(code.into_boxed_slice());
    let (a, b) = code.split_at(100 * 8);
    let bundle = kernel_bundle(
        Target::Adreno {
            chip: 630,
            image: false,
            half: false,
        },
        vec![
            ("E_first_100", a, ir3_meta(100)),
            ("E_rest", b, ir3_meta(v.len() - 100)),
        ],
    );
    let dir = scratch("disasm-a630");
    let path = write(&dir, "blob-a630.mrt", &bundle);
    let out = ok(&modelrt(&["disasm", &path]));
    assert!(
        out.starts_with(&format!("{path}: adreno-a630, 2 kernels")),
        "{out}"
    );
    let (first, rest) = v.split_at(100);
    for (name, want) in [("E_first_100", first), ("E_rest", rest)] {
        let got = listed(&out, name);
        assert_eq!(got.len(), want.len(), "{name}");
        for (i, ((off, raw, text), (w, t))) in got.iter().zip(want).enumerate() {
            assert_eq!((*off as usize, raw, text), (i * 8, w, t), "{name}");
        }
    }
    // --kernel lists that kernel only; an unknown name lists the names.
    let one = ok(&modelrt(&["disasm", &path, "--kernel", "E_rest"]));
    assert!(
        one.contains("1 kernel ") && !one.contains("E_first_100"),
        "{one}"
    );
    assert_eq!(listed(&one, "E_rest").len(), v.len() - 100);
    let err = one_line_error(&modelrt(&["disasm", &path, "--kernel", "E_nope"]));
    assert!(
        err.contains("E_nope") && err.contains("E_first_100, E_rest"),
        "{err}"
    );
}

#[test]
fn gfx1100_bundle_lists_every_kernel_as_llvm_objdump() {
    let dir = scratch("disasm-gfx1100");
    // The instructions, then `s_code_end` padding as LLVM's AMDGPU backend emits after a kernel.
    let asm = format!("{GFX1100_ASM}s_code_end\ns_code_end\ns_code_end\ns_code_end\n");
    let Some(obj) = assemble(&dir, "kernel", &asm) else {
        return;
    };
    let elf: &'static [u8] = Box::leak(std::fs::read(&obj).unwrap().into_boxed_slice());
    let meta = KernelMeta::Amd(AmdKernelMeta {
        descriptor_offset: 0,
        entry_offset: 0,
        group_segment_fixed_size: 0,
        private_segment_fixed_size: 0,
        kernarg_size: 0,
        compute_pgm_rsrc1: 0,
        compute_pgm_rsrc2: 0,
        compute_pgm_rsrc3: 0,
        kernel_code_properties: 0,
        wavefront_size: 32,
        sgpr_count: 0,
        vgpr_count: 0,
    });
    let bundle = kernel_bundle(
        Target::Amd { gfx: 0x1100 },
        vec![("r_4_8", elf, meta.clone()), ("E_2", elf, meta)],
    );
    let path = write(&dir, "k-gfx1100.mrt", &bundle);
    let out = ok(&modelrt(&["disasm", &path]));
    assert!(
        out.starts_with(&format!("{path}: amd-gfx1100, 2 kernels")),
        "{out}"
    );
    let llvm = objdump(&obj);
    let n = GFX1100_ASM.lines().count();
    assert_eq!(llvm.len(), n + 4);
    for name in ["r_4_8", "E_2"] {
        let got = listed(&out, name);
        // Listed up to the first s_code_end; the rest is reported as padding.
        assert_eq!(got.len(), n + 1, "{name}:\n{out}");
        for ((off, raw, text), (want_off, want, words)) in got.iter().zip(&llvm) {
            assert_eq!(
                (off, text, raw),
                (want_off, want, &words.join(" ")),
                "{name}"
            );
        }
    }
    assert!(
        out.contains("(12 B of s_code_end padding not listed)"),
        "{out}"
    );
}
