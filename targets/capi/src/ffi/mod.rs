//! The `extern "C"` functions of `modelrt.h`. Each one checks every pointer, index, count and size
//! it is given (a bad one is `MRT_ERR_INVALID_ARGUMENT` with a message, never undefined behaviour
//! as far as the pointers the caller passes are valid or NULL), catches Rust panics at the boundary
//! (`MRT_ERR_PANIC`), and records failures in the thread-local last error (`mrt_last_error`).
use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;

use modelrt_core::bundle::MAX_IO;
use modelrt_targets::runner::{Caller, DeviceOptions, LoadOptions};

use crate::error::{
    clear_last, last_ptr, set_last, CError, MRT_ERR_LOAD, MRT_ERR_PANIC, MRT_ERR_UNTRUSTED, MRT_OK,
};
use crate::info::{MrtTensorInfo, TensorInfo};
use crate::ranges::{self, Range};

mod owned;

pub use owned::{OwnedModel, RefCheck};

/// An opaque loaded model: from mrt_model_load, freed with mrt_model_free. Not thread-safe: use it
/// from one thread at a time (see "Threading" above).
pub struct MrtModel {
    inner: OwnedModel,
}

/// Run `f` at the boundary: its error or panic becomes a status code and the last error.
fn guard(what: &str, f: impl FnOnce() -> Result<(), CError>) -> i32 {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => {
            clear_last();
            MRT_OK
        }
        Ok(Err(e)) => {
            set_last(&format!("{what}: {}", e.message));
            e.code
        }
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            set_last(&format!(
                "{what}: internal error (a bug in modelrt, please report it): {msg}"
            ));
            MRT_ERR_PANIC
        }
    }
}

/// A C string argument, `None` for NULL.
///
/// # Safety
/// `p` is NULL or points to a NUL-terminated string.
unsafe fn c_str<'a>(p: *const c_char, what: &str) -> Result<Option<&'a str>, CError> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: non-null, and the caller guarantees a NUL-terminated string.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str()
        .map(Some)
        .map_err(|_| CError::invalid(format!("{what} is not valid UTF-8")))
}

/// Options of mrt_model_load_with. Zero-initialise it and set `struct_size` to
/// `sizeof(mrt_load_options)` (later versions append fields; a smaller size means the fields after it
/// are unset).
#[repr(C)]
pub struct MrtLoadOptions {
    /// `sizeof(mrt_load_options)` as the caller was compiled with.
    struct_size: usize,
    /// The CLI's --device names; NULL = "auto".
    device: *const c_char,
    /// Load only bundles signed by one of these Ed25519 public keys: `:`-separated `.pub` key files
    /// or directories of them (as `--trusted-keys`); NULL = the `MODELRT_TRUSTED_KEYS` environment
    /// variable, unset or empty = signatures not checked. A refused bundle is MRT_ERR_UNTRUSTED,
    /// before any of its code is mapped or run.
    trusted_keys: *const c_char,
}

impl MrtLoadOptions {
    /// Options for Rust callers (tests): the strings stay owned by the caller and must outlive the
    /// load call.
    pub fn new(device: Option<&CStr>, trusted_keys: Option<&CStr>) -> MrtLoadOptions {
        MrtLoadOptions {
            struct_size: std::mem::size_of::<MrtLoadOptions>(),
            device: device.map_or(std::ptr::null(), CStr::as_ptr),
            trusted_keys: trusted_keys.map_or(std::ptr::null(), CStr::as_ptr),
        }
    }
}

