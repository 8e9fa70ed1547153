//! `gpuflash` end to end on emulated boards (image files): every command over the bridge emulator
//! and the direct model, the write safety rules, backups, resume by range, and one-line errors.
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};

mod common {
    pub mod ifwi;
}

use common::ifwi::add_ifwi_tables;

const SIZE: usize = 0x20_0000;

/// A scratch directory removed when dropped.
struct TmpDir(PathBuf);

impl TmpDir {
    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn tmpdir(name: &str) -> TmpDir {
    let d = std::env::temp_dir().join(format!("gpuflash-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    TmpDir(d)
}

fn image(seed: u32) -> Vec<u8> {
    let mut x = seed | 1;
    let mut v: Vec<u8> = (0..SIZE)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect();
    v[..4].copy_from_slice(&[0xAA, 0x55, 0xAA, 0x55]);
    v
}

fn gpuflash(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_gpuflash"))
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "no panics: {err}");
    out
}

fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn sha(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Asserts that the stdout of `o` contains `want`.
fn assert_stdout_has(o: &Output, want: &str) {
    let (out, _) = text(o);
    assert!(out.contains(want), "{out}");
}

fn error_line(o: &Output) -> String {
    assert!(!o.status.success(), "expected failure");
    let (_, err) = text(o);
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("error:")).collect();
    assert_eq!(lines.len(), 1, "exactly one error line: {err}");
    lines[0].to_string()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A scratch directory `name` holding `board.bin` (the emulated flash, filled with `img`), the
/// board's path, and the `--transport` value naming it with `scheme` (`emu` or `emu-direct`).
fn flash_board(name: &str, scheme: &str, img: &[u8]) -> (TmpDir, PathBuf, String) {
    let d = tmpdir(name);
    let board = d.join("board.bin");
    std::fs::write(&board, img).unwrap();
    let t = format!("{scheme}:{}", p(&board));
    (d, board, t)
}

#[test]
fn help_explains_every_command() {
    let (out, _) = text(&gpuflash(&["--help"]));
    for cmd in ["info", "read", "dump", "verify", "write", "psp", "rom"] {
        assert!(out.contains(cmd), "--help lists {cmd}: {out}");
    }
    let (out, _) = text(&gpuflash(&["write", "--help"]));
    for flag in [
        "--yes",
        "--clear-cmp",
        "--start-sector",
        "--sector-count",
        "--no-backup",
        "resume",
    ] {
        assert!(out.contains(flag), "write --help mentions {flag}");
    }
}

#[test]
fn write_over_bridge_emulator_with_backup_verify_and_skip() {
    let (orig, mut new) = (image(1), image(1));
    new[0x5000..0x5100].fill(0x11);
    new[0x1F_F000..].fill(0xFF);
    let (d, board, t) = flash_board("bridge", "emu", &orig);
    std::fs::write(d.join("new.bin"), &new).unwrap();

    let o = gpuflash(&[
        "--transport",
        &t,
        "write",
        p(&d.join("new.bin")),
        "--yes",
        "--backup-dir",
        p(&d.0),
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(
        err.contains("bridge emulator") && err.contains("EMULATED"),
        "says it is emulated: {err}"
    );
    assert!(
        out.contains("2 written") && out.contains("510 unchanged"),
        "{out}"
    );
    assert!(out.contains(&sha(&new)), "prints the image sha256");
    assert!(
        std::fs::read(&board).unwrap() == new,
        "writes persist to the image file"
    );
    let backup = d.join(&format!("gpuflash-backup-{}.bin", &sha(&orig)[..16]));
    assert!(
        std::fs::read(&backup).unwrap() == orig,
        "backup holds the original flash"
    );

    let o = gpuflash(&["--transport", &t, "verify", p(&d.join("new.bin"))]);
    assert!(o.status.success());
    assert!(text(&o)
        .0
        .contains(&format!("verify OK; sha256 {}", sha(&new))));

    // Writing the same image again touches nothing.
    let o = gpuflash(&[
        "--transport",
        &t,
        "write",
        p(&d.join("new.bin")),
        "--yes",
        "--no-backup",
        "--sector-count",
        "8",
    ]);
    assert_stdout_has(&o, "0 written, 8 unchanged");

    let direct = format!("emu-direct:{}", p(&board));
    let e = error_line(&gpuflash(&["--transport", &direct, "verify", p(&backup)]));
    assert!(e.contains("verify mismatch at 0x005000"), "{e}");
}

#[test]
fn read_dump_info_and_rom_dump_direct() {
    let img = image(2);
    let (d, _, t) = flash_board("direct", "emu-direct", &img);

    let o = gpuflash(&["--transport", &t, "info"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        out.contains("JEDEC capture: C8 60 15")
            && out.contains("GD25LQ16E")
            && out.contains("signature OK"),
        "{out}"
    );
    assert!(out.contains("CMP clear"));
    assert!(err.contains("direct BAR5 model") && err.contains("EMULATED"));

    let o = gpuflash(&["--transport", &t, "read", "0x1000", "32"]);
    let (out, _) = text(&o);
    let want: Vec<String> = img[0x1000..0x1010]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert!(
        out.contains(&format!("001000: {}", want.join(" "))),
        "{out}"
    );
    assert!(out.contains(&sha(&img[0x1000..0x1020])));

    let part = d.join("part.bin");
    assert!(
        gpuflash(&["--transport", &t, "read", "5", "1000", "-o", p(&part)])
            .status
            .success()
    );
    assert!(std::fs::read(&part).unwrap() == img[5..1005]);

    let dump = d.join("dump.bin");
    let o = gpuflash(&["--transport", &t, "dump", p(&dump)]);
    assert!(text(&o).0.contains(&sha(&img)));
    assert!(std::fs::read(&dump).unwrap() == img);

    let rom = d.join("rom.bin");
    let o = gpuflash(&["--transport", &t, "rom", "dump", p(&rom)]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(std::fs::read(&rom).unwrap() == img);

    let e = error_line(&gpuflash(&["--transport", &t, "read", "0x1FFFFF", "2"]));
    assert!(e.contains("outside"), "{e}");
}

#[test]
fn write_safety_rules() {
    let img = image(3);
    let (d, board, t) = flash_board("safety", "emu-direct", &img);
    let other = image(4);
    std::fs::write(d.join("other.bin"), &other).unwrap();
    std::fs::write(d.join("short.bin"), &other[..SIZE - 1]).unwrap();

    let e = error_line(&gpuflash(&[
        "--transport",
        &t,
        "write",
        p(&d.join("other.bin")),
    ]));
    assert!(e.contains("--yes"), "{e}");
    let e = error_line(&gpuflash(&[
        "--transport",
        &t,
        "write",
        p(&d.join("short.bin")),
        "--yes",
    ]));
    assert!(
        e.contains("2097151 bytes") && e.contains("exactly 2097152"),
        "{e}"
    );
    assert!(std::fs::read(&board).unwrap() == img, "nothing written");

    // Two sectors of other.bin from `start` on.
    let write_two_from = |start: &str| {
        gpuflash(&[
            "--transport",
            &t,
            "write",
            p(&d.join("other.bin")),
            "--yes",
            "--no-backup",
            "--start-sector",
            start,
            "--sector-count",
            "2",
        ])
    };
    // Resume by range: only sectors 10..12 change.
    let o = write_two_from("10");
    assert_stdout_has(&o, "2 sectors checked, 2 written");
    let now = std::fs::read(&board).unwrap();
    assert!(now[0xA000..0xC000] == other[0xA000..0xC000]);
    assert!(now[..0xA000] == img[..0xA000] && now[0xC000..] == img[0xC000..]);

    let e = error_line(&write_two_from("511"));
    assert!(e.contains("sector range"), "{e}");
}

#[test]
fn board_states_and_transport_errors() {
    let (_d, board, t) = flash_board("states", "emu-direct", &image(5));

    let e = error_line(&gpuflash(&[
        "--transport",
        &t,
        "--emu-boot",
        "healthy",
        "info",
    ]));
    assert!(e.contains("gated") && e.contains("0x04000800"), "{e}");

    let o = gpuflash(&["--transport", &t, "--emu-boot", "sos", "psp", "probe"]);
    let (out, _) = text(&o);
    assert!(o.status.success());
    assert!(
        out.contains("error=0x0A (partition update error)")
            && out.contains("do not initialize AMDev/SOS"),
        "{out}"
    );

    let o = gpuflash(&["--transport", &t, "psp", "probe"]);
    assert_stdout_has(&o, "PSP requests item 0x01 in phase 1");

    let e = error_line(&gpuflash(&[
        "--transport",
        &t,
        "psp",
        "ifwi-all",
        p(&board),
    ]));
    assert!(e.contains("--yes"));

    let e = error_line(&gpuflash(&[
        "--transport",
        "emu:/nonexistent/x.bin",
        "info",
    ]));
    assert!(e.contains("/nonexistent/x.bin"), "{e}");
    let e = error_line(&gpuflash(&["--transport", "bogus", "info"]));
    assert!(e.contains("unknown transport"), "{e}");
    let e = error_line(&gpuflash(&["--transport", "pci", "info"]));
    assert!(e.contains("no supported"), "{e}");
}

#[test]
fn psp_ifwi_all_streams_an_ifwi_image() {
    let mut img = image(6);
    add_ifwi_tables(&mut img);
    let (d, board, t) = flash_board("ifwi", "emu-direct", &image(7));
    let ifwi = d.join("ifwi.bin");
    std::fs::write(&ifwi, &img).unwrap();
    let o = gpuflash(&["--transport", &t, "psp", "ifwi-all", p(&ifwi), "--yes"]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{err}");
    // The emulator's default schedule: 10 items ending with 0x89 in phase 2.
    assert!(
        out.contains("streaming item 0x01 (phase 1, 84 bytes)"),
        "{out}"
    );
    assert!(
        out.contains("streaming item 0x02 (phase 1, 48 bytes)"),
        "{out}"
    );
    assert!(
        out.contains("streaming item 0x89 (phase 2, 256 bytes)"),
        "{out}"
    );
    assert!(
        out.contains("streamed 10 items") && out.contains("hard power cycle"),
        "{out}"
    );
    assert!(
        out.contains("does not reproduce"),
        "emulator limits are stated: {out}"
    );
    assert!(
        std::fs::read(&board).unwrap() == image(7),
        "the flash itself is untouched"
    );
}

/// `gpuflash` with `env` set (and `XDG_DATA_HOME`/`HOME` cleared unless given), run in `cwd`.
fn gpuflash_env(args: &[&str], env: &[(&str, &Path)], cwd: &Path) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpuflash"));
    c.args(args)
        .current_dir(cwd)
        .env_remove("XDG_DATA_HOME")
        .env_remove("HOME");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "no panics: {err}");
    out
}

/// The backup files `gpuflash-backup-*.bin` in `dir`.
fn backups_in(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|r| {
            r.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.to_string_lossy().contains("gpuflash-backup-"))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn backups_default_to_the_per_user_data_directory() {
    let img = image(7);
    let (d, _board, t) = flash_board("xdg", "emu-direct", &img);
    let mut other = img.clone();
    other[0x3000..0x3010].fill(0x42);
    std::fs::write(d.join("other.bin"), &other).unwrap();
    let (xdg, home, cwd) = (d.join("xdg"), d.join("home"), d.join("cwd"));
    for p in [&xdg, &home, &cwd] {
        std::fs::create_dir_all(p).unwrap();
    }
    let write = |env: &[(&str, &Path)]| {
        gpuflash_env(
            &["--transport", &t, "write", p(&d.join("other.bin")), "--yes"],
            env,
            &cwd,
        )
    };
    // $XDG_DATA_HOME/modelrt/gpuflash-backups, printed.
    let o = write(&[("XDG_DATA_HOME", &xdg), ("HOME", &home)]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let want = xdg.join("modelrt/gpuflash-backups");
    assert!(
        out.contains(p(&want)),
        "the backup directory is printed: {out}"
    );
    assert_eq!(backups_in(&want).len(), 1, "{out}");
    assert!(
        backups_in(&cwd).is_empty(),
        "nothing in the current directory"
    );
    // Without XDG_DATA_HOME: ~/.local/share/modelrt/gpuflash-backups.
    std::fs::write(&_board, &img).unwrap();
    let o = write(&[("HOME", &home)]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    let want = home.join(".local/share/modelrt/gpuflash-backups");
    assert!(out.contains(p(&want)), "{out}");
    assert_eq!(backups_in(&want).len(), 1, "{out}");
    assert!(backups_in(&cwd).is_empty());
    // Neither: an error line that says what to set, and nothing written.
    std::fs::write(&_board, &img).unwrap();
    let e = error_line(&write(&[]));
    assert!(e.contains("--backup-dir"), "{e}");
    assert!(std::fs::read(&_board).unwrap() == img);
}

#[test]
fn ranges_and_numbers_are_checked_before_the_backup_and_the_transport() {
    let img = image(8);
    let (d, board, t) = flash_board("ranges", "emu-direct", &img);
    std::fs::write(d.join("other.bin"), image(9)).unwrap();
    let other = d.join("other.bin");
    let backups = d.join("backups");
    // A transport that cannot open: the range error must come first.
    let missing = format!("emu-direct:{}", p(&d.join("missing.bin")));
    for (start, count) in [("511", "2"), ("512", "1"), ("0", "0"), ("600", "1")] {
        for transport in [missing.as_str(), t.as_str()] {
            let e = error_line(&gpuflash(&[
                "--transport",
                transport,
                "write",
                p(&other),
                "--yes",
                "--backup-dir",
                p(&backups),
                "--start-sector",
                start,
                "--sector-count",
                count,
            ]));
            assert!(
                e.contains("sector range"),
                "{start}+{count} on {transport}: {e}"
            );
        }
    }
    assert!(
        backups_in(&backups).is_empty(),
        "no backup before a refused range"
    );
    assert!(std::fs::read(&board).unwrap() == img);
    // read: numbers, zero length and range, all before opening the transport.
    let e = error_line(&gpuflash(&["--transport", &missing, "read", "0x", "4"]));
    assert!(e.contains("invalid number"), "{e}");
    let e = error_line(&gpuflash(&["--transport", &missing, "read", "0", "zz"]));
    assert!(e.contains("invalid number"), "{e}");
    let e = error_line(&gpuflash(&["--transport", &missing, "read", "0", "0"]));
    assert!(e.contains("length is zero"), "{e}");
    let e = error_line(&gpuflash(&["--transport", &t, "read", "0", "0"]));
    assert!(e.contains("length is zero"), "{e}");
    let e = error_line(&gpuflash(&[
        "--transport",
        &missing,
        "read",
        "0x1FFFFF",
        "2",
    ]));
    assert!(e.contains("outside"), "{e}");
}

#[test]
fn a_missing_emulator_image_says_how_to_create_one() {
    for scheme in ["emu", "emu-direct"] {
        let t = format!("{scheme}:/nonexistent/flash.bin");
        let e = error_line(&gpuflash(&["--transport", &t, "info"]));
        assert!(e.contains("/nonexistent/flash.bin"), "{e}");
        assert!(e.contains("head -c 2097152"), "{e}");
    }
}

#[test]
fn a_closed_stdout_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let (_d, _board, t) = flash_board("pipe", "emu-direct", &image(10));
    // 4096 hexdump lines: far more than a pipe holds, so gpuflash writes after the reader left.
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpuflash"))
        .args(["--transport", &t, "read", "0", "0x10000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with("000000:"), "{first}");
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !err.contains("panicked"),
        "no panic on a closed stdout: {err}"
    );
    assert!(
        matches!(o.status.code(), Some(0) | Some(141)) || o.status.code().is_none(),
        "exit {:?}: {err}",
        o.status
    );
    assert!(!err.contains("error:"), "quiet: {err}");
}

#[test]
fn write_refuses_an_image_that_is_not_a_navi31_flash_image() {
    let img = image(11);
    let (d, board, t) = flash_board("notnavi", "emu-direct", &img);
    let backups = d.join("backups");
    let mut no_magic = image(12);
    no_magic[..4].copy_from_slice(b"MZ\0\0");
    let mut mirrored = image(13);
    let (a, b) = mirrored.split_at_mut(SIZE / 2);
    b.copy_from_slice(a);
    for (name, data, want) in [
        ("nomagic.bin", &no_magic, "AA 55 AA 55"),
        ("mirrored.bin", &mirrored, "mirrored"),
    ] {
        std::fs::write(d.join(name), data).unwrap();
        let e = error_line(&gpuflash(&[
            "--transport",
            &t,
            "write",
            p(&d.join(name)),
            "--yes",
            "--backup-dir",
            p(&backups),
        ]));
        assert!(
            e.contains(name)
                && e.contains("Navi31")
                && e.contains(want)
                && e.contains("--force-image"),
            "{e}"
        );
        assert!(std::fs::read(&board).unwrap() == img, "nothing written");
        assert!(backups_in(&backups).is_empty(), "refused before the backup");
    }
    // --force-image writes it anyway.
    let o = gpuflash(&[
        "--transport",
        &t,
        "write",
        p(&d.join("nomagic.bin")),
        "--yes",
        "--force-image",
        "--backup-dir",
        p(&backups),
    ]);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(std::fs::read(&board).unwrap() == no_magic);
}

#[test]
fn dump_and_read_never_replace_an_existing_file_without_yes() {
    let img = image(14);
    let (d, _board, t) = flash_board("noreplace", "emu-direct", &img);
    let old = b"an older good backup".to_vec();
    let dump = d.join("dump.bin");
    let part = d.join("part.bin");
    for f in [&dump, &part] {
        std::fs::write(f, &old).unwrap();
    }
    let e = error_line(&gpuflash(&["--transport", &t, "dump", p(&dump)]));
    assert!(e.contains(p(&dump)) && e.contains("--yes"), "{e}");
    let e = error_line(&gpuflash(&[
        "--transport",
        &t,
        "read",
        "0",
        "16",
        "-o",
        p(&part),
    ]));
    assert!(e.contains(p(&part)) && e.contains("--yes"), "{e}");
    for f in [&dump, &part] {
        assert!(std::fs::read(f).unwrap() == old, "{} kept", f.display());
    }
    // Refused before the transport is opened.
    let missing = format!("emu-direct:{}", p(&d.join("missing.bin")));
    let e = error_line(&gpuflash(&["--transport", &missing, "dump", p(&dump)]));
    assert!(e.contains("--yes"), "{e}");
    // With --yes they are replaced.
    let o = gpuflash(&["--transport", &t, "dump", p(&dump), "--yes"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(std::fs::read(&dump).unwrap() == img);
    let o = gpuflash(&[
        "--transport",
        &t,
        "read",
        "0",
        "16",
        "-o",
        p(&part),
        "--yes",
    ]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(std::fs::read(&part).unwrap() == img[..16]);
    // A new file needs no --yes; no temporary file is left behind.
    let fresh = d.join("fresh.bin");
    assert!(gpuflash(&["--transport", &t, "dump", p(&fresh)])
        .status
        .success());
    assert!(std::fs::read(&fresh).unwrap() == img);
    let left: Vec<_> = std::fs::read_dir(&d.0)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `rom dump` once replaced an existing file (an older good dump) without asking.
#[test]
fn rom_dump_never_replaces_an_existing_file_without_yes() {
    let img = image(15);
    let (d, _board, t) = flash_board("rom-noreplace", "emu-direct", &img);
    let old = b"an older good dump".to_vec();
    let rom = d.join("rom.bin");
    std::fs::write(&rom, &old).unwrap();
    let e = error_line(&gpuflash(&["--transport", &t, "rom", "dump", p(&rom)]));
    assert!(e.contains(p(&rom)) && e.contains("--yes"), "{e}");
    assert!(std::fs::read(&rom).unwrap() == old, "kept");
    // Refused before the transport is opened.
    let missing = format!("emu-direct:{}", p(&d.join("missing.bin")));
    let e = error_line(&gpuflash(&[
        "--transport",
        &missing,
        "rom",
        "dump",
        p(&rom),
    ]));
    assert!(e.contains("--yes"), "{e}");
    // With --yes it is replaced; a new file needs no --yes; nothing temporary is left.
    let o = gpuflash(&["--transport", &t, "rom", "dump", p(&rom), "--yes"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(std::fs::read(&rom).unwrap() == img);
    let fresh = d.join("fresh-rom.bin");
    let o = gpuflash(&["--transport", &t, "rom", "dump", p(&fresh)]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(std::fs::read(&fresh).unwrap() == img);
    let left: Vec<_> = std::fs::read_dir(&d.0)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let (out, _) = text(&gpuflash(&["rom", "dump", "--help"]));
    assert!(out.contains("--yes") && out.contains("replace"), "{out}");
}

#[test]
fn help_names_the_new_safety_flags() {
    let (out, _) = text(&gpuflash(&["write", "--help"]));
    assert!(
        out.contains("--force-image") && out.contains("Navi31"),
        "{out}"
    );
    for cmd in ["dump", "read"] {
        let (out, _) = text(&gpuflash(&[cmd, "--help"]));
        assert!(
            out.contains("--yes") && out.contains("replace"),
            "{cmd}: {out}"
        );
    }
}

/// Runs `gpuflash args` under `strace` (file syscalls, into `log`); `None` when strace cannot run
/// here (not installed, or ptrace not permitted) — a skip that is said, and a failure under CI.
fn gpuflash_strace(args: &[&str], log: &Path) -> Option<Output> {
    let o = Command::new("strace")
        .args(["-f", "-qq", "-e"])
        .arg("trace=openat,write,fsync,fdatasync,rename,renameat,renameat2")
        .arg("-o")
        .arg(log)
        .arg(env!("CARGO_BIN_EXE_gpuflash"))
        .args(args)
        .output();
    match o {
        Ok(o) if log.exists() => Some(o),
        other => {
            let why = format!("strace cannot run here: {other:?}");
            assert!(std::env::var_os("CI").is_none(), "{why}");
            eprintln!("SKIP backup_is_synced_and_read_back_before_the_first_erase: {why}");
            None
        }
    }
}

#[test]
fn backup_is_synced_and_read_back_before_the_first_erase() {
    let (orig, mut new) = (image(15), image(15));
    new[0x7000..0x7100].fill(0x22);
    let (d, _board, t) = flash_board("fsync", "emu-direct", &orig);
    std::fs::write(d.join("new.bin"), &new).unwrap();
    let backups = d.join("backups");
    let log = d.join("strace.log");
    let new_file = d.join("new.bin");
    let args = [
        "--transport",
        &t,
        "write",
        p(&new_file),
        "--yes",
        "--backup-dir",
        p(&backups),
    ];
    let Some(o) = gpuflash_strace(&args, &log) else {
        return;
    };
    assert!(o.status.success(), "{}", text(&o).1);
    // Syscalls in order, without the pid prefix.
    let calls: Vec<String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| l.split_once(' ').map_or(l, |x| x.1).trim().to_string())
        .collect();
    let find = |from: usize, f: &dyn Fn(&str) -> bool| {
        (from..calls.len())
            .find(|&i| f(&calls[i]))
            .unwrap_or_else(|| panic!("no such call after #{from}: {calls:#?}"))
    };
    let fd = |i: usize| calls[i].rsplit("= ").next().unwrap().trim().to_string();
    let board = find(0, &|c| {
        c.starts_with("openat(") && c.contains("board.bin\", O_RDWR")
    });
    let board_fd = fd(board);
    let tmp = find(board, &|c| {
        c.starts_with("openat(") && c.contains(".partial") && c.contains("O_EXCL")
    });
    let tmp_fd = fd(tmp);
    let synced = find(tmp, &|c| c.starts_with(&format!("fsync({tmp_fd})")));
    let renamed = find(synced, &|c| {
        c.starts_with("rename") && c.contains(".partial") && c.contains("gpuflash-backup-")
    });
    let dir = find(renamed, &|c| {
        c.starts_with("openat(") && c.contains(&format!("{}\", O_RDONLY", p(&backups)))
    });
    let dir_synced = find(dir, &|c| c.starts_with(&format!("fsync({})", fd(dir))));
    let reread = find(dir_synced, &|c| {
        c.starts_with("openat(") && c.contains("gpuflash-backup-") && c.contains("O_RDONLY")
    });
    // The emulated flash persists every erase/program to board.bin: its first write is the
    // first erase, and it comes after all of the above.
    let first_erase = find(board, &|c| c.starts_with(&format!("write({board_fd},")));
    assert!(
        reread < first_erase,
        "backup synced (#{synced}), renamed (#{renamed}), directory synced (#{dir_synced}) and read back (#{reread}) before the first erase (#{first_erase})"
    );
}

/// Whether process `pid` catches SIGINT (`SigCgt` in /proc/PID/status has bit 1 set).
fn catches_sigint(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("SigCgt:"))
                .and_then(|m| u64::from_str_radix(m.trim(), 16).ok())
        })
        .is_some_and(|m| m & 0x2 != 0)
}

#[test]
fn write_interrupted_by_sigint_stops_between_sectors_and_says_how_to_resume() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let (orig, new) = (image(3), image(4));
    let (d, board, t) = flash_board("sigint", "emu", &orig);
    let file = d.join("new.bin");
    std::fs::write(&file, &new).unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_gpuflash"))
        .args(["--transport", &t, "write", p(&file), "--yes", "--no-backup"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let start = Instant::now();
    while !catches_sigint(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no SIGINT handler"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(150));
    let killed = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let o = child.wait_with_output().unwrap();
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(130), "{out}{err}");
    // No per-sector lines without --verbose.
    assert!(!out.contains("OK sector"), "{out}");
    assert!(out.contains("write interrupted (partial): "), "{out}");
    let line = err
        .lines()
        .find(|l| l.starts_with("interrupted: stopped between sectors, before sector "))
        .unwrap_or_else(|| panic!("{err}"));
    let next: usize = line
        .trim_start_matches("interrupted: stopped between sectors, before sector ")
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!((1..512).contains(&next), "{line}");
    let resume = format!("--start-sector {next} --sector-count {}", 512 - next);
    assert!(line.contains(&resume), "{line}");
    // Whole sectors only: everything before the stop is the new image, everything after the old.
    let flash = std::fs::read(&board).unwrap();
    let at = next * 0x1000;
    assert!(
        flash[..at] == new[..at],
        "sectors before {next} are written"
    );
    assert!(
        flash[at..] == orig[at..],
        "sectors from {next} on are untouched"
    );
    // The resume command it printed finishes the job.
    let o = gpuflash(&[
        "--transport",
        &t,
        "write",
        p(&file),
        "--yes",
        "--no-backup",
        "--start-sector",
        &next.to_string(),
        "--sector-count",
        &(512 - next).to_string(),
    ]);
    assert!(o.status.success(), "{:?}", text(&o));
    assert!(std::fs::read(&board).unwrap() == new);
    // --verbose prints one line per written sector.
    std::fs::write(&board, &orig).unwrap();
    let o = gpuflash(&[
        "--transport",
        &t,
        "write",
        p(&file),
        "--yes",
        "--no-backup",
        "--sector-count",
        "3",
        "--verbose",
    ]);
    let (out, _) = text(&o);
    assert_eq!(out.matches("OK sector").count(), 3, "{out}");
}

/// What each refusal says, and that it comes before any transfer.
#[test]
fn refusals_name_what_is_missing_before_touching_the_board() {
    let (d, _board, t) = flash_board("refusals", "emu", &image(6));
    let other = d.join("other.bin");
    std::fs::write(&other, image(7)).unwrap();
    // --sector-count 0 says what is wrong with it, not "outside 0..512".
    let e = error_line(&gpuflash(&[
        "--transport",
        &t,
        "write",
        p(&other),
        "--yes",
        "--no-backup",
        "--sector-count",
        "0",
    ]));
    assert!(
        e.contains("--sector-count 0: a sector range holds at least 1 sector"),
        "{e}"
    );
    assert!(!e.contains("outside"), "{e}");
    // A wrong-size image is refused before the board is opened (no transport line, no USB
    // transfer).
    let short = d.join("short.bin");
    std::fs::write(&short, vec![0xFFu8; 4096]).unwrap();
    for args in [
        vec!["--transport", t.as_str(), "verify", p(&short)],
        vec![
            "--transport",
            t.as_str(),
            "psp",
            "ifwi-all",
            p(&short),
            "--yes",
        ],
    ] {
        let o = gpuflash(&args);
        let e = error_line(&o);
        assert!(e.contains("4096 bytes"), "{args:?}: {e}");
        let (_, err) = text(&o);
        assert!(
            !err.contains("transport:") && !err.contains("USB transfers"),
            "{args:?}: {err}"
        );
    }
    // Without hardware: a USB-only search does not mention PCI, and every search points to the
    // emulated board.
    let e = error_line(&gpuflash(&["--transport", "usb", "psp", "probe"]));
    assert!(!e.contains("PCI"), "{e}");
    assert!(e.contains("--transport emu:IMAGE"), "{e}");
    let (out, _) = text(&gpuflash(&["info", "--help"]));
    assert!(out.contains("emu:IMAGE"), "{out}");
}
