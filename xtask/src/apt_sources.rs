//! The machine's apt sources: `/etc/apt/sources.list` and `/etc/apt/sources.list.d/` (one-line `*.list`
//! entries and deb822 `*.sources` stanzas, as sources.list(5) describes them), read in apt's order.
//! `cargo xtask firmware` takes its Debian archive URI and keyring from them (`firmware.rs`), and
//! `cargo xtask setup` the mirror it enables bookworm-backports from (`backports.rs`); neither writes a
//! mirror host into the repository.
use std::path::PathBuf;

/// One `deb` line or deb822 stanza of the apt configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AptSource {
    pub uri: String,
    pub suites: Vec<String>,
    pub signed_by: Option<String>,
}

/// `deb [opts] URI SUITE COMPONENT...` lines of a `.list` file (`deb-src` and comments ignored).
pub fn parse_list(text: &str) -> Vec<AptSource> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.split('#').next().unwrap_or("").trim();
        let Some(rest) = line.strip_prefix("deb ") else {
            continue;
        };
        let mut rest = rest.trim();
        let mut signed_by = None;
        if let Some(opts) = rest.strip_prefix('[') {
            let Some((opts, after)) = opts.split_once(']') else {
                continue;
            };
            signed_by = opts
                .split_whitespace()
                .find_map(|o| o.strip_prefix("signed-by="))
                .map(str::to_string);
            rest = after.trim();
        }
        let mut words = rest.split_whitespace();
        if let (Some(uri), Some(suite)) = (words.next(), words.next()) {
            out.push(AptSource {
                uri: uri.to_string(),
                suites: vec![suite.to_string()],
                signed_by,
            });
        }
    }
    out
}

/// Stanzas of a deb822 `.sources` file with `Types: deb` (and not `Enabled: no`).
pub fn parse_sources(text: &str) -> Vec<AptSource> {
    let mut out = Vec::new();
    for stanza in text.split("\n\n") {
        let field = |name: &str| {
            stanza
                .lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.trim().eq_ignore_ascii_case(name).then(|| v.trim())
                })
        };
        let types = field("Types").unwrap_or("");
        if !types.split_whitespace().any(|t| t == "deb") || field("Enabled") == Some("no") {
            continue;
        }
        let suites: Vec<String> = field("Suites")
            .unwrap_or("")
            .split_whitespace()
            .map(str::to_string)
            .collect();
        for uri in field("URIs").unwrap_or("").split_whitespace() {
            out.push(AptSource {
                uri: uri.to_string(),
                suites: suites.clone(),
                signed_by: field("Signed-By").map(str::to_string),
            });
        }
    }
    out
}

/// Every apt source of the machine, in apt's reading order.
pub fn machine_sources() -> Vec<AptSource> {
    let mut out = Vec::new();
    if let Ok(t) = std::fs::read_to_string("/etc/apt/sources.list") {
        out.extend(parse_list(&t));
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir("/etc/apt/sources.list.d")
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.sort();
    for f in files {
        let Ok(t) = std::fs::read_to_string(&f) else {
            continue;
        };
        match f.extension().and_then(|e| e.to_str()) {
            Some("list") => out.extend(parse_list(&t)),
            Some("sources") => out.extend(parse_sources(&t)),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // Formats as sources.list(5) documents them.
    #[test]
    fn one_line_entries() {
        let list = "# comment\ndeb-src http://a/debian bookworm main\n\
                    deb [arch=amd64 signed-by=/k.gpg] http://deb.example/debian bookworm main non-free-firmware\n\
                    deb https://x/apt cloud-sdk main # trailing comment\n\
                    deb [arch=amd64\n";
        let l = parse_list(list);
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].uri, "http://deb.example/debian");
        assert_eq!(l[0].suites, ["bookworm"]);
        assert_eq!(l[0].signed_by.as_deref(), Some("/k.gpg"));
        assert_eq!(l[1].uri, "https://x/apt");
        assert_eq!(l[1].suites, ["cloud-sdk"]);
        assert_eq!(l[1].signed_by, None);
    }

    #[test]
    fn deb822_stanzas() {
        let sources = "Types: deb\n# http://snapshot\nURIs: http://m/debian http://n/debian\n\
                       Suites: bookworm bookworm-updates\nComponents: main\n\
                       Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n\
                       Types: deb-src\nURIs: http://src/debian\nSuites: bookworm\n\n\
                       types: deb\nuris: http://off/debian\nsuites: trixie\nenabled: no\n";
        let s = parse_sources(sources);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].uri, "http://m/debian");
        assert_eq!(s[1].uri, "http://n/debian");
        assert_eq!(s[1].suites, ["bookworm", "bookworm-updates"]);
        assert_eq!(
            s[0].signed_by.as_deref(),
            Some("/usr/share/keyrings/debian-archive-keyring.gpg")
        );
    }
}