/// Load the bundle at `path` on `device` (the CLI's --device names; NULL = "auto"), with the trust
/// store of `MODELRT_TRUSTED_KEYS` if it is set (see mrt_load_options). On success `*out` is the model
/// (the caller frees it with mrt_model_free); on error `*out` is NULL and the status is
/// MRT_ERR_INVALID_ARGUMENT (a NULL or non-UTF-8 argument, an unknown device), MRT_ERR_UNTRUSTED
/// (refused by the trust store) or MRT_ERR_LOAD (the file or the device could not be opened or
/// loaded).
///
/// The bundle file is memory-mapped read-only, not copied, and stays mapped until mrt_model_free
/// (see "Mapping hazard" above): never truncate or rewrite it in place while a model uses it
/// (replace it with rename(2)), or use mrt_model_load_ex with MRT_LOAD_READ.
///
/// # Safety
/// `path` and `device` are NULL or NUL-terminated strings; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mrt_model_load(
    path: *const c_char,
    device: *const c_char,
    out: *mut *mut MrtModel,
) -> i32 {
    // SAFETY: the caller's contract is the one `load_impl` needs.
    guard("mrt_model_load", || unsafe {
        load_impl(path, device, std::ptr::null(), 0, out)
    })
}

/// mrt_model_load_ex flag: read the bundle file into memory instead of mapping it. The model then
/// keeps no tie to the file: truncating or rewriting it afterwards cannot crash the process or
/// change the weights that run. Costs a copy of the file in memory and its read time at load.
pub const MRT_LOAD_READ: u32 = 1;

/// Every flag mrt_model_load_ex knows.
const MRT_LOAD_KNOWN: u32 = MRT_LOAD_READ;

/// mrt_model_load with `flags` (a bitwise OR of MRT_LOAD_* values; 0 = as mrt_model_load). An
/// unknown flag bit is MRT_ERR_INVALID_ARGUMENT.
///
/// # Safety
/// As mrt_model_load.
#[no_mangle]
pub unsafe extern "C" fn mrt_model_load_ex(
    path: *const c_char,
    device: *const c_char,
    flags: u32,
    out: *mut *mut MrtModel,
) -> i32 {
    // SAFETY: the caller's contract is the one `load_impl` needs.
    guard("mrt_model_load_ex", || unsafe {
        load_impl(path, device, std::ptr::null(), flags, out)
    })
}

/// mrt_model_load with options (`opts` NULL = all defaults): the device and the trust store. The
/// file is mapped (use mrt_model_load_ex with MRT_LOAD_READ to read it).
///
/// # Safety
/// `path` is NULL or a NUL-terminated string; `opts` is NULL or points to `opts->struct_size`
/// readable bytes of an mrt_load_options whose strings are NULL or NUL-terminated; `out` is NULL or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn mrt_model_load_with(
    path: *const c_char,
    opts: *const MrtLoadOptions,
    out: *mut *mut MrtModel,
) -> i32 {
    let (mut device, mut trusted) = (std::ptr::null(), std::ptr::null());
    if !opts.is_null() {
        // SAFETY: non-null and readable for `struct_size` bytes (caller contract); the first field
        // is always there.
        let size = unsafe { (*opts).struct_size };
        let has = |end: usize| size >= end;
        if has(std::mem::offset_of!(MrtLoadOptions, device) + std::mem::size_of::<*const c_char>())
        {
            // SAFETY: within the `struct_size` readable bytes.
            device = unsafe { (*opts).device };
        }
        if has(std::mem::offset_of!(MrtLoadOptions, trusted_keys)
            + std::mem::size_of::<*const c_char>())
        {
            // SAFETY: as above.
            trusted = unsafe { (*opts).trusted_keys };
        }
    }
    // SAFETY: the caller's contract on `path`, the option strings and `out`.
    guard("mrt_model_load_with", || unsafe {
        load_impl(path, device, trusted, 0, out)
    })
}

