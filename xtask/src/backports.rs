//! qemu-user ≥ 8 for the Hexagon DSP target, from Debian bookworm-backports.
//!
//! bookworm's own qemu 7.2 mis-executes some LLVM-19 Hexagon packets (docs/hw/hexagon-dsp.md §6), so `cargo xtask
//! setup` enables bookworm-backports with the *same* mirror URI the machine already uses for Debian (read from
//! `/etc/apt/sources.list` and `sources.list.d`; no mirror host is written in this repository), simulates the
//! install with `apt-get -s`, refuses if the simulation would remove a package or touch anything that is not qemu,
//! installs, and prints every change it made.
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Minimum qemu major version that runs LLVM-19 Hexagon code correctly.
pub const MIN_QEMU_MAJOR: u32 = 8;
/// The emulator tinygrad's DSP mock and modelrt's harness run.
pub const QEMU: &str = "qemu-hexagon-static";
/// The deb822 file this module writes when no backports source exists.
pub const SOURCE_FILE: &str = "/etc/apt/sources.list.d/modelrt-bookworm-backports.sources";
/// Packages taken from backports (qemu-user-static provides the `qemu-hexagon-static` name tinygrad's mock runs;
/// qemu-user-binfmt is upgraded with them so apt does not remove it).
pub const PACKAGES: &[&str] = &["qemu-user", "qemu-user-static", "qemu-user-binfmt"];

use crate::apt_sources::AptSource;

/// The URI of the machine's Debian main archive: the first source serving suite `bookworm`.
pub fn debian_uri(sources: &[AptSource]) -> Option<&str> {
    sources
        .iter()
        .find(|s| s.suites.iter().any(|x| x == "bookworm"))
        .map(|s| s.uri.as_str())
}

/// Is bookworm-backports already among the sources?
pub fn has_backports(sources: &[AptSource]) -> bool {
    sources
        .iter()
        .any(|s| s.suites.iter().any(|x| x == "bookworm-backports"))
}

/// The deb822 stanza enabling bookworm-backports from `uri`.
pub fn backports_stanza(uri: &str) -> String {
    format!(
        "Types: deb\nURIs: {uri}\nSuites: bookworm-backports\nComponents: main\n\
         Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
    )
}

/// The major version in `qemu-hexagon --version`'s first line (`qemu-hexagon version 10.0.2 (Debian ...)`).
pub fn qemu_major(version_output: &str) -> Option<u32> {
    let line = version_output.lines().next()?;
    let v = line.split("version").nth(1)?.split_whitespace().next()?;
    v.split('.').next()?.parse().ok()
}

/// What an `apt-get -s install` would do: packages installed/upgraded and packages removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    pub installs: Vec<String>,
    pub removals: Vec<String>,
}

/// Parse the `Inst`/`Remv` lines of `apt-get -s` output.
pub fn parse_simulation(out: &str) -> Plan {
    let mut plan = Plan::default();
    for line in out.lines() {
        let mut w = line.split_whitespace();
        match (w.next(), w.next()) {
            (Some("Inst"), Some(p)) => plan.installs.push(p.to_string()),
            (Some("Remv"), Some(p)) => plan.removals.push(p.to_string()),
            _ => {}
        }
    }
    plan
}

/// Why a simulated plan is unsafe for the machine's other packages, if it is.
pub fn unsafe_plan(plan: &Plan) -> Option<String> {
    if !plan.removals.is_empty() {
        return Some(format!("it would remove {}", plan.removals.join(", ")));
    }
    let other: Vec<&str> = plan
        .installs
        .iter()
        .map(String::as_str)
        .filter(|p| !p.starts_with("qemu-"))
        .collect();
    if !other.is_empty() {
        return Some(format!("it would also change {}", other.join(", ")));
    }
    None
}

/// The major version of an installed qemu program (`qemu-hexagon-static`: the name tinygrad's mock runs), if any.
pub fn installed_qemu_major(program: &str) -> Option<u32> {
    let out = Command::new(program).arg("--version").output().ok()?;
    qemu_major(&String::from_utf8_lossy(&out.stdout))
}

