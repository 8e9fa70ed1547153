//! ONNX's backend node test cases, generated once from the installed `onnx` package (its wheel ships
//! the generators, not the data) by `xtask/exporter/tools/conformance_gen.py` into
//! `target/conformance/cases/`, and read back here. The generator writes `index.json` last, so a
//! missing index means "generate (again)".
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::compare::{dtype_of, Tensor};

/// `index.json`: every case with its op, and the ops tinygrad's ONNX frontend implements.
#[derive(Clone, Debug, Deserialize)]
pub struct Index {
    pub onnx: String,
    /// sha256 of the `conformance_gen.py` that wrote the cases.
    #[serde(default)]
    pub generator: String,
    pub tinygrad_ops: Vec<String>,
    pub cases: Vec<IndexEntry>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct IndexEntry {
    pub name: String,
    pub op: String,
}

/// One input or output value of a case (`case.json`).
#[derive(Clone, Debug, Deserialize)]
pub struct Value {
    pub name: String,
    /// `tensor`, `unrepresentable` (a dtype numpy cannot store portably) or a non-tensor type kind
    /// (`sequence_type`, `optional_type`, `map_type`).
    pub kind: String,
    pub dtype: Option<String>,
    pub shape: Option<Vec<u64>>,
    /// `.npy` file inside the case directory, for tensors that have one.
    pub file: Option<String>,
}

/// `case.json`.
#[derive(Clone, Debug, Deserialize)]
pub struct Case {
    pub name: String,
    pub op: String,
    pub rtol: f64,
    pub atol: f64,
    pub inputs: Vec<Value>,
    pub outputs: Vec<Value>,
    #[serde(skip)]
    pub dir: PathBuf,
}

impl Value {
    /// Why this value cannot be fed or compared as a `.npy` tensor, if it cannot.
    pub fn unusable(&self) -> Option<String> {
        match (&self.file, self.kind.as_str()) {
            (Some(_), _) => None,
            (None, "unrepresentable") => Some(format!(
                "'{}' has dtype {} (no portable .npy form)",
                self.name,
                self.dtype.as_deref().unwrap_or("?")
            )),
            (None, kind) => Some(format!("'{}' is a {kind}, not a tensor", self.name)),
        }
    }
}

impl Case {
    pub fn load(dir: &Path) -> Result<Case> {
        let path = dir.join("case.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let mut c: Case =
            serde_json::from_str(&text).with_context(|| format!("malformed {}", path.display()))?;
        c.dir = dir.to_path_buf();
        Ok(c)
    }

    pub fn model(&self) -> PathBuf {
        self.dir.join("model.onnx")
    }

    /// Absolute path of a value's `.npy` file.
    pub fn file(&self, v: &Value) -> Option<PathBuf> {
        v.file.as_ref().map(|f| self.dir.join(f))
    }

    /// The expected outputs as tensors (an error names an output that is not a comparable tensor).
    pub fn expected(&self) -> Result<Vec<Tensor>> {
        self.outputs
            .iter()
            .map(|v| {
                if let Some(why) = v.unusable() {
                    bail!("expected output {why}");
                }
                let path = self.file(v).context("no file")?;
                load_tensor(&path, v.dtype.as_deref())
            })
            .collect()
    }
}

/// Read a `.npy` file as a tensor; `dtype` overrides the file's dtype name (bfloat16 is stored as
/// its raw 16-bit words, `<u2`).
pub fn load_tensor(path: &Path, dtype: Option<&str>) -> Result<Tensor> {
    let raw = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let a = modelrt_targets::npy::parse(&raw)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let name = dtype.unwrap_or(a.dtype.name()).to_string();
    if let Some(d) = dtype_of(&name) {
        if d.size() != a.dtype.size() {
            bail!(
                "{}: stored as {} but declared {name}",
                path.display(),
                a.dtype.name()
            );
        }
    }
    Ok(Tensor {
        dtype: name,
        shape: a.shape,
        data: a.data,
    })
}

/// `target/conformance/cases/` under the workspace root.
pub fn cases_dir(root: &Path) -> PathBuf {
    root.join("target").join("conformance").join("cases")
}

fn read_index(path: &Path) -> Result<Index> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("malformed {}", path.display()))
}

/// Load the index, generating the cases first when they are missing or were made by another
/// version of the generator.
pub fn ensure_generated(root: &Path, python: &Path) -> Result<Index> {
    let dir = cases_dir(root);
    let index = dir.join("index.json");
    let script = crate::exporter_python::tool("conformance_gen.py");
    let source =
        std::fs::read(&script).with_context(|| format!("cannot read {}", script.display()))?;
    let want = format!("{:x}", Sha256::digest(&source));
    if read_index(&index).is_ok_and(|i| i.generator == want) {
        return read_index(&index);
    }
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("cannot clear {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    eprintln!("generating ONNX node test cases into {}", dir.display());
    let out = crate::exporter_python::command(python)
        .arg(&script)
        .arg(&dir)
        .env("PYTHONWARNINGS", "ignore")
        .output()
        .with_context(|| format!("cannot run {}", script.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        bail!("generating the ONNX node test cases failed: {last}");
    }
    let i = read_index(&index)?;
    if i.generator != want {
        bail!(
            "{} does not record the generator that wrote it",
            index.display()
        );
    }
    Ok(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bfloat16_files_are_read_with_the_declared_dtype_and_sizes_must_agree() {
        let dir = std::env::temp_dir().join(format!("modelrt-cases-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("bf.npy");
        let npy = modelrt_targets::npy::encode(
            modelrt_hal::target::DType::U16,
            &[2],
            &[0x80, 0x3f, 0, 0],
        );
        std::fs::write(&p, npy).unwrap();
        let t = load_tensor(&p, Some("bfloat16")).unwrap();
        assert_eq!(
            (t.dtype.as_str(), t.shape.as_slice()),
            ("bfloat16", &[2u64][..])
        );
        assert_eq!(load_tensor(&p, None).unwrap().dtype, "uint16");
        let e = load_tensor(&p, Some("float32")).unwrap_err().to_string();
        assert!(e.contains("declared float32"), "{e}");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn unusable_values_say_why() {
        let v = Value {
            name: "seq".into(),
            kind: "sequence_type".into(),
            dtype: None,
            shape: None,
            file: None,
        };
        assert_eq!(
            v.unusable().unwrap(),
            "'seq' is a sequence_type, not a tensor"
        );
        let v = Value {
            name: "x".into(),
            kind: "unrepresentable".into(),
            dtype: Some("float8_e4m3fn".into()),
            shape: Some(vec![2]),
            file: None,
        };
        assert!(v.unusable().unwrap().contains("float8_e4m3fn"));
    }
}
