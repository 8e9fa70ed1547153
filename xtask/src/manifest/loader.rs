//! `Manifest::load`: read `manifest.json` and every blob it references (paths confined to `blobs/`), then check
//! basic consistency (ids, sizes, blob lengths, argument/parameter agreement) with clear errors.
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::schema::*;

/// Why a manifest directory could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid manifest {}: {source}", path.display())]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    /// The manifest is well-formed JSON but internally inconsistent.
    #[error("inconsistent manifest: {0}")]
    Invalid(String),
}

fn invalid<T>(msg: impl Into<String>) -> Result<T, ManifestError> {
    Err(ManifestError::Invalid(msg.into()))
}

/// Blob paths must stay inside the manifest directory: relative, under `blobs/`, no `..`.
fn check_blob_path(p: &str) -> Result<(), ManifestError> {
    let ok = p.starts_with("blobs/")
        && p.len() > "blobs/".len()
        && !p.contains('\\')
        && p.split('/').all(|c| !c.is_empty() && c != "." && c != "..");
    if ok {
        Ok(())
    } else {
        invalid(format!(
            "blob path {p:?} must be a relative path under blobs/"
        ))
    }
}

impl Manifest {
    /// Parse `dir/manifest.json`, read every referenced blob and validate consistency.
    pub fn load(dir: &Path) -> Result<Manifest, ManifestError> {
        let path = dir.join("manifest.json");
        let text = std::fs::read_to_string(&path).map_err(|source| ManifestError::Io {
            path: path.clone(),
            source,
        })?;
        let mut m: Manifest =
            serde_json::from_str(&text).map_err(|source| ManifestError::Json { path, source })?;
        for p in m.blob_paths() {
            check_blob_path(&p)?;
            let bp = dir.join(&p);
            let data =
                std::fs::read(&bp).map_err(|source| ManifestError::Io { path: bp, source })?;
            m.blobs.insert(p, data);
        }
        m.validate()?;
        Ok(m)
    }

    /// Every blob path referenced by the manifest (deduplicated, sorted).
    pub fn blob_paths(&self) -> BTreeSet<String> {
        let mut s = BTreeSet::new();
        s.extend(self.buffers.iter().filter_map(|b| b.blob.clone()));
        for k in &self.kernels {
            s.insert(k.binary.clone());
            s.extend(k.source.clone());
            if let KernelMeta::Ir3(m) = &k.meta {
                s.insert(m.immediates.clone());
            }
        }
        if let Some(r) = &self.reference {
            s.extend(r.inputs.values().cloned());
            s.extend(r.outputs.values().cloned());
        }
        s
    }

    /// Bytes of a loaded blob.
    pub fn blob(&self, path: &str) -> Result<&[u8], ManifestError> {
        match self.blobs.get(path) {
            Some(b) => Ok(b),
            None => invalid(format!("blob {path:?} was not loaded")),
        }
    }

    fn buffer(&self, id: usize, what: &str) -> Result<&Buffer, ManifestError> {
        match self.buffers.get(id) {
            Some(b) => Ok(b),
            None => invalid(format!(
                "{what} refers to buffer {id}, but there are {} buffers",
                self.buffers.len()
            )),
        }
    }

    fn check_range(
        &self,
        id: usize,
        offset: u64,
        size: u64,
        what: &str,
    ) -> Result<(), ManifestError> {
        let b = self.buffer(id, what)?;
        match offset.checked_add(size) {
            Some(end) if end <= b.size => Ok(()),
            _ => invalid(format!(
                "{what}: range [{offset}, +{size}) exceeds buffer {id} of {} bytes",
                b.size
            )),
        }
    }