/// The body of the three loads.
///
/// # Safety
/// `path`, `device` and `trusted` are NULL or NUL-terminated strings; `out` is NULL or writable.
unsafe fn load_impl(
    path: *const c_char,
    device: *const c_char,
    trusted: *const c_char,
    flags: u32,
    out: *mut *mut MrtModel,
) -> Result<(), CError> {
    if out.is_null() {
        return Err(CError::invalid("out is NULL"));
    }
    // SAFETY: `out` is non-null and writable (caller contract); clear it before anything fails.
    unsafe { *out = std::ptr::null_mut() };
    if flags & !MRT_LOAD_KNOWN != 0 {
        return Err(CError::invalid(format!(
            "unknown flags {:#x} (known: MRT_LOAD_READ = {MRT_LOAD_READ})",
            flags & !MRT_LOAD_KNOWN
        )));
    }
    // SAFETY: caller contract on `path`.
    let path = unsafe { c_str(path, "path") }?;
    let path = path.ok_or_else(|| CError::invalid("path is NULL"))?;
    // SAFETY: caller contract on `device`.
    let (device, roles) = crate::device::parse_roles(unsafe { c_str(device, "device") }?)?;
    // SAFETY: caller contract on `trusted`.
    let trusted = unsafe { c_str(trusted, "trusted_keys") }?;
    let paths: Vec<std::path::PathBuf> = trusted
        .map(|t| std::env::split_paths(t).collect())
        .unwrap_or_default();
    let store = modelrt_targets::runner::TrustStore::from_paths_or_env(&paths)
        .map_err(|e| CError::invalid(format!("{e:#}")))?;
    let opts = LoadOptions {
        trusted_keys: store,
        // Errors name the device argument, and the firmware directory by its environment
        // variable (the C API has no parameter for it).
        options: DeviceOptions::default().with(Caller::C),
        roles,
        ..LoadOptions::on(device)
    };
    let map = flags & MRT_LOAD_READ == 0;
    let inner = OwnedModel::open(Path::new(path), opts, map).map_err(|e| CError {
        code: if modelrt_targets::runner::is_refusal(&e) {
            MRT_ERR_UNTRUSTED
        } else {
            MRT_ERR_LOAD
        },
        message: format!("{e:#}"),
    })?;
    let m = Box::into_raw(Box::new(MrtModel { inner }));
    // SAFETY: as above.
    unsafe { *out = m };
    Ok(())
}

/// The model behind a handle.
///
/// # Safety
/// `m` is NULL or a handle from `mrt_model_load` not yet freed, not used on another thread now.
unsafe fn model<'a>(m: *const MrtModel) -> Result<&'a MrtModel, CError> {
    // SAFETY: caller contract: NULL or a live handle.
    unsafe { m.as_ref() }.ok_or_else(|| CError::invalid("model is NULL"))
}

/// Number of inputs (0 for a NULL model).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn mrt_model_input_count(m: *const MrtModel) -> usize {
    // SAFETY: caller contract.
    unsafe { model(m) }.map_or(0, |m| m.inner.inputs().len())
}

/// Number of outputs (0 for a NULL model).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn mrt_model_output_count(m: *const MrtModel) -> usize {
    // SAFETY: caller contract.
    unsafe { model(m) }.map_or(0, |m| m.inner.outputs().len())
}

/// Fill `out` with `infos[i]`.
///
/// # Safety
/// `out` is NULL or writable.
unsafe fn write_info(
    infos: &[TensorInfo],
    kind: &str,
    i: usize,
    out: *mut MrtTensorInfo,
) -> Result<(), CError> {
    if out.is_null() {
        return Err(CError::invalid("out is NULL"));
    }
    let info = infos.get(i).ok_or_else(|| {
        CError::invalid(format!(
            "{kind} index {i} is out of range: the model has {} {kind}s",
            infos.len()
        ))
    })?;
    // SAFETY: non-null and writable (caller contract).
    unsafe { out.write(info.to_c()) };
    Ok(())
}

/// Describe input `i` (0-based, in the bundle's order) into `*out`; MRT_ERR_INVALID_ARGUMENT for a
/// NULL pointer or an index past mrt_model_input_count.
///
/// # Safety
/// `m` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mrt_model_input_info(
    m: *const MrtModel,
    i: usize,
    out: *mut MrtTensorInfo,
) -> i32 {
    guard("mrt_model_input_info", || {
        // SAFETY: caller contract.
        let m = unsafe { model(m) }?;
        // SAFETY: caller contract.
        unsafe { write_info(m.inner.inputs(), "input", i, out) }
    })
}

