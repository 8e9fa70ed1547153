//! `modelrt-python`: modelrt as a Python extension module (`import modelrt`), built with PyO3 for
//! CPython's stable ABI (abi3, CPython >= 3.10) as `modelrt._native` and packed with the Python package
//! `targets/python/python/modelrt` into a wheel by maturin (`cargo xtask wheel`). [`cli`] is the wheel's
//! `modelrt` command and `modelrt.compile`.
//! It wraps the same Rust model as the C API (`modelrt_capi::ffi::OwnedModel`), not the C ABI.
//! The API follows onnxruntime's habits: [`load`] a bundle, read `Model.inputs`/`.outputs`,
//! `Model.run(feeds)` with numpy arrays. Our own code is safe Rust except at the boundaries:
//! [`detach`] (a run releases the GIL), [`owner`] (a Model's device state stays on its thread),
//! [`rawbuf`] (numpy arrays viewed in place, where `model` lends them to a run, pinned by [`pin`]) and
//! [`alloc_count`] (the counting global allocator).
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

#[allow(unsafe_code)]
pub mod alloc_count;
pub mod cli;
#[allow(unsafe_code)]
pub mod detach;
pub mod dtype;
pub mod error;
pub mod feeds;
#[allow(unsafe_code)]
pub mod model;
#[allow(unsafe_code)]
pub mod owner;
pub mod pin;
#[allow(unsafe_code)]
pub mod rawbuf;
pub mod report;
pub mod tensor;

/// Every Rust allocation of the extension is counted (`alloc_count`, read by the test suite).
#[global_allocator]
static ALLOCATOR: alloc_count::Counting = alloc_count::Counting;

use std::path::PathBuf;

use modelrt_amd::platform::AmdOptions;
use modelrt_capi::ffi::OwnedModel;
use modelrt_targets::registry::REGISTRY;
use modelrt_targets::runner::{Caller, DeviceChoice, DeviceOptions, LoadOptions, TrustStore};
use pyo3::exceptions::{PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;

use crate::error::{guard, Error};
use crate::model::Model;
use crate::tensor::TensorInfo;

/// Load a modelrt bundle (`.mrt`) on a device and return a `Model`.
///
/// `device` takes the CLI's `--device` names: "cpu", "qcom", "qcom-emu", "dsp", "dsp-emu",
/// "usb", "usb-emu" or "auto" (the device the bundle was compiled for; None means "auto" too).
/// `threads` sets the CPU worker threads (None or 0: as many as the kernels were split into,
/// capped by the host's cores).
/// `firmware_dir` is the AMD firmware directory for "usb"/"usb-emu" (else
/// `$MODELRT_AMD_FIRMWARE_DIR`, else the system directory).
/// `trusted_keys` lists Ed25519 public key files (`.pub`) or directories of them (as
/// `--trusted-keys`; None: the `MODELRT_TRUSTED_KEYS` environment variable, and no check when it is
/// unset): only a bundle signed by one of them loads, checked before any of its code is mapped or
/// run.
///
/// `mmap` (default True) maps the bundle file read-only instead of reading it. A mapped file must
/// not be truncated or rewritten in place while the Model lives: truncating it kills the process
/// (SIGBUS), rewriting it runs bytes that were never checked. Replace bundles with a rename, or
/// pass `mmap=False` to read the file into memory at load (the Model then does not depend on it).
///
/// Raises FileNotFoundError for a missing file, ValueError for a bad argument (an unreadable key
/// file included) and modelrt.Error when the bundle cannot be parsed or loaded on the device or is
/// refused by the trust store.
#[pyfunction]
#[pyo3(signature = (path, device = None, threads = None, firmware_dir = None, trusted_keys = None, mmap = true))]
fn load(
    py: Python<'_>,
    path: PathBuf,
    device: Option<&str>,
    threads: Option<usize>,
    firmware_dir: Option<PathBuf>,
    trusted_keys: Option<Vec<PathBuf>>,
    mmap: bool,
) -> PyResult<Model> {
    if !path.is_file() {
        return Err(PyFileNotFoundError::new_err(format!(
            "no bundle file at {}: compile one with `cargo xtask compile`",
            path.display()
        )));
    }
    let (choice, roles) = match device {
        Some(list) if list.contains(',') => {
            let roles = list
                .split(',')
                .map(|n| parse_device(Some(n.trim())))
                .collect::<PyResult<Vec<_>>>()?;
            (roles[0], roles)
        }
        one => (parse_device(one)?, Vec::new()),
    };
    let store = match &trusted_keys {
        Some(paths) => TrustStore::from_paths(paths).map(Some),
        None => TrustStore::from_env(),
    }
    .map_err(|e| PyValueError::new_err(format!("{e:#}")))?;
    let opts = LoadOptions {
        device: choice,
        roles,
        threads: threads.unwrap_or(0),
        options: DeviceOptions::default()
            .with(AmdOptions {
                firmware_dir,
                option_name: Some("firmware_dir="),
            })
            .with(Caller::Python),
        trusted_keys: store,
    };
    let inner = guard("load", || OwnedModel::open(&path, opts, mmap))?;
    Model::new(py, inner, path, choice)
}

/// The device `name` names (`None`: auto); the error speaks Python (`device=None`).
fn parse_device(name: Option<&str>) -> PyResult<DeviceChoice> {
    let Some(name) = name else {
        return Ok(DeviceChoice::Auto);
    };
    REGISTRY.parse(name).map_err(|_| {
        PyValueError::new_err(format!(
            "unknown device \"{name}\": use one of {} (or device=None for auto)",
            REGISTRY
                .names()
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// modelrt: run precompiled modelrt bundles (`.mrt`) from Python with numpy arrays.
///
/// `modelrt.load(path, device="auto")` returns a `Model`; `Model.run({name: array})` returns a
/// dict of output arrays. Devices ending in "-emu" are software models of the hardware.
#[pymodule(name = "_native")]
fn modelrt(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("Error", m.py().get_type::<Error>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(alloc_count::_rust_allocations, m)?)?;
    m.add_class::<Model>()?;
    m.add_class::<TensorInfo>()?;
    m.add_function(wrap_pyfunction!(cli::_main, m)?)?;
    m.add_function(wrap_pyfunction!(cli::_compile, m)?)?;
    Ok(())
}
