//! `cargo xtask firmware`: the Navi31 firmware blobs the AM driver and its tests load, taken from Debian's
//! `firmware-amd-graphics` package (component `non-free-firmware`, suite bookworm) and unpacked into
//! `target/amdgpu-firmware/`. Nothing is installed system-wide and no mirror host is written in the repo:
//! the archive URI is the one of the machine's own Debian apt source.
//!
//! Chain of trust: the suite's `InRelease` is checked with `gpgv` against the source's keyring (default
//! Debian's archive keyring); it gives the SHA-256 of the component's `Packages` index, which gives the
//! SHA-256 of the `.deb`. The unpacked files are recorded with their SHA-256 in `MANIFEST`; a second run
//! whose files still match does no network access.
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{anyhow, bail, Context, Result};
use sha2::{Digest, Sha256};

use crate::apt_sources::AptSource;

/// The Debian package holding the blobs.
pub const PACKAGE: &str = "firmware-amd-graphics";
/// The suite it is taken from (its files are plain `.bin`).
pub const SUITE: &str = "bookworm";
/// The archive component.
pub const COMPONENT: &str = "non-free-firmware";
/// Keyring used when the apt source names none.
pub const DEFAULT_KEYRING: &str = "/usr/share/keyrings/debian-archive-keyring.gpg";
/// Environment override of the archive URI (for machines without a Debian apt source).
pub const URI_ENV: &str = "MODELRT_DEBIAN_URI";

/// Blobs unpacked (stems under `amdgpu/`): Navi31 = GC 11.0.0, MP0/MP1 13.0.0, SDMA 6.0.0.
pub const BLOBS: &[&str] = &[
    "psp_13_0_0_sos",
    "psp_13_0_0_ta",
    "smu_13_0_0",
    "gc_11_0_0_pfp",
    "gc_11_0_0_me",
    "gc_11_0_0_mec",
    "gc_11_0_0_rlc",
    "gc_11_0_0_imu",
    "gc_11_0_0_mes",
    "gc_11_0_0_mes1",
    "sdma_6_0_0",
];

/// Debian suite names a usable archive source may list.
const DEBIAN_SUITES: &[&str] = &[
    "bullseye",
    "bookworm",
    "trixie",
    "forky",
    "sid",
    "oldstable",
    "stable",
    "testing",
    "unstable",
];

/// `target/amdgpu-firmware` of this workspace.
pub fn firmware_dir() -> PathBuf {
    crate::setup::workspace_root().join("target/amdgpu-firmware")
}

/// The first source that is a Debian archive (one of its suites is a plain Debian suite name).
pub fn debian_archive(sources: &[AptSource]) -> Option<&AptSource> {
    sources
        .iter()
        .find(|s| s.suites.iter().any(|x| DEBIAN_SUITES.contains(&x.as_str())))
}

/// SHA-256 and size of `path` in the `SHA256:` section of a Release/InRelease file.
pub fn release_sha256(release: &str, path: &str) -> Option<(String, u64)> {
    let mut in_section = false;
    for line in release.lines() {
        if !line.starts_with(' ') {
            in_section = line.trim_end() == "SHA256:";
            continue;
        }
        if in_section {
            let mut w = line.split_whitespace();
            if let (Some(h), Some(sz), Some(p)) = (w.next(), w.next(), w.next()) {
                if p == path {
                    return Some((h.to_ascii_lowercase(), sz.parse().ok()?));
                }
            }
        }
    }
    None
}

/// A package's stanza in a `Packages` index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PackageEntry {
    pub version: String,
    pub filename: String,
    pub size: u64,
    pub sha256: String,
}

/// The stanza of `package` in a `Packages` index.
pub fn find_package(index: &str, package: &str) -> Option<PackageEntry> {
    index.split("\n\n").find_map(|stanza| {
        let field = |name: &str| {
            stanza.lines().find_map(|l| {
                let (k, v) = l.split_once(": ")?;
                (k == name).then(|| v.trim().to_string())
            })
        };
        (field("Package")? == package).then_some(())?;
        Some(PackageEntry {
            version: field("Version")?,
            filename: field("Filename")?,
            size: field("Size")?.parse().ok()?,
            sha256: field("SHA256")?.to_ascii_lowercase(),
        })
    })
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// Read `src` to its end in chunks, hashing them and handing each to `sink`; returns the SHA-256.
fn hash_stream(mut src: impl Read, mut sink: impl FnMut(&[u8]) -> Result<()>) -> Result<String> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = src.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        sink(&buf[..n])?;
    }
    Ok(hex(&h.finalize()))
}