/// Describe output `i` (0-based, in the bundle's order) into `*out`; MRT_ERR_INVALID_ARGUMENT for a
/// NULL pointer or an index past mrt_model_output_count.
///
/// # Safety
/// `m` is NULL or a live handle; `out` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn mrt_model_output_info(
    m: *const MrtModel,
    i: usize,
    out: *mut MrtTensorInfo,
) -> i32 {
    guard("mrt_model_output_info", || {
        // SAFETY: caller contract.
        let m = unsafe { model(m) }?;
        // SAFETY: caller contract.
        unsafe { write_info(m.inner.outputs(), "output", i, out) }
    })
}

/// Check one pointer array against the model's tensors: arrays non-null, every pointer non-null,
/// every size the tensor's byte size.
///
/// # Safety
/// `ptrs` and `sizes` are NULL or point to `infos.len()` readable elements.
unsafe fn check_io<P>(
    kind: &str,
    infos: &[TensorInfo],
    ptrs: *const *mut P,
    sizes: *const usize,
) -> Result<(), CError> {
    if infos.is_empty() {
        return Ok(());
    }
    if ptrs.is_null() || sizes.is_null() {
        return Err(CError::invalid(format!(
            "{kind}s or {kind}_sizes is NULL but the model has {} {kind}s",
            infos.len()
        )));
    }
    for (i, t) in infos.iter().enumerate() {
        // SAFETY: `i < infos.len()`, which the caller guarantees both arrays hold.
        let (p, size) = unsafe { (*ptrs.add(i), *sizes.add(i)) };
        if p.is_null() {
            return Err(CError::invalid(format!(
                "{kind} {i} ({}) is NULL",
                t.name.to_string_lossy()
            )));
        }
        if size != t.nbytes {
            return Err(CError::invalid(format!(
                "{kind} {i} ({}) has {size} bytes; expected {} (see mrt_model_{kind}_info)",
                t.name.to_string_lossy(),
                t.nbytes
            )));
        }
    }
    Ok(())
}

/// Run one step: `inputs[i]` holds `input_sizes[i]` bytes of input i, `outputs[i]` receives
/// `output_sizes[i]` bytes of output i; every size must equal the tensor's nbytes (else
/// MRT_ERR_INVALID_ARGUMENT, as for NULL arrays or buffers). Output buffers must not overlap each
/// other or the inputs: an output sharing a byte with another output or with an input is refused
/// with MRT_ERR_INVALID_ARGUMENT (naming both; for an in-place computation copy the input first).
/// Inputs may share memory with each other. A stateful bundle's state carries over to the next call. Allocates
/// nothing when it succeeds; MRT_ERR_RUN when the device fails.
///
/// # Safety
/// `m` is NULL or a live handle. `inputs`/`input_sizes` are NULL or hold `mrt_model_input_count`
/// elements, each input pointer NULL or readable for its size; likewise `outputs`/`output_sizes`
/// with writable output buffers (overlaps are checked and refused).
#[no_mangle]
pub unsafe extern "C" fn mrt_model_run(
    m: *mut MrtModel,
    inputs: *const *const c_void,
    input_sizes: *const usize,
    outputs: *const *mut c_void,
    output_sizes: *const usize,
) -> i32 {
    guard("mrt_model_run", || {
        // SAFETY: caller contract: NULL or a live handle used by this thread only.
        let m = unsafe { m.as_mut() }.ok_or_else(|| CError::invalid("model is NULL"))?;
        let (ni, no) = (m.inner.inputs().len(), m.inner.outputs().len());
        // SAFETY: caller contract on the arrays' lengths.
        unsafe {
            check_io(
                "input",
                m.inner.inputs(),
                inputs.cast::<*mut c_void>(),
                input_sizes,
            )?;
            check_io("output", m.inner.outputs(), outputs, output_sizes)?;
        }
        // No output may share a byte with another output or an input (the slices below would
        // alias a mutable one); checked on the addresses before any slice exists.
        let mut in_ranges = [Range { start: 0, end: 0 }; MAX_IO];
        let mut out_ranges = [Range { start: 0, end: 0 }; MAX_IO];
        for (i, t) in m.inner.inputs().iter().enumerate() {
            // SAFETY: `i < ni`, which both arrays hold (caller contract); checked non-null above.
            let (p, size) = unsafe { (*inputs.add(i) as usize, *input_sizes.add(i)) };
            in_ranges[i] = ranges::range("input", i, t, p, size)?;
        }
        for (i, t) in m.inner.outputs().iter().enumerate() {
            // SAFETY: `i < no`, as above.
            let (p, size) = unsafe { (*outputs.add(i) as usize, *output_sizes.add(i)) };
            out_ranges[i] = ranges::range("output", i, t, p, size)?;
        }
        ranges::check_disjoint(
            m.inner.inputs(),
            &in_ranges[..ni],
            m.inner.outputs(),
            &out_ranges[..no],
        )?;
        let mut ins: [&[u8]; MAX_IO] = [&[]; MAX_IO];
        for (i, slot) in ins.iter_mut().enumerate().take(ni) {
            // SAFETY: checked non-null above; readable for `input_sizes[i]` bytes (caller
            // contract), and that size equals the tensor's byte size.
            *slot = unsafe {
                std::slice::from_raw_parts((*inputs.add(i)).cast::<u8>(), *input_sizes.add(i))
            };
        }
        let mut outs: [&mut [u8]; MAX_IO] = std::array::from_fn(|_| <&mut [u8]>::default());
        for (i, slot) in outs.iter_mut().enumerate().take(no) {
            // SAFETY: checked non-null; writable for `output_sizes[i]` bytes (caller contract)
            // and sharing no byte with any other output or input (checked above).
            *slot = unsafe {
                std::slice::from_raw_parts_mut((*outputs.add(i)).cast::<u8>(), *output_sizes.add(i))
            };
        }
        m.inner.run(&ins[..ni], &mut outs[..no])
    })
}

