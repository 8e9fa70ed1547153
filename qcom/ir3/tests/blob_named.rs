//! Every blob-compiler word the decoder executes ([`Op::Ext`]) is one Mesa's disassembler names: the decoders in
//! `src/decode/` state the canonical-form bits themselves (they cannot ask `disasm`, which depends on them), and
//! this checks they never accept a word the text (`src/disasm/text.rs`) does not print, over the blob vectors
//! and all their one- and two-bit mutations (docs/hw/adreno-kgsl-pm4.md §16.9).
use modelrt_ir3::decode::decode;
use modelrt_ir3::disasm_word;
use modelrt_ir3::instr::Op;

fn vectors() -> Vec<u64> {
    include_str!("data/ir3-a6xx-blob-vectors.tsv")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let hex = l.split('\t').next().unwrap().replace('_', "");
            u64::from_str_radix(&hex, 16).unwrap_or_else(|e| panic!("{l}: {e}"))
        })
        .collect()
}

#[test]
fn every_executed_blob_word_has_mesa_text() {
    let seeds = vectors();
    assert!(seeds.len() > 200, "{} vectors", seeds.len());
    let mut ext = 0;
    for &s in &seeds {
        for a in 0..64 {
            for b in a..64 {
                let w = s ^ (1 << a) ^ if b == a { 0 } else { 1 << b };
                if let Ok(i) = decode(w) {
                    if matches!(i.op, Op::Ext(_)) {
                        ext += 1;
                        assert!(
                            !disasm_word(w).is_empty(),
                            "{w:016x} is executed as a blob form but has no Mesa text"
                        );
                    }
                }
            }
        }
    }
    assert!(ext > 1000, "only {ext} blob-form words among the mutations");
}
