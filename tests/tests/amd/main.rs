//! End to end on the AMD GPU over USB (AM driver, bridge emulator, Navi31 GPU model, RDNA3 interpreter).
//!
//! One test binary (`cargo test -p modelrt-tests --test amd`); each module was once a binary of its own
//! (tests/README.md lists the groups).
mod amd_driver_bundle;
mod amd_driver_noalloc;
#[path = "../../../usbgpu/amd/tests/amd_driver_support/mod.rs"]
mod amd_driver_support;
mod amd_float16;
mod amd_step_transfers;
mod amdgpu_mach;
mod cli_usb_emu_verify;
mod multi_device;
mod rdna3_models;
mod rdna3_support;
