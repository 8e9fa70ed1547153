//! The manylinux check of a built wheel with auditwheel (pinned in `targets/python/build-requirements.txt`):
//! `auditwheel show` derives the platform tag the wheel's extension allows from its ELF (glibc symbol versions,
//! linked libraries); the tag in the wheel's file name must be that one, a `manylinux_*` tag, for the wheel's
//! architecture.
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The tag `auditwheel show` reports as consistent with the wheel (its text: `... is consistent with the following
/// platform tag: "manylinux_2_34_x86_64".`), if any.
pub fn consistent_tag(show_output: &str) -> Option<String> {
    let flat = show_output.split_whitespace().collect::<Vec<_>>().join(" ");
    let rest = flat
        .split("consistent with the following platform tag:")
        .nth(1)?;
    let tag = rest.trim_start().strip_prefix('"')?.split('"').next()?;
    Some(tag.to_string())
}

/// The platform tag of a wheel file name (`NAME-VERSION-PY-ABI-PLATFORM.whl`; dotted compressed sets allowed).
pub fn file_tags(wheel_name: &str) -> Vec<String> {
    let stem = wheel_name.strip_suffix(".whl").unwrap_or(wheel_name);
    stem.rsplit('-')
        .next()
        .map(|p| p.split('.').map(str::to_string).collect())
        .unwrap_or_default()
}

/// Run `auditwheel show` on `wheel` and check its tag: returns the manylinux tag.
pub fn check(bin: &Path, wheel: &Path, arch: &str) -> Result<String> {
    let tag = manylinux_tag(bin, wheel, arch)?;
    let name = wheel
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    if !file_tags(&name).contains(&tag) {
        bail!("{name} is not tagged {tag}, the tag auditwheel derives from its extension");
    }
    Ok(tag)
}

/// The manylinux tag `auditwheel show` derives for `wheel` (an abi3 cp310 wheel for `arch`), whatever its file
/// name says (a wheel pip builds from the sdist is tagged `linux_<arch>`, maturin's default as a PEP 517 backend).
pub fn manylinux_tag(bin: &Path, wheel: &Path, arch: &str) -> Result<String> {
    let out = Command::new(bin.join("auditwheel"))
        .arg("show")
        .arg(wheel)
        .output()
        .context("cannot run auditwheel")?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        bail!(
            "auditwheel show {} failed: {}{}",
            wheel.display(),
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let Some(tag) = consistent_tag(&text) else {
        bail!(
            "auditwheel gives {} no platform tag: {}",
            wheel.display(),
            text.trim()
        );
    };
    let name = wheel
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    if !tag.starts_with("manylinux_") || !tag.ends_with(&format!("_{arch}")) {
        bail!("{name}: auditwheel's tag is {tag}, not a manylinux tag for {arch}");
    }
    if !name.contains("-cp310-abi3-") {
        bail!("{name} is not an abi3 (cp310) wheel");
    }
    Ok(tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// auditwheel 6's wording (its `show` command, wrapped as it prints it) gives the tag; other text none.
    #[test]
    fn consistent_tag_from_auditwheel_text() {
        let text = "\nmodelrt-0.1.0-cp310-abi3-manylinux_2_34_x86_64.whl is consistent with the\nfollowing platform tag: \"manylinux_2_34_x86_64\".\n\nThe wheel references external versioned symbols in these\nsystem-provided shared libraries: libc.so.6 with versions\n{'GLIBC_2.34'}\n";
        assert_eq!(
            consistent_tag(text).as_deref(),
            Some("manylinux_2_34_x86_64")
        );
        assert_eq!(consistent_tag("not a wheel"), None);
    }

    #[test]
    fn platform_tags_of_wheel_names() {
        assert_eq!(
            file_tags("modelrt-0.1.0-cp310-abi3-manylinux_2_34_aarch64.whl"),
            ["manylinux_2_34_aarch64"]
        );
        assert_eq!(
            file_tags("m-1-cp310-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"),
            ["manylinux_2_17_x86_64", "manylinux2014_x86_64"]
        );
    }
}
