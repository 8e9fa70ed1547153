//! `cargo xtask wheel`: its arguments and what it runs.
use anyhow::Result;

/// Build the Python distribution with maturin: abi3 (CPython >= 3.10) manylinux wheels for x86_64 and aarch64 and
/// an sdist in target/wheels/ (`pip install target/wheels/modelrt-*-manylinux_*_x86_64.whl`; add `[compile]` for
/// `modelrt compile`). Each wheel's tag is checked with auditwheel.
#[derive(clap::Args)]
pub struct Args {
    /// Build the extension with the dev profile (faster to build, slower to run).
    #[arg(long)]
    pub debug: bool,
    /// Only this architecture's wheel (x86_64 or aarch64), and no sdist unless --sdist.
    #[arg(long, value_name = "ARCH")]
    pub arch: Option<String>,
    /// Build the sdist also with --arch.
    #[arg(long)]
    pub sdist: bool,
    /// Also build a wheel from the sdist (`pip wheel`, a full release build from source) and check its tag.
    #[arg(long)]
    pub check_sdist: bool,
    /// Then install the aarch64 wheel into an arm64 Debian root (debootstrapped from the machine's Debian archive
    /// into target/arm64-root) and verify the cpu-aarch64 demo bundle from that root's Python under qemu-aarch64.
    #[arg(long)]
    pub arm64_root: bool,
}

impl Args {
    pub fn run(self) -> Result<()> {
        let Self {
            debug,
            arch,
            sdist,
            check_sdist,
            arm64_root,
        } = self;
        let arches: Vec<&str> = match &arch {
            Some(a) => vec![a.as_str()],
            None => xtask::wheel::ARCHES.iter().map(|a| a.0).collect(),
        };
        let mut aarch64 = None;
        for a in arches {
            let w = xtask::wheel::build_for(a, !debug, None)?;
            println!("wrote {} (auditwheel: {})", w.path.display(), w.tag);
            if w.arch == "aarch64" {
                aarch64 = Some(w);
            }
        }
        if arm64_root {
            let Some(w) = aarch64 else {
                anyhow::bail!(
                    "--arm64-root needs the aarch64 wheel: drop --arch or give --arch aarch64"
                );
            };
            let root = xtask::wheel::target_dir().join("arm64-root");
            let bin = xtask::wheel::tools()?;
            let said = xtask::wheel::arm64_root::test(&bin, &w.path, &w.tag, &root)?;
            print!("{said}");
        }
        if arch.is_none() || sdist || check_sdist {
            let s = xtask::wheel::sdist()?;
            println!("wrote {}", s.display());
            if check_sdist {
                let w = xtask::wheel::check_sdist(&s)?;
                println!(
                    "built {} from the sdist (auditwheel: {})",
                    w.path.display(),
                    w.tag
                );
            }
        }
        Ok(())
    }
}
