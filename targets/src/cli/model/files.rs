//! Where `modelrt run` writes: `.npy` file names for outputs and state buffers — tensor names kept
//! to safe characters and made unique within a directory (`a/b` and `a_b` become `a_b-1.npy` and
//! `a_b.npy`, never one file) — and the checks of `-o`/`--dump-state` directories, made before the
//! model runs so a bad directory fails in a moment, not after the computation.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// A tensor or state name kept to characters that are safe in a file name (others become `_`).
pub(super) fn sanitize(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.chars().all(|c| c == '.') {
        // `""`, `.`, `..`: no usable stem.
        format!("_{s}")
    } else {
        s
    }
}

/// One distinct file stem per name, in `names`' order, none in `taken` (which receives them).
/// Names that are already safe keep their stem; the others get the sanitized stem, with `-1`,
/// `-2`, … appended when that is taken. Deterministic: the same names give the same stems.
pub(super) fn unique_stems(names: &[&str], taken: &mut BTreeSet<String>) -> Vec<String> {
    let mut stems: Vec<Option<String>> = vec![None; names.len()];
    // Safe names first, so that `a_b` is `a_b` even when `a/b` comes before it.
    for pass in [true, false] {
        for (i, name) in names.iter().enumerate() {
            let base = sanitize(name);
            if (base == *name) != pass || stems[i].is_some() {
                continue;
            }
            let mut stem = base.clone();
            let mut k = 0;
            while taken.contains(&stem) {
                k += 1;
                stem = format!("{base}-{k}");
            }
            taken.insert(stem.clone());
            stems[i] = Some(stem);
        }
    }
    stems.into_iter().flatten().collect()
}

/// `DIR/STEM.npy` for each name (see [`unique_stems`]).
pub(super) fn npy_paths(dir: &Path, names: &[&str], taken: &mut BTreeSet<String>) -> Vec<PathBuf> {
    unique_stems(names, taken)
        .into_iter()
        .map(|s| dir.join(format!("{s}.npy")))
        .collect()
}

/// Make sure files can be written into `dir` (named by `flag` in errors): create it if missing,
/// refuse an existing non-directory, and try writing a probe file.
pub(super) fn prepare_dir(flag: &str, dir: &Path) -> anyhow::Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!(
            "{flag} {}: this is an existing file, not a directory; give a directory to write the .npy files into",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("{flag} {}: cannot create the directory", dir.display()))?;
    let probe = dir.join(format!(".modelrt-write-check-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("{flag} {}: cannot write into the directory", dir.display()))?;
    // Best effort: a probe that cannot be removed does no harm.
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stems(names: &[&str]) -> Vec<String> {
        unique_stems(names, &mut BTreeSet::new())
    }

    #[test]
    fn colliding_names_get_distinct_stems() {
        assert_eq!(stems(&["a/b", "a_b"]), ["a_b-1", "a_b"]);
        assert_eq!(stems(&["a_b", "a/b", "a:b"]), ["a_b", "a_b-1", "a_b-2"]);
        // A suffixed stem that is itself a name is not reused.
        assert_eq!(stems(&["a/b", "a_b", "a_b-1"]), ["a_b-2", "a_b", "a_b-1"]);
        assert_eq!(stems(&["x", "y"]), ["x", "y"]);
    }

    #[test]
    fn names_without_a_stem_get_one() {
        assert_eq!(stems(&["", ".", ".."]), ["_", "_.", "_.."]);
    }

    #[test]
    fn taken_stems_are_shared_across_calls() {
        let mut taken = BTreeSet::new();
        assert_eq!(unique_stems(&["y"], &mut taken), ["y"]);
        assert_eq!(unique_stems(&["y"], &mut taken), ["y-1"]);
    }
}
