//! How the work groups of a dispatch are cut into batches ([`Batches`]): small work groups are batched (up to
//! `BATCH_FIBERS` fibers, each group with its own shared memory) so one issue serves them all.
use super::group::Group;
use super::launch::{Launch, RunStats};
use super::memory::GpuMemory;
use crate::instr::*;
use crate::program::Program;

/// Fibers batched into one [`Group`] when work groups are small: the per-issue cost is paid once for them all.
const BATCH_FIBERS: usize = 512;

/// How the work groups of a dispatch are cut into batches: batch `b` holds the `per_batch` work groups from
/// linear index (x fastest) `b * per_batch` on, the last one fewer. The serial and the parallel runs use the
/// same batches, so they issue the same instructions.
pub(in crate::exec) struct Batches {
    /// Fibers per work group.
    n: usize,
    per_batch: usize,
    total: usize,
}

impl Batches {
    pub(in crate::exec) fn new(prog: &Program, launch: &Launch<'_>) -> Result<Batches, String> {
        let n = launch.local.iter().map(|&x| x as usize).product::<usize>();
        if n == 0 || n > 1024 {
            return Err(format!(
                "kernel {}: work-group size {:?} is not 1…1024 fibers",
                prog.name, launch.local
            ));
        }
        for (what, r) in [
            ("work-group id", launch.wgid_reg),
            ("local id", launch.lid_reg),
            ("work-group size", launch.wgsize_reg),
            ("work-group offset", launch.wgoffset_reg),
        ] {
            if r.is_some_and(|r| r > 253) {
                return Err(format!(
                    "kernel {}: {what} register {:#x} leaves no room for x, y, z",
                    prog.name,
                    r.unwrap_or(0)
                ));
            }
        }
        let total = launch.groups.iter().map(|&g| g as usize).product::<usize>();
        // `bany`/`ball` vote per wave, and waves never span work groups; batching is nevertheless left off for
        // shaders with them.
        let wave_branch = prog.instrs.iter().any(|i| {
            matches!(
                i.op,
                Op::Br {
                    kind: BrKind::Any | BrKind::All,
                    ..
                }
            )
        });
        let per_batch = if wave_branch {
            1
        } else {
            (BATCH_FIBERS / n).clamp(1, total.max(1))
        };
        Ok(Batches {
            n,
            per_batch,
            total,
        })
    }

    /// Number of batches.
    pub(in crate::exec) fn count(&self) -> usize {
        self.total.div_ceil(self.per_batch)
    }

    /// Run batch `b` on `g` (kept between calls, rebuilt when the batch size changes), adding its counters to
    /// `stats`; an error names the kernel and the batch's work groups.
    pub(in crate::exec) fn run(
        &self,
        b: usize,
        g: &mut Option<Group>,
        prog: &Program,
        launch: &Launch<'_>,
        mem: &mut dyn GpuMemory,
        stats: &mut RunStats,
    ) -> Result<(), String> {
        let first = b * self.per_batch;
        let count = self.per_batch.min(self.total - first);
        if g.as_ref().is_some_and(|g| g.n != count * self.n) {
            *g = None;
        }
        let g = g.get_or_insert_with(|| Group::new(self.n, count, launch.shared_bytes));
        g.reset(launch, first);
        g.run(prog, launch, mem, stats).map_err(|e| {
            let [gx, gy, _] = launch.groups.map(|g| g as usize);
            let id = |i: usize| (i % gx, (i / gx) % gy, i / (gx * gy));
            format!(
                "kernel {}: work groups {:?}…{:?}: {e}",
                prog.name,
                id(first),
                id(first + count - 1)
            )
        })
    }
}
