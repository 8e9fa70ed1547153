//! End to end on the Adreno device model (KGSL model + IR3 interpreter), openpilot's Qualcomm-compiled pickles included.
//!
//! One test binary (`cargo test -p modelrt-tests --test adreno`); each module was once a binary of its own
//! (tests/README.md lists the groups).
mod adreno_ir3;
mod adreno_zoo;
mod convert_pickle_ir3;
mod convert_qcom_cl;
mod openpilot_pickles;
mod qcom_cl_pickles;