    /// Consistency checks (everything `load` guarantees beyond JSON shape).
    pub fn validate(&self) -> Result<(), ManifestError> {
        if self.format != FORMAT {
            return invalid(format!(
                "format {} is not supported (expected {FORMAT})",
                self.format
            ));
        }
        for (i, b) in self.buffers.iter().enumerate() {
            if b.id != i {
                return invalid(format!("buffer at index {i} has id {}", b.id));
            }
            let needs_blob = matches!(b.kind, BufferKind::Weight | BufferKind::State);
            match (&b.blob, needs_blob) {
                (Some(p), true) => {
                    let n = self.blob(p)?.len() as u64;
                    if n != b.size {
                        return invalid(format!(
                            "buffer {i} blob {p} has {n} bytes, expected {}",
                            b.size
                        ));
                    }
                }
                (None, true) => {
                    return invalid(format!("{:?} buffer {i} has no initial data blob", b.kind))
                }
                (Some(p), false) => {
                    return invalid(format!(
                        "{:?} buffer {i} must not have a blob ({p})",
                        b.kind
                    ))
                }
                (None, false) => {}
            }
        }
        self.validate_bindings()?;
        for (i, k) in self.kernels.iter().enumerate() {
            self.validate_kernel(i, k)?;
        }
        for (i, op) in self.ops.iter().enumerate() {
            self.validate_op(i, op)?;
        }
        self.validate_reference()
    }

    fn validate_bindings(&self) -> Result<(), ManifestError> {
        for (list, role, kind) in [
            (&self.inputs, "input", BufferKind::Input),
            (&self.outputs, "output", BufferKind::Output),
        ] {
            let mut names = BTreeSet::new();
            for t in list {
                if !names.insert(&t.name) {
                    return invalid(format!("duplicate {role} name {:?}", t.name));
                }
                let what = format!("{role} {:?}", t.name);
                self.check_range(t.buffer, t.offset, t.nbytes(), &what)?;
                let b = self.buffer(t.buffer, &what)?;
                if b.kind != kind {
                    return invalid(format!("{what} is bound to {:?} buffer {}", b.kind, b.id));
                }
            }
        }
        Ok(())
    }

    fn validate_kernel(&self, i: usize, k: &Kernel) -> Result<(), ManifestError> {
        if self.blob(&k.binary)?.is_empty() {
            return invalid(format!("kernel {i} ({}) has an empty binary", k.name));
        }
        if k.entry.is_empty() {
            return invalid(format!("kernel {i} has an empty entry name"));
        }
        let meta_ok = matches!(
            (&self.target, &k.meta),
            (Target::Cpu { .. }, KernelMeta::Cpu(_))
                | (Target::Adreno { .. }, KernelMeta::Ir3(_))
                | (Target::Adreno { .. }, KernelMeta::QcomCl {})
                | (Target::Amd { .. }, KernelMeta::Amd(_))
                | (
                    Target::Hexagon { .. },
                    KernelMeta::Cpu(CpuMeta { threads: 1 })
                )
        );
        if !meta_ok {
            return invalid(format!(
                "kernel {i} ({}) metadata does not match the {:?} target",
                k.name, self.target
            ));
        }
        if let KernelMeta::Ir3(m) = &k.meta {
            let isa = self.blob(&k.binary)?.len() as u64;
            if isa != u64::from(m.image_size) {
                return invalid(format!(
                    "kernel {i} ISA is {isa} bytes but image_size is {}",
                    m.image_size
                ));
            }
            if self.blob(&m.immediates)?.len() % 4 != 0 {
                return invalid(format!(
                    "kernel {i} immediates blob is not a whole number of u32"
                ));
            }
        }
        for p in &k.params {
            let img = p.kind == ParamKind::Image;
            if img != (p.height.is_some() && p.width.is_some())
                || (!img && (p.height.is_some() || p.width.is_some()))
            {
                return invalid(format!(
                    "kernel {i} ({}): height/width must be given exactly for image params",
                    k.name
                ));
            }
        }
        Ok(())
    }

