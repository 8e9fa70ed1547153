//! `mrt_tensor_info`: what a C caller learns about each input and output (name, dtype, shape,
//! byte size), built once at load from the bundle's tensor table so the C side can hold the names.
use std::ffi::{c_char, CString};

use modelrt_core::bundle::TensorDesc;

use crate::dtype::MrtDtype;

/// Most dimensions an mrt_tensor_info describes.
pub const MRT_MAX_DIMS: usize = 8;

/// One input or output: `name` (NUL-terminated, owned by the model, valid until mrt_model_free),
/// `dtype` (an mrt_dtype), the shape (`ndim` entries of `dims`) and the size in bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct MrtTensorInfo {
    name: *const c_char,
    pub dtype: i32,
    pub ndim: u32,
    pub dims: [i64; MRT_MAX_DIMS],
    pub nbytes: usize,
}

impl MrtTensorInfo {
    /// The name (NUL-terminated, owned by the model; NULL in [`Default`]).
    pub fn name_ptr(&self) -> *const c_char {
        self.name
    }
}

impl Default for MrtTensorInfo {
    /// What a caller passes to be filled in: no name, dtype -1, no dimensions.
    fn default() -> Self {
        MrtTensorInfo {
            name: std::ptr::null(),
            dtype: -1,
            ndim: 0,
            dims: [0; MRT_MAX_DIMS],
            nbytes: 0,
        }
    }
}

/// A tensor's description, owned by the model.
#[derive(Debug)]
pub struct TensorInfo {
    pub name: CString,
    pub dtype: MrtDtype,
    pub dims: Vec<i64>,
    pub nbytes: usize,
}

impl TensorInfo {
    /// From a bundle tensor; refuses what the C struct cannot express.
    pub fn new(t: &TensorDesc<'_>) -> anyhow::Result<Self> {
        anyhow::ensure!(
            t.shape.len() <= MRT_MAX_DIMS,
            "tensor {} has {} dimensions; the C API describes at most {MRT_MAX_DIMS}",
            t.name,
            t.shape.len()
        );
        let dims = t
            .shape
            .iter()
            .map(|&d| i64::try_from(d))
            .collect::<Result<_, _>>()?;
        Ok(TensorInfo {
            name: CString::new(t.name.replace('\0', " "))?,
            dtype: t.dtype.into(),
            dims,
            nbytes: usize::try_from(t.byte_len())?,
        })
    }

    /// The C view (borrows the name).
    pub fn to_c(&self) -> MrtTensorInfo {
        let mut dims = [0i64; MRT_MAX_DIMS];
        dims[..self.dims.len()].copy_from_slice(&self.dims);
        MrtTensorInfo {
            name: self.name.as_ptr(),
            dtype: self.dtype as i32,
            ndim: self.dims.len() as u32,
            dims,
            nbytes: self.nbytes,
        }
    }
}
