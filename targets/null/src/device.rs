//! [`NullDevice`]: the HAL device trait over host memory; copies run, kernels are refused.
use modelrt_hal::device::{Arg, Device, KernelId, KernelImage, Queue, SubmitTiming};
use modelrt_hal::target::Target;

/// What the null device refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NullError {
    /// A queue launches a kernel: the null device runs none.
    #[error("the null device runs no kernels (kernel {0} was launched); it is the skeleton for a new backend, use a device that computes")]
    NoKernels(u32),
    /// An access outside the arena.
    #[error("null device: {what} at {offset:#x}+{len:#x} is outside the {arena:#x}-byte arena")]
    OutOfArena {
        what: &'static str,
        offset: u64,
        len: u64,
        arena: u64,
    },
    /// The arena does not fit this host's address space.
    #[error("null device: an arena of {0} bytes does not fit in memory")]
    TooLarge(u64),
}

/// One recorded command.
#[derive(Clone, Copy, Debug)]
enum Command {
    Exec(KernelId),
    Copy { dst: u64, src: u64, len: u64 },
}

/// A queue: its commands in order (recorded at load, so replaying allocates nothing).
#[derive(Debug, Default)]
pub struct NullQueue {
    commands: Vec<Command>,
    timeline: u64,
    pending_signal: u64,
}

impl Queue for NullQueue {
    type Error = NullError;
    fn wait(&mut self, _value: u64) -> Result<(), NullError> {
        // Submissions complete before `submit` returns: every earlier signal has been reached.
        Ok(())
    }
    fn timestamp(&mut self) -> Result<(), NullError> {
        Ok(())
    }
    fn exec(
        &mut self,
        kernel: KernelId,
        _args: &[Arg],
        _global: [u32; 3],
        _local: [u32; 3],
    ) -> Result<(), NullError> {
        self.commands.push(Command::Exec(kernel));
        Ok(())
    }
    fn copy(&mut self, dst: u64, src: u64, len: u64) -> Result<(), NullError> {
        self.commands.push(Command::Copy { dst, src, len });
        Ok(())
    }
    fn signal(&mut self, value: u64) -> Result<(), NullError> {
        self.pending_signal = value;
        Ok(())
    }
}

/// The null device: an arena in host memory.
#[derive(Debug, Default)]
pub struct NullDevice {
    arena: Vec<u8>,
    kernels: u32,
}

impl NullDevice {
    /// A device with no arena yet.
    pub fn new() -> NullDevice {
        NullDevice::default()
    }

    fn range(
        &self,
        what: &'static str,
        offset: u64,
        len: u64,
    ) -> Result<std::ops::Range<usize>, NullError> {
        let arena = self.arena.len() as u64;
        match offset.checked_add(len) {
            Some(end) if end <= arena => Ok(offset as usize..end as usize),
            _ => Err(NullError::OutOfArena {
                what,
                offset,
                len,
                arena,
            }),
        }
    }
}

impl Device for NullDevice {
    type Error = NullError;
    type Queue = NullQueue;

    fn check_target(&self, _target: &Target<'_>) -> Result<(), NullError> {
        // It runs no kernels, so no target's kernels are a mismatch.
        Ok(())
    }
    fn alloc_arena(&mut self, bytes: u64) -> Result<(), NullError> {
        let n = usize::try_from(bytes).map_err(|_| NullError::TooLarge(bytes))?;
        let mut arena = Vec::new();
        arena
            .try_reserve_exact(n)
            .map_err(|_| NullError::TooLarge(bytes))?;
        arena.resize(n, 0);
        self.arena = arena;
        Ok(())
    }
    fn upload(&mut self, offset: u64, data: &[u8]) -> Result<(), NullError> {
        let r = self.range("upload", offset, data.len() as u64)?;
        self.arena[r].copy_from_slice(data);
        Ok(())
    }
    fn download(&mut self, offset: u64, out: &mut [u8]) -> Result<(), NullError> {
        let r = self.range("download", offset, out.len() as u64)?;
        out.copy_from_slice(&self.arena[r]);
        Ok(())
    }
    fn load_kernel(&mut self, _kernel: &KernelImage<'_>) -> Result<KernelId, NullError> {
        self.kernels += 1;
        Ok(KernelId(self.kernels - 1))
    }
    fn create_queue(&mut self) -> Result<NullQueue, NullError> {
        Ok(NullQueue::default())
    }
    fn submit(&mut self, queue: &mut NullQueue) -> Result<SubmitTiming, NullError> {
        if let Some(Command::Exec(k)) = queue
            .commands
            .iter()
            .find(|c| matches!(c, Command::Exec(_)))
        {
            return Err(NullError::NoKernels(k.0));
        }
        for c in &queue.commands {
            if let Command::Copy { dst, src, len } = *c {
                let s = self.range("copy source", src, len)?;
                let d = self.range("copy destination", dst, len)?;
                self.arena.copy_within(s, d.start);
            }
        }
        queue.timeline = queue.pending_signal;
        Ok(SubmitTiming::default())
    }
    fn now_ns(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_run_and_launches_are_refused() {
        let mut d = NullDevice::new();
        d.alloc_arena(16).unwrap();
        d.upload(0, &[1, 2, 3, 4]).unwrap();
        let mut q = d.create_queue().unwrap();
        q.copy(8, 0, 4).unwrap();
        q.signal(1).unwrap();
        d.submit(&mut q).unwrap();
        let mut out = [0u8; 4];
        d.download(8, &mut out).unwrap();
        assert_eq!(out, [1, 2, 3, 4]);
        q.exec(KernelId(0), &[], [1; 3], [1; 3]).unwrap();
        assert_eq!(d.submit(&mut q), Err(NullError::NoKernels(0)));
        assert!(matches!(
            d.upload(14, &[0; 4]),
            Err(NullError::OutOfArena { .. })
        ));
    }
}