    fn validate_op(&self, i: usize, op: &Op) -> Result<(), ManifestError> {
        let what = format!("op {i}");
        match &op.body {
            OpBody::Copy { dst, src, size } => {
                self.check_range(dst.buffer, dst.offset, *size, &format!("{what} copy dst"))?;
                self.check_range(src.buffer, src.offset, *size, &format!("{what} copy src"))
            }
            OpBody::Kernel {
                kernel,
                args,
                global,
                local,
                threads,
            } => {
                if let Some(t) = threads {
                    let ok = (0..3).all(|d| {
                        let full = global[d].saturating_mul(local[d]);
                        t[d] > full.saturating_sub(local[d]) && t[d] <= full
                    });
                    if !ok {
                        return invalid(format!(
                            "{what} runs {t:?} items, not within the last groups of {global:?} x {local:?}"
                        ));
                    }
                }
                let Some(k) = self.kernels.get(*kernel) else {
                    return invalid(format!(
                        "{what} refers to kernel {kernel}, but there are {}",
                        self.kernels.len()
                    ));
                };
                if args.len() != k.params.len() {
                    return invalid(format!(
                        "{what} has {} args for kernel {} with {} params",
                        args.len(),
                        k.name,
                        k.params.len()
                    ));
                }
                if global.iter().chain(local.iter()).any(|&d| d == 0) {
                    return invalid(format!("{what} has a zero launch dimension"));
                }
                for (j, (p, a)) in k.params.iter().zip(args).enumerate() {
                    match (p.kind, a) {
                        (
                            ParamKind::Buffer | ParamKind::Image,
                            Arg::Buffer {
                                buffer,
                                offset,
                                size,
                            },
                        ) => {
                            self.check_range(*buffer, *offset, *size, &format!("{what} arg {j}"))?;
                            if let (Some(h), Some(w)) = (p.height, p.width) {
                                let need = h * w * 4 * p.dtype.itemsize();
                                if need > *size {
                                    return invalid(format!("{what} arg {j}: image {h}x{w} needs {need} bytes, view has {size}"));
                                }
                            }
                        }
                        (ParamKind::CoreId | ParamKind::Var, Arg::Int { .. }) => {}
                        _ => {
                            return invalid(format!(
                                "{what} arg {j} does not match the {:?} param",
                                p.kind
                            ))
                        }
                    }
                }
                Ok(())
            }
        }
    }

