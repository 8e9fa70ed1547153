//! The dtype codes of `modelrt.h` (`mrt_dtype`): stable numbers for the bundle's element types.
use modelrt_hal::target::DType;

/// Element type of a tensor (mrt_tensor_info.dtype). The numbers are ABI: they never change.
#[repr(i32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MrtDtype {
    F32 = 0,
    F16 = 1,
    Bf16 = 2,
    F64 = 3,
    I8 = 4,
    U8 = 5,
    I16 = 6,
    U16 = 7,
    I32 = 8,
    U32 = 9,
    I64 = 10,
    U64 = 11,
    Bool = 12,
}

impl From<DType> for MrtDtype {
    fn from(d: DType) -> Self {
        match d {
            DType::F32 => MrtDtype::F32,
            DType::F16 => MrtDtype::F16,
            DType::BF16 => MrtDtype::Bf16,
            DType::F64 => MrtDtype::F64,
            DType::I8 => MrtDtype::I8,
            DType::U8 => MrtDtype::U8,
            DType::I16 => MrtDtype::I16,
            DType::U16 => MrtDtype::U16,
            DType::I32 => MrtDtype::I32,
            DType::U32 => MrtDtype::U32,
            DType::I64 => MrtDtype::I64,
            DType::U64 => MrtDtype::U64,
            DType::Bool => MrtDtype::Bool,
        }
    }
}