fn sha256_file(p: &Path) -> Result<String> {
    let f = std::fs::File::open(p).with_context(|| format!("cannot read {}", p.display()))?;
    hash_stream(f, |_| Ok(()))
}

/// GET `url` into memory (small index files).
fn fetch_small(url: &str) -> Result<Vec<u8>> {
    let out = Command::new("curl")
        .args(["-fsSL", "--retry", "3", "--connect-timeout", "20", url])
        .output()
        .context("cannot run curl (install it: apt-get install curl)")?;
    if !out.status.success() {
        bail!(
            "download of {url} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// GET `url` into `dest` with a progress bar over `size` bytes; returns the SHA-256 of what arrived.
fn fetch_to(url: &str, dest: &Path, size: u64) -> Result<String> {
    let mut child = Command::new("curl")
        .args(["-fsSL", "--retry", "3", "--connect-timeout", "20", url])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("cannot run curl (install it: apt-get install curl)")?;
    let mut src = child
        .stdout
        .take()
        .ok_or_else(|| anyhow!("curl gave no stdout"))?;
    let mut file =
        std::fs::File::create(dest).with_context(|| format!("cannot write {}", dest.display()))?;
    let bar = indicatif::ProgressBar::new(size);
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "firmware  {bar:30} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let hash = hash_stream(&mut src, |chunk| {
        file.write_all(chunk)?;
        bar.inc(chunk.len() as u64);
        Ok(())
    })?;
    bar.finish_and_clear();
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    if !child.wait()?.success() {
        bail!("download of {url} failed: {}", err.trim());
    }
    Ok(hash)
}

/// `xz -dc` of an in-memory buffer.
fn xz_decompress(data: &[u8]) -> Result<Vec<u8>> {
    let mut child = Command::new("xz")
        .arg("-dc")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run xz (install it: apt-get install xz-utils)")?;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| anyhow!("xz gave no stdin"))?;
    let data = data.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&data));
    let out = child.wait_with_output()?;
    feeder.join().map_err(|_| anyhow!("xz feeder panicked"))??;
    if !out.status.success() {
        bail!("xz failed");
    }
    Ok(out.stdout)
}

/// The host's Debian architecture name (the `Packages` index lists `all` packages per architecture).
fn debian_arch() -> String {
    Command::new("dpkg")
        .arg("--print-architecture")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| {
            match std::env::consts::ARCH {
                "aarch64" => "arm64",
                _ => "amd64",
            }
            .to_string()
        })
}

/// Whether `dir/MANIFEST` lists every blob of [`BLOBS`] and each file is present with that SHA-256.
fn up_to_date(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(dir.join("MANIFEST")) else {
        return false;
    };
    BLOBS.iter().all(|stem| {
        let name = format!("{stem}.bin");
        let want = text.lines().find_map(|l| {
            let (h, n) = l.split_once("  ")?;
            (n == name).then_some(h)
        });
        match want {
            Some(h) => sha256_file(&dir.join(&name)).is_ok_and(|got| got == h),
            None => false,
        }
    })
}

