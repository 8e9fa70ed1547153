//! The Navi31 GPU model (`emu::navi31_gpu`) driven at register and packet level with sequences written
//! from docs/hw/amd-gpu.md, never through the AM driver: discovery, PSP/SMU mailboxes, page tables,
//! PM4 and SDMA queues, fault injection, and the model behind the bridge emulator. One test binary
//! (the modules below) to keep CI link time down.
#[path = "gpu_model/bridge.rs"]
mod bridge;
#[path = "gpu_model/discovery.rs"]
mod discovery;
#[path = "gpu_model/pm4.rs"]
mod pm4;
#[path = "gpu_model/psp.rs"]
mod psp;
#[path = "gpu_model/sdma.rs"]
mod sdma;
#[path = "gpu_model/support.rs"]
#[allow(dead_code)]
mod support;
