//! Footprint probe: the smallest program that uses modelrt-core the way firmware would — parse a
//! bundle, load it on a device, run it — built `no_std`/`no_main` for aarch64-unknown-none so
//! `cargo xtask footprint` can measure the code size of the parser + executor. The device is a
//! dummy that accepts every command; nothing here is meant to execute a real model. With the `sign`
//! feature the bundle's Ed25519 signature is verified against a trusted key first (`core::sign`).
#![no_std]
#![no_main]
#![deny(unsafe_code)]

use core::hint::black_box;
use core::panic::PanicInfo;

use modelrt_core::{Bundle, Executor};
use modelrt_hal::device::{Arg, Device, KernelId, KernelImage, Queue, SubmitTiming};
use modelrt_hal::target::Target;

/// A device that accepts everything and counts commands.
struct DummyDevice {
    kernels: u32,
}

/// Its queue: a command counter.
struct DummyQueue {
    commands: u32,
}

/// The dummy's error type (it never fails).
#[derive(Debug)]
struct Never;

impl core::fmt::Display for Never {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("never")
    }
}

impl Queue for DummyQueue {
    type Error = Never;
    fn wait(&mut self, _value: u64) -> Result<(), Never> {
        self.commands += 1;
        Ok(())
    }
    fn timestamp(&mut self) -> Result<(), Never> {
        self.commands += 1;
        Ok(())
    }
    fn exec(
        &mut self,
        _k: KernelId,
        args: &[Arg],
        _g: [u32; 3],
        _l: [u32; 3],
    ) -> Result<(), Never> {
        self.commands += 1 + black_box(args.len()) as u32;
        Ok(())
    }
    fn copy(&mut self, _dst: u64, _src: u64, _len: u64) -> Result<(), Never> {
        self.commands += 1;
        Ok(())
    }
    fn signal(&mut self, _value: u64) -> Result<(), Never> {
        self.commands += 1;
        Ok(())
    }
}

impl Device for DummyDevice {
    type Error = Never;
    type Queue = DummyQueue;
    fn check_target(&self, target: &Target<'_>) -> Result<(), Never> {
        black_box(target);
        Ok(())
    }
    fn alloc_arena(&mut self, bytes: u64) -> Result<(), Never> {
        black_box(bytes);
        Ok(())
    }
    fn upload(&mut self, offset: u64, data: &[u8]) -> Result<(), Never> {
        black_box((offset, data));
        Ok(())
    }
    fn download(&mut self, offset: u64, out: &mut [u8]) -> Result<(), Never> {
        black_box((offset, out));
        Ok(())
    }
    fn load_kernel(&mut self, kernel: &KernelImage<'_>) -> Result<KernelId, Never> {
        black_box(kernel);
        self.kernels += 1;
        Ok(KernelId(self.kernels - 1))
    }
    fn create_queue(&mut self) -> Result<DummyQueue, Never> {
        Ok(DummyQueue { commands: 0 })
    }
    fn submit(&mut self, queue: &mut DummyQueue) -> Result<SubmitTiming, Never> {
        Ok(SubmitTiming {
            enqueue_ns: 0,
            device_ns: black_box(queue.commands) as u64,
        })
    }
    fn now_ns(&self) -> u64 {
        0
    }
}

/// Where firmware would find the bundle (e.g. a flash partition); opaque to the optimizer.
static BUNDLE: [u8; 256] = [0; 256];

/// The trusted signing key firmware would carry (opaque to the optimizer).
#[cfg(feature = "sign")]
static TRUSTED: [[u8; 32]; 1] = [[0; 32]];

fn run_once() -> u64 {
    let bytes: &[u8] = black_box(&BUNDLE[..]);
    #[cfg(feature = "sign")]
    if modelrt_core::sign::verify(bytes, black_box(&TRUSTED[..])).is_err() {
        return 4;
    }
    let Ok(bundle) = Bundle::parse(bytes) else {
        return 1;
    };
    let Ok(mut exec) = Executor::load(bundle, DummyDevice { kernels: 0 }) else {
        return 2;
    };
    let input = [0u8; 64];
    let mut output = [0u8; 64];
    let inputs: [&[u8]; 1] = [black_box(&input[..])];
    let mut outputs: [&mut [u8]; 1] = [&mut output[..]];
    match exec.run(&inputs, &mut outputs) {
        Ok(t) => t.total_ns,
        Err(_) => 3,
    }
}

/// Entry point (the default linker layout for aarch64-unknown-none starts here). `no_mangle` is the
/// only unsafe attribute in this probe: the symbol name `_start` is unique in the image.
#[allow(unsafe_code)]
#[no_mangle]
pub extern "C" fn _start() -> ! {
    loop {
        black_box(run_once());
    }
}

#[panic_handler]
fn panic(_info: &PanicInfo<'_>) -> ! {
    loop {
        core::hint::spin_loop();
    }
}