    fn validate_reference(&self) -> Result<(), ManifestError> {
        let Some(r) = &self.reference else {
            return Ok(());
        };
        for (map, list, role) in [
            (&r.inputs, &self.inputs, "input"),
            (&r.outputs, &self.outputs, "output"),
        ] {
            if map.len() != list.len() {
                return invalid(format!(
                    "reference has {} {role}s, the model has {}",
                    map.len(),
                    list.len()
                ));
            }
            for t in list {
                let Some(p) = map.get(&t.name) else {
                    return invalid(format!("reference lacks {role} {:?}", t.name));
                };
                let n = self.blob(p)?.len() as u64;
                if n != t.nbytes() {
                    return invalid(format!(
                        "reference {role} {:?} has {n} bytes, expected {}",
                        t.name,
                        t.nbytes()
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny cpu manifest written by hand from the contract: y = kernel(x, w), x uploaded by a copy.
    fn sample_json() -> serde_json::Value {
        serde_json::json!({
            "format": 1,
            "producer": {"tinygrad": "0.14.0", "tinymesa": null, "onnx_sha256": "00", "dev": "CPU:CLANG:x86_64,x86-64-v3",
                         "renderer": "ClangRenderer", "flags": {"NUM_CPU_THREADS": "4"}},
            "target": {"kind": "cpu", "arch": "x86_64", "baseline": "x86-64-v3"},
            "buffers": [
                {"id": 0, "size": 16, "dtype": "float32", "kind": "input", "blob": null, "label": "input:x"},
                {"id": 1, "size": 16, "dtype": "float32", "kind": "scratch", "blob": null, "label": "upload:x"},
                {"id": 2, "size": 8, "dtype": "float32", "kind": "weight", "blob": "blobs/buf2.bin", "label": "onnx:w"},
                {"id": 3, "size": 256, "dtype": "int8", "kind": "scratch", "blob": null, "label": "arena"},
                {"id": 4, "size": 8, "dtype": "float32", "kind": "output", "blob": null, "label": "output:y"}
            ],
            "inputs": [{"name": "x", "buffer": 0, "offset": 0, "shape": [1, 4], "dtype": "float32"}],
            "outputs": [{"name": "y", "buffer": 4, "offset": 0, "shape": [1, 2], "dtype": "float32"}],
            "kernels": [{"name": "r_2_4", "entry": "r_2_4", "binary": "blobs/k0.bin", "source": "blobs/k0.src",
                         "params": [{"kind": "buffer", "dtype": "float32"}, {"kind": "buffer", "dtype": "float32"},
                                    {"kind": "buffer", "dtype": "float32"}, {"kind": "core_id", "dtype": "int32"}],
                         "meta": {"cpu": {"threads": 2}}}],
            "ops": [
                {"phase": "run", "op": "copy", "dst": {"buffer": 1, "offset": 0}, "src": {"buffer": 0, "offset": 0}, "size": 16},
                {"phase": "run", "op": "kernel", "kernel": 0,
                 "args": [{"buffer": 4, "offset": 0, "size": 8}, {"buffer": 1, "offset": 0, "size": 16},
                          {"buffer": 2, "offset": 0, "size": 8}, {"int": 0}],
                 "global": [2, 1, 1], "local": [1, 1, 1]},
                {"phase": "run", "op": "kernel", "kernel": 0,
                 "args": [{"buffer": 4, "offset": 0, "size": 8}, {"buffer": 1, "offset": 0, "size": 16},
                          {"buffer": 2, "offset": 0, "size": 8}, {"int": 0}],
                 "global": [2, 1, 1], "local": [1, 1, 1]}
            ],
            "reference": {"seed": 0, "inputs": {"x": "blobs/ref_in_0_x.bin"}, "outputs": {"y": "blobs/ref_out_0_y.bin"},
                          "atol": 1e-4, "rtol": 1e-4}
        })
    }

    struct TempDir(PathBuf);
    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn write_dir(tag: &str, json: &serde_json::Value, blobs: &[(&str, usize)]) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "modelrt-manifest-test-{tag}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("blobs")).unwrap();
        std::fs::write(
            dir.join("manifest.json"),
            serde_json::to_string_pretty(json).unwrap(),
        )
        .unwrap();
        for (p, n) in blobs {
            std::fs::write(dir.join(p), vec![0x5a; *n]).unwrap();
        }
        TempDir(dir)
    }

    const GOOD_BLOBS: &[(&str, usize)] = &[
        ("blobs/buf2.bin", 8),
        ("blobs/k0.bin", 100),
        ("blobs/k0.src", 10),
        ("blobs/ref_in_0_x.bin", 16),
        ("blobs/ref_out_0_y.bin", 8),
    ];

    fn load_err(tag: &str, json: &serde_json::Value, blobs: &[(&str, usize)]) -> String {
        let d = write_dir(tag, json, blobs);
        Manifest::load(&d.0)
            .expect_err("manifest should be rejected")
            .to_string()
    }

    #[test]
    fn loads_contract_sample_with_blobs_and_repeated_calls() {
        let d = write_dir("good", &sample_json(), GOOD_BLOBS);
        let m = Manifest::load(&d.0).unwrap();
        assert_eq!(
            m.target,
            Target::Cpu {
                arch: "x86_64".into(),
                baseline: "x86-64-v3".into()
            }
        );
        assert_eq!(m.ops.len(), 3, "repeated kernel calls must both be kept");
        assert!(matches!(m.ops[0].body, OpBody::Copy { size: 16, .. }));
        assert_eq!(m.kernels[0].params[3].kind, ParamKind::CoreId);
        assert_eq!(m.blob("blobs/buf2.bin").unwrap().len(), 8);
        assert_eq!(m.inputs[0].nbytes(), 16);
        assert_eq!(m.kernels[0].meta, KernelMeta::Cpu(CpuMeta { threads: 2 }));
    }

    #[test]
    fn serde_round_trip_keeps_contract_field_names() {
        let m: Manifest = serde_json::from_value(sample_json()).unwrap();
        let back = serde_json::to_value(&m).unwrap();
        assert_eq!(back, sample_json());
    }

    #[test]
    fn rejects_weight_blob_of_wrong_length() {
        let blobs = [
            ("blobs/buf2.bin", 7),
            GOOD_BLOBS[1],
            GOOD_BLOBS[2],
            GOOD_BLOBS[3],
            GOOD_BLOBS[4],
        ];
        let e = load_err("wronglen", &sample_json(), &blobs);
        assert!(
            e.contains("buffer 2 blob blobs/buf2.bin has 7 bytes, expected 8"),
            "{e}"
        );
    }

    #[test]
    fn rejects_missing_blob_file() {
        let e = load_err("missing", &sample_json(), &GOOD_BLOBS[1..]);
        assert!(e.contains("cannot read") && e.contains("buf2.bin"), "{e}");
    }

    #[test]
    fn rejects_bad_kernel_index_and_arg_mismatch() {
        let mut j = sample_json();
        j["ops"][1]["kernel"] = 5.into();
        assert!(load_err("badk", &j, GOOD_BLOBS).contains("refers to kernel 5"));
        let mut j = sample_json();
        j["ops"][1]["args"][3] = serde_json::json!({"buffer": 2, "offset": 0, "size": 4});
        assert!(load_err("badarg", &j, GOOD_BLOBS).contains("does not match the CoreId param"));
    }

    #[test]
    fn rejects_out_of_range_views_and_ids() {
        let mut j = sample_json();
        j["ops"][1]["args"][1]["offset"] = 4.into();
        assert!(load_err("range", &j, GOOD_BLOBS).contains("exceeds buffer 1 of 16 bytes"));
        let mut j = sample_json();
        j["buffers"][3]["id"] = 7.into();
        assert!(load_err("ids", &j, GOOD_BLOBS).contains("buffer at index 3 has id 7"));
        let mut j = sample_json();
        j["outputs"][0]["buffer"] = 9.into();
        assert!(load_err("outbuf", &j, GOOD_BLOBS).contains("refers to buffer 9"));
    }

    #[test]
    fn rejects_path_traversal_and_wrong_format() {
        let mut j = sample_json();
        j["kernels"][0]["source"] = "blobs/../../etc/passwd".into();
        assert!(load_err("trav", &j, GOOD_BLOBS).contains("relative path under blobs/"));
        let mut j = sample_json();
        j["format"] = 2.into();
        assert!(load_err("fmt", &j, GOOD_BLOBS).contains("format 2 is not supported"));
    }

    #[test]
    fn rejects_meta_that_does_not_match_target_and_bad_reference() {
        let mut j = sample_json();
        j["target"] = serde_json::json!({"kind": "amd", "gfx": "gfx1100"});
        assert!(load_err("meta", &j, GOOD_BLOBS).contains("metadata does not match"));
        let blobs = [
            GOOD_BLOBS[0],
            GOOD_BLOBS[1],
            GOOD_BLOBS[2],
            GOOD_BLOBS[3],
            ("blobs/ref_out_0_y.bin", 4),
        ];
        assert!(load_err("ref", &sample_json(), &blobs)
            .contains("reference output \"y\" has 4 bytes, expected 8"));
    }

    /// Kernel metadata is read into hal's field types: a value that does not fit them is refused when the manifest
    /// is read, naming the type (xtask/src/manifest/meta_schema.rs is the schema the exporter checks against).
    #[test]
    fn meta_values_outside_hal_types_are_refused() {
        let amd = serde_json::json!({"descriptor_offset": 0, "entry_offset": 256, "group_segment_fixed_size": 0,
            "private_segment_fixed_size": 0, "kernarg_size": 24, "compute_pgm_rsrc1": 0, "compute_pgm_rsrc2": 0,
            "compute_pgm_rsrc3": 0, "kernel_code_properties": 1024, "wavefront_size": 32, "sgpr_count": 8,
            "vgpr_count": 8});
        let ok: KernelMeta = serde_json::from_value(serde_json::json!({ "amd": amd })).unwrap();
        assert!(matches!(
            ok,
            KernelMeta::Amd(AmdMeta {
                wavefront_size: 32,
                ..
            })
        ));
        for (field, v, ty) in [
            ("wavefront_size", 256u64, "u8"),
            ("descriptor_offset", 1 << 32, "u32"),
            ("sgpr_count", 1 << 16, "u16"),
        ] {
            let mut j = sample_json();
            j["target"] = serde_json::json!({"kind": "amd", "gfx": "gfx1100"});
            let mut a = amd.clone();
            a[field] = v.into();
            j["kernels"][0]["meta"] = serde_json::json!({ "amd": a });
            let e = load_err(&format!("amd-{field}"), &j, GOOD_BLOBS);
            assert!(e.contains(&format!("expected {ty}")), "{field}: {e}");
        }
    }

    #[test]
    fn dtype_itemsizes_match_numpy() {
        for (d, n) in [
            (DType::Float32, 4),
            (DType::Float16, 2),
            (DType::Bfloat16, 2),
            (DType::Int8, 1),
            (DType::Int64, 8),
            (DType::Bool, 1),
        ] {
            assert_eq!(d.itemsize(), n, "{d:?}");
        }
    }
}
