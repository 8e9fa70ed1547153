//! Device models (emulators) of the AMD hardware the AM driver talks to, plugged into the bridge
//! emulator of `modelrt-asm24`: [`navi31_gpu`] (the Navi31 GPU the driver boots).
pub mod navi31_gpu;
