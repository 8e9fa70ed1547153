//! Generated tables inside hand-written docs: the text between `<!-- NAME -->` and `<!-- /NAME -->` is replaced,
//! everything around it is kept. Used by the commands that record measurements in docs/ (`cargo xtask zoo --adreno`,
//! `cargo xtask pipeline`).
use std::path::Path;

use anyhow::{bail, Context, Result};

/// `text` with the section `name` replaced by `body` (which should end with a newline).
pub fn replace(text: &str, name: &str, body: &str) -> Option<String> {
    let (open, close) = (format!("<!-- {name} -->\n"), format!("<!-- /{name} -->"));
    let (head, rest) = text.split_once(&open)?;
    let (_, tail) = rest.split_once(&close)?;
    Some(format!("{head}{open}{body}{close}{tail}"))
}

/// Replace section `name` of the file `doc` with `body`.
pub fn write(doc: &Path, name: &str, body: &str) -> Result<()> {
    let text =
        std::fs::read_to_string(doc).with_context(|| format!("cannot read {}", doc.display()))?;
    let Some(new) = replace(&text, name, body) else {
        bail!(
            "{} has no <!-- {name} --> … <!-- /{name} --> section",
            doc.display()
        );
    };
    std::fs::write(doc, new).with_context(|| format!("cannot write {}", doc.display()))
}

#[cfg(test)]
mod tests {
    use super::replace;

    #[test]
    fn only_the_section_changes() {
        let doc = "intro\n<!-- t -->\nold\n<!-- /t -->\noutro\n";
        assert_eq!(
            replace(doc, "t", "new\n").as_deref(),
            Some("intro\n<!-- t -->\nnew\n<!-- /t -->\noutro\n")
        );
        assert_eq!(replace(doc, "u", "x\n"), None);
        assert_eq!(replace("<!-- t -->\nno end", "t", "x\n"), None);
    }
}
