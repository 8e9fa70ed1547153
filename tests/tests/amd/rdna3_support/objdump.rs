//! `llvm-objdump-19 --mcpu=gfx1100 -d` as the decoder's golden: one `(byte offset, text)` per
//! instruction, text = mnemonic and operands with whitespace normalised.
use std::path::Path;
use std::process::Command;

/// Whether `llvm-objdump-19` runs here.
pub fn available() -> bool {
    Command::new("llvm-objdump-19")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// LLVM's listing of the object at `obj`.
pub fn listing(obj: &Path) -> Vec<(u32, String)> {
    let out = Command::new("llvm-objdump-19")
        .args(["--mcpu=gfx1100", "-d"])
        .arg(obj)
        .output()
        .expect("llvm-objdump-19 runs");
    assert!(
        out.status.success(),
        "llvm-objdump-19 failed on {}",
        obj.display()
    );
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines()
        .filter(|l| l.starts_with('\t'))
        .filter_map(|l| {
            let (ins, rest) = l.split_once("//")?;
            let addr = rest.trim().split(':').next()?;
            let addr = u32::from_str_radix(addr.trim(), 16).ok()?;
            let ins = ins.split_whitespace().collect::<Vec<_>>().join(" ");
            Some((addr, ins))
        })
        .collect()
}
