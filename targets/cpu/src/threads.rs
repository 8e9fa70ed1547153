//! How many worker threads the CPU device runs a bundle with.
use modelrt_core::bundle::Bundle;
use modelrt_hal::target::KernelMeta;

/// CPU worker threads for `bundle` on this machine: [`cpu_threads_for`] with its core count.
pub fn cpu_threads(bundle: &Bundle<'_>, requested: usize) -> usize {
    cpu_threads_for(
        bundle,
        requested,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
    )
}

/// CPU worker threads for `bundle` on a machine with `cores` cores: `requested`, or for 0 as many
/// as its kernels were split into (the largest `core_id` split), capped by `cores` — more would
/// idle, fewer would time-slice.
pub fn cpu_threads_for(bundle: &Bundle<'_>, requested: usize, cores: usize) -> usize {
    if requested != 0 {
        return requested;
    }
    let split = bundle
        .body()
        .kernels
        .iter()
        .filter_map(|k| match k.ok()?.meta {
            KernelMeta::Cpu(m) => Some(m.threads as usize),
            _ => None,
        })
        .max()
        .unwrap_or(1);
    split.min(cores).max(1)
}