/// Make `target/amdgpu-firmware/` hold every blob of [`BLOBS`] as `.bin`; returns the directory.
pub fn ensure() -> Result<PathBuf> {
    let dir = firmware_dir();
    if up_to_date(&dir) {
        return Ok(dir);
    }
    eprintln!(
        "[firmware] fetching {PACKAGE} ({SUITE}/{COMPONENT}) into {}; nothing outside target/ is changed",
        dir.display()
    );
    let (uri, keyring) = match std::env::var(URI_ENV) {
        Ok(u) if !u.is_empty() => (u, DEFAULT_KEYRING.to_string()),
        _ => {
            let sources = crate::apt_sources::machine_sources();
            let s = debian_archive(&sources).ok_or_else(|| {
                anyhow!(
                    "no Debian archive among the apt sources in /etc/apt/sources.list(.d); set {URI_ENV}=<Debian archive URI>"
                )
            })?;
            let keyring = s
                .signed_by
                .clone()
                .filter(|k| k.starts_with('/'))
                .unwrap_or_else(|| DEFAULT_KEYRING.to_string());
            (s.uri.clone(), keyring)
        }
    };
    let uri = uri.trim_end_matches('/').to_string();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let work = dir.join(".download");
    std::fs::create_dir_all(&work)?;

    // InRelease, signature checked.
    let inrelease = work.join("InRelease");
    std::fs::write(
        &inrelease,
        fetch_small(&format!("{uri}/dists/{SUITE}/InRelease"))?,
    )?;
    let gpg = Command::new("gpgv")
        .arg("--keyring")
        .arg(&keyring)
        .arg(&inrelease)
        .output()
        .context("cannot run gpgv (install it: apt-get install gpgv)")?;
    if !gpg.status.success() {
        bail!(
            "{uri}/dists/{SUITE}/InRelease: signature not valid for keyring {keyring}: {}",
            String::from_utf8_lossy(&gpg.stderr)
                .lines()
                .last()
                .unwrap_or("")
        );
    }
    let release = std::fs::read_to_string(&inrelease)?;

    // Packages index (the archive serves it compressed), hash checked against InRelease.
    let arch = debian_arch();
    let rel_path = format!("{COMPONENT}/binary-{arch}/Packages.xz");
    let (want, _) = release_sha256(&release, &rel_path)
        .ok_or_else(|| anyhow!("{SUITE}'s InRelease lists no {rel_path}"))?;
    let packed = fetch_small(&format!("{uri}/dists/{SUITE}/{rel_path}"))?;
    let got = hex(&Sha256::digest(&packed));
    if got != want {
        bail!("{rel_path}: sha256 {got} does not match InRelease's {want}");
    }
    let index = xz_decompress(&packed).with_context(|| format!("{rel_path}: cannot decompress"))?;
    let index = String::from_utf8_lossy(&index);
    let pkg = find_package(&index, PACKAGE)
        .ok_or_else(|| anyhow!("{PACKAGE} is not in {SUITE}/{rel_path}"))?;

    // The .deb, hash checked against the index (a cached copy is reused when it matches).
    let deb = work.join(format!("{PACKAGE}_{}.deb", pkg.version.replace(':', "%3a")));
    if !sha256_file(&deb).is_ok_and(|h| h == pkg.sha256) {
        eprintln!(
            "[firmware] {PACKAGE} {} ({:.1} MB)",
            pkg.version,
            pkg.size as f64 / 1e6
        );
        let got = fetch_to(&format!("{uri}/{}", pkg.filename), &deb, pkg.size)?;
        if got != pkg.sha256 {
            let _ = std::fs::remove_file(&deb);
            bail!(
                "{}: sha256 {got} does not match the index's {}",
                pkg.filename,
                pkg.sha256
            );
        }
    }
    unpack(&deb, &work, &dir)?;

    let mut manifest = format!(
        "# {PACKAGE} {} from {uri}/{} (sha256 {})\n",
        pkg.version, pkg.filename, pkg.sha256
    );
    for stem in BLOBS {
        let name = format!("{stem}.bin");
        manifest.push_str(&format!("{}  {name}\n", sha256_file(&dir.join(&name))?));
    }
    std::fs::write(dir.join("MANIFEST"), manifest)?;
    eprintln!("[firmware] {} blobs in {}", BLOBS.len(), dir.display());
    Ok(dir)
}