fn sh(cmd: &str) -> Result<String> {
    let out = Command::new("sh")
        .args(["-c", &format!("DEBIAN_FRONTEND=noninteractive {cmd}")])
        .output()
        .with_context(|| format!("cannot run {cmd}"))?;
    if !out.status.success() {
        bail!(
            "`{cmd}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Make sure `qemu-hexagon` ≥ [`MIN_QEMU_MAJOR`] is installed (as root), printing what changed.
pub fn ensure_qemu(is_root: bool) -> Result<()> {
    let have = installed_qemu_major(QEMU);
    if have.is_some_and(|v| v >= MIN_QEMU_MAJOR) {
        return Ok(());
    }
    let targets: Vec<String> = PACKAGES
        .iter()
        .map(|p| format!("{p}/bookworm-backports"))
        .collect();
    let install = format!("apt-get install -y {}", targets.join(" "));
    if !is_root {
        bail!(
            "{QEMU} {} is too old (need >= {MIN_QEMU_MAJOR}, from bookworm-backports); as root run \
             `cargo xtask setup`, or add bookworm-backports to apt and run: {install}",
            have.map_or("(missing)".to_string(), |v| v.to_string())
        );
    }
    let sources = crate::apt_sources::machine_sources();
    if !has_backports(&sources) {
        let uri = debian_uri(&sources)
            .context("no apt source serves Debian bookworm; cannot derive the backports URI")?;
        std::fs::write(SOURCE_FILE, backports_stanza(uri))
            .with_context(|| format!("cannot write {SOURCE_FILE}"))?;
        eprintln!("[setup] added apt source {SOURCE_FILE} (bookworm-backports from {uri})");
        sh("apt-get update >/dev/null")?;
    }
    let sim = sh(&format!("apt-get -s {}", &install["apt-get ".len()..]))?;
    let plan = parse_simulation(&sim);
    if let Some(why) = unsafe_plan(&plan) {
        bail!("refusing to install qemu from bookworm-backports: {why}; install it by hand: {install}");
    }
    sh(&format!("{install} >/dev/null"))?;
    eprintln!(
        "[setup] installed/upgraded from bookworm-backports: {}",
        plan.installs.join(", ")
    );
    match installed_qemu_major(QEMU) {
        Some(v) if v >= MIN_QEMU_MAJOR => Ok(()),
        v => {
            bail!("after installing, {QEMU} reports version {v:?}; need >= {MIN_QEMU_MAJOR}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apt_sources::{parse_list, parse_sources};

    #[test]
    fn uri_from_deb822_and_one_line_sources() {
        let deb822 = "Types: deb\n# snapshot\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\n\
                      Components: main\n\nTypes: deb\nURIs: http://mirror.example/debian-security\n\
                      Suites: bookworm-security\nComponents: main\n";
        let s = parse_sources(deb822);
        assert_eq!(debian_uri(&s), Some("http://mirror.example/debian"));
        assert!(!has_backports(&s));
        let list = "# comment\ndeb-src http://x/debian bookworm main\n\
                    deb [arch=amd64 signed-by=/k.gpg] http://ftp.example/debian bookworm main\n";
        let s = parse_list(list);
        assert_eq!(debian_uri(&s), Some("http://ftp.example/debian"));
        let bp = parse_sources(&backports_stanza("http://ftp.example/debian"));
        assert!(has_backports(&bp));
        assert_eq!(bp[0].uri, "http://ftp.example/debian");
        let disabled = "Types: deb\nURIs: http://a/debian\nSuites: bookworm\nEnabled: no\n";
        assert_eq!(debian_uri(&parse_sources(disabled)), None);
    }

    #[test]
    fn qemu_versions() {
        assert_eq!(
            qemu_major("qemu-hexagon version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)\nCopyright"),
            Some(7)
        );
        assert_eq!(
            qemu_major("qemu-hexagon version 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1)"),
            Some(10)
        );
        assert_eq!(qemu_major(""), None);
    }

    #[test]
    fn simulation_plans_that_touch_other_packages_are_refused() {
        // Recorded from `apt-get -s install qemu-user/bookworm-backports` on this bookworm machine.
        let only_user = "Remv qemu-user-binfmt [1:7.2+dfsg-7+deb12u18+b3]\n\
             Inst qemu-user [1:7.2+dfsg-7+deb12u18+b3] (1:10.0.2+ds-2+deb13u1~bpo12+1 Debian Backports)\n\
             Conf qemu-user (1:10.0.2+ds-2+deb13u1~bpo12+1 Debian Backports)\n";
        let p = parse_simulation(only_user);
        assert_eq!(p.removals, ["qemu-user-binfmt"]);
        assert!(unsafe_plan(&p).unwrap().contains("remove qemu-user-binfmt"));
        let all = "Inst qemu-user-binfmt [1:7.2] (1:10.0.2)\nInst qemu-user [1:7.2] (1:10.0.2)\n\
                   Inst qemu-user-static (1:10.0.2)\nConf qemu-user (1:10.0.2)\n";
        let p = parse_simulation(all);
        assert_eq!(p.installs.len(), 3);
        assert_eq!(unsafe_plan(&p), None);
        let libc = "Inst libc6 [2.36] (2.41)\nInst qemu-user [7.2] (10.0)\n";
        assert!(unsafe_plan(&parse_simulation(libc))
            .unwrap()
            .contains("libc6"));
    }
}
