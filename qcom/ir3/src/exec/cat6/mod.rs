//! cat6 execution, memory (docs/hw/adreno-kgsl-pm4.md §16.4, §16.9–§16.13): loads and stores in every space
//! (`access`), atomics (`atomic`), the UAVs of immediate slots (`uav`), bindless descriptors and the buffer accesses
//! on them (`bindless`), UBOs and the writable constant file (`ubo`).
mod access;
mod atomic;
mod bindless;
mod uav;
mod ubo;

pub(in crate::exec) use atomic::needs_serial;