/// Put every state buffer back to its load-time contents (a new sequence starts).
///
/// # Safety
/// `m` is NULL or a live handle.
#[no_mangle]
pub unsafe extern "C" fn mrt_model_reset_state(m: *mut MrtModel) -> i32 {
    guard("mrt_model_reset_state", || {
        // SAFETY: caller contract.
        let m = unsafe { m.as_mut() }.ok_or_else(|| CError::invalid("model is NULL"))?;
        m.inner.reset_state()
    })
}

/// The calling thread's last error message ("" after a call that succeeded); valid until the next
/// mrt_* call on this thread. Never NULL.
#[no_mangle]
pub extern "C" fn mrt_last_error() -> *const c_char {
    last_ptr()
}

/// Free a model and close its bundle file (NULL is ignored). Call it exactly once per model.
///
/// # Safety
/// `m` is NULL or a live handle, not used again afterwards.
#[no_mangle]
pub unsafe extern "C" fn mrt_model_free(m: *mut MrtModel) {
    if m.is_null() {
        return;
    }
    // A panic while dropping is caught so it never unwinds into C.
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `m` came from `Box::into_raw` in `mrt_model_load` and is freed once (caller contract).
        drop(unsafe { Box::from_raw(m) });
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{last, MRT_ERR_INVALID_ARGUMENT};

    #[test]
    fn a_panic_is_an_error_code_not_an_unwind_into_c() {
        let rc = guard("mrt_test", || panic!("boom {}", 7));
        assert_eq!(rc, MRT_ERR_PANIC);
        assert_eq!(
            last(),
            "mrt_test: internal error (a bug in modelrt, please report it): boom 7"
        );
        assert_eq!(guard("mrt_test", || Ok(())), MRT_OK);
        assert_eq!(last(), "", "success clears the message");
        let rc = guard("mrt_test", || Err(CError::invalid("x is NULL")));
        assert_eq!(
            (rc, last().as_str()),
            (MRT_ERR_INVALID_ARGUMENT, "mrt_test: x is NULL")
        );
    }
}