/// Extract the wanted `amdgpu/` members of `deb` (plain, `.zst` or `.xz`) into `dir` as `.bin`.
fn unpack(deb: &Path, work: &Path, dir: &Path) -> Result<()> {
    let tree = work.join("tree");
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::create_dir_all(&tree)?;
    let mut fsys = Command::new("dpkg-deb")
        .arg("--fsys-tarfile")
        .arg(deb)
        .stdout(Stdio::piped())
        .spawn()
        .context("cannot run dpkg-deb (install it: apt-get install dpkg)")?;
    let tar_in = fsys
        .stdout
        .take()
        .ok_or_else(|| anyhow!("dpkg-deb gave no stdout"))?;
    let mut tar = Command::new("tar");
    tar.arg("-x").arg("-C").arg(&tree).arg("--wildcards");
    for stem in BLOBS {
        tar.arg(format!("*/lib/firmware/amdgpu/{stem}.bin*"));
    }
    let tar_status = tar.stdin(tar_in).status().context("cannot run tar")?;
    let deb_status = fsys.wait()?;
    if !deb_status.success() || !tar_status.success() {
        bail!("{}: cannot unpack (dpkg-deb/tar failed)", deb.display());
    }
    let src = tree.join("lib/firmware/amdgpu");
    for stem in BLOBS {
        let dest = dir.join(format!("{stem}.bin"));
        let plain = src.join(format!("{stem}.bin"));
        if !plain.exists() {
            decompress(&src, stem, &plain, deb)?;
        }
        // Same file system: the blob appears whole or not at all for a concurrent reader.
        std::fs::rename(&plain, &dest)
            .with_context(|| format!("cannot move {} to {}", plain.display(), dest.display()))?;
    }
    std::fs::remove_dir_all(&tree)?;
    Ok(())
}

/// Write `amdgpu/<stem>.bin` to `plain` from its `.zst` or `.xz` member.
fn decompress(src: &Path, stem: &str, plain: &Path, deb: &Path) -> Result<()> {
    let (packed, tool) = [("zst", "zstd"), ("xz", "xz")]
        .iter()
        .map(|(ext, tool)| (src.join(format!("{stem}.bin.{ext}")), *tool))
        .find(|(p, _)| p.exists())
        .ok_or_else(|| anyhow!("{}: {PACKAGE} has no amdgpu/{stem}.bin", deb.display()))?;
    let out = Command::new(tool)
        .arg("-dc")
        .arg(&packed)
        .output()
        .with_context(|| format!("cannot run {tool} to decompress {}", packed.display()))?;
    if !out.status.success() {
        bail!("{}: {tool} cannot decompress it", packed.display());
    }
    std::fs::write(plain, out.stdout)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apt_sources::{parse_list, parse_sources};

    // The parsers themselves are tested in `apt_sources`; here only the choice of the Debian archive.
    #[test]
    fn debian_archive_is_the_first_source_with_a_debian_suite() {
        let l = parse_list(
            "deb https://x/apt cloud-sdk main\n\
             deb [signed-by=/k.gpg] http://deb.example/debian bookworm main non-free-firmware\n",
        );
        let a = debian_archive(&l).expect("a Debian archive");
        assert_eq!(a.uri, "http://deb.example/debian");
        assert_eq!(a.signed_by.as_deref(), Some("/k.gpg"));
        let s =
            parse_sources("Types: deb\nURIs: http://m/debian\nSuites: bookworm bookworm-updates\n");
        assert_eq!(
            debian_archive(&s).map(|s| s.uri.as_str()),
            Some("http://m/debian")
        );
        // A security-only or third-party source is not a Debian archive.
        assert!(debian_archive(&parse_list(
            "deb http://s/debian-security bookworm-security main\n"
        ))
        .is_none());
    }

    // Shapes of Debian's Release and Packages files (deb822, as in the archive).
    #[test]
    fn release_and_packages_lookup() {
        let release = "Codename: bookworm\nMD5Sum:\n 00 10 non-free-firmware/binary-amd64/Packages\nSHA256:\n \
                       AB12 27937 non-free-firmware/binary-amd64/Packages\n cd 7070 non-free-firmware/binary-amd64/Packages.gz\n";
        assert_eq!(
            release_sha256(release, "non-free-firmware/binary-amd64/Packages"),
            Some(("ab12".into(), 27937))
        );
        assert_eq!(release_sha256(release, "main/binary-amd64/Packages"), None);
        let index = "Package: firmware-amd-graphics-x\nVersion: 1\n\n\
                     Package: firmware-amd-graphics\nSource: firmware-nonfree\nVersion: 20230210-5\n\
                     Filename: pool/non-free-firmware/f/firmware-nonfree/firmware-amd-graphics_20230210-5_all.deb\n\
                     Size: 11866996\nSHA256: 02AD\n";
        let p = find_package(index, PACKAGE).expect("found");
        assert_eq!(p.version, "20230210-5");
        assert_eq!(p.size, 11_866_996);
        assert_eq!(p.sha256, "02ad");
        assert!(find_package(index, "nope").is_none());
    }
}
