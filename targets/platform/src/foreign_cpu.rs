//! What to do with a CPU bundle compiled for another architecture than this host's: the hint both
//! the CPU backend's refusal and `--device` resolution give (recompile for this host, or run an
//! aarch64/x86_64 build of `modelrt` on such a machine or under qemu user emulation).
use modelrt_hal::target::{CpuArch, Target};

/// The hint for a bundle compiled for `bundle` on a host of architecture `host` (`None`: one no CPU
/// bundle targets).
pub fn hint(bundle: CpuArch, host: Option<CpuArch>) -> String {
    let arch = bundle.name();
    // `--target cpu` is the compiling host's architecture (`cpu-x86_64` or `cpu-aarch64`).
    let recompile = match host {
        Some(h) => format!(
            "recompile it for this host (`cargo xtask compile MODEL.onnx --target cpu`, i.e. cpu-{}), or ",
            h.name()
        ),
        None => String::new(),
    };
    format!(
        "{recompile}run it with a {arch} build of modelrt (`cargo xtask dist --target {arch}-unknown-linux-gnu`) \
         on a {arch} machine or under qemu-{arch}"
    )
}

/// For a CPU `target` this host cannot run: the architectures and [`hint`], as one sentence.
pub fn refusal(target: &Target<'_>) -> Option<String> {
    let Target::Cpu { arch, .. } = *target else {
        return None;
    };
    let host = CpuArch::host();
    (host != Some(arch)).then(|| {
        format!(
            "this bundle is compiled for {} but this host is {}: {}",
            arch.name(),
            host.map_or(std::env::consts::ARCH, CpuArch::name),
            hint(arch, host)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hint_names_the_host_target_and_the_emulator() {
        let h = hint(CpuArch::Aarch64, Some(CpuArch::X86_64));
        assert!(h.contains("--target cpu`, i.e. cpu-x86_64"), "{h}");
        assert!(h.contains("under qemu-aarch64"), "{h}");
        assert!(h.contains("--target aarch64-unknown-linux-gnu"), "{h}");
    }
}
