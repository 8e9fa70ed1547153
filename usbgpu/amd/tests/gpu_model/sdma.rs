//! The model's SDMA 6.0 queue driven with packets written from docs/hw/amd-gpu.md §8: bytes
//! really move between VRAM and system pages (the bridge's SRAM window) through the page tables,
//! polls wait for memory, fences and timestamps land, and failures stop the queue visibly.
use super::support::*;
use modelrt_amd::emu::navi31_gpu::{Engine, GpuError};
use modelrt_asm24::emu::SystemBus;

const RING: u64 = VA_BASE;
const RING_BYTES: u64 = 0x4000;
const SRC: u64 = VA_BASE + 0x1_0000;
const DST: u64 = VA_BASE + 0x2_0000;
const FENCE: u64 = VA_BASE + 0x3_0000;
/// System pages: the SRAM window (bus 0x200000, 512 KiB) mapped at a 1 MiB-aligned VA.
const SRAM_VA: u64 = VA_BASE + 0x100_0000;
const SRAM_BUS: u64 = 0x20_0000;

fn phys(va: u64) -> u64 {
    DATA_AREA + (va - VA_BASE)
}

fn rig() -> Rig {
    let mut r = Rig::new();
    r.map(VA_BASE, DATA_AREA, 64, false);
    r.map(SRAM_VA, SRAM_BUS, 128, true);
    r.enable_gc_vm();
    r.sdma_queue(RING, RING_BYTES);
    r
}

fn copy_linear(src: u64, dst: u64, bytes: u32) -> [u32; 7] {
    [
        1,
        bytes - 1,
        0,
        src as u32,
        (src >> 32) as u32,
        dst as u32,
        (dst >> 32) as u32,
    ]
}

fn fence(va: u64, value: u32) -> [u32; 4] {
    [5 | (3 << 16), va as u32, (va >> 32) as u32, value]
}

/// Append `packets` at byte `at` of the ring and ring the doorbell with the new write pointer.
fn submit(r: &mut Rig, at: u64, packets: &[u32]) -> u64 {
    r.put(phys(RING) + at, packets);
    let wptr = at + 4 * packets.len() as u64;
    r.gpu.doorbell(SDMA_DOORBELL, wptr);
    r.service();
    wptr
}

fn pattern(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed;
    (0..n)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (x >> 16) as u8
        })
        .collect()
}

#[test]
fn copy_linear_round_trips_bytes_between_vram_and_sram() {
    let mut r = rig();
    let data = pattern(10_007, 1); // crosses page boundaries, odd length
    r.gpu.vram_write(phys(SRC) + 3, &data);
    let mut s = copy_linear(SRC + 3, SRAM_VA + 0x41, data.len() as u32).to_vec();
    s.extend(copy_linear(SRAM_VA + 0x41, DST + 5, data.len() as u32));
    s.extend(fence(FENCE, 0x5151));
    let wptr = submit(&mut r, 0, &s);
    assert_eq!(r.gpu.take_errors(), vec![]);
    let mut sram = vec![0u8; data.len()];
    assert!(r.sys.read(SRAM_BUS + 0x41, &mut sram));
    assert_eq!(sram, data, "VRAM → SRAM");
    let mut back = vec![0u8; data.len()];
    r.gpu.vram_read(phys(DST) + 5, &mut back);
    assert_eq!(back, data, "SRAM → VRAM");
    assert_eq!(r.get32(phys(FENCE)), 0x5151);
    assert_eq!(
        r.gpu.reg_read(SDMA0_QUEUE0_RB_RPTR) as u64,
        wptr,
        "read pointer in bytes"
    );
}

#[test]
fn poll_regmem_waits_for_a_sentinel_in_sram() {
    let mut r = rig();
    let sentinel = 0x5100_0007u32;
    // POLL_REGMEM memory EQ(3) on the window's last dword, retry 0xFFF, interval 4
    // (docs/hw/amd-gpu.md §8).
    let poll_at = SRAM_VA + 0x3FFFC;
    let mut s = vec![
        8 | (3 << 28) | (1 << 31),
        poll_at as u32,
        (poll_at >> 32) as u32,
        sentinel,
        !0,
        4 | (0xFFF << 16),
    ];
    s.extend(fence(FENCE, 1));
    submit(&mut r, 0, &s);
    assert_eq!(r.get32(phys(FENCE)), 0, "fence waits behind the poll");
    // A bulk OUT lands in SRAM; the next service re-evaluates the poll.
    assert!(r.sys.write(SRAM_BUS + 0x3FFFC, &sentinel.to_le_bytes()));
    r.service();
    assert_eq!(r.get32(phys(FENCE)), 1);
    assert_eq!(r.gpu.take_errors(), vec![]);
}

#[test]
fn write_timestamp_trap_and_nop_padding() {
    let mut r = rig();
    r.gpu.advance(5_000_000);
    let mut s = vec![
        2,
        FENCE as u32,
        (FENCE >> 32) as u32,
        1,
        0xAAAA_0001,
        0xBBBB_0002,
    ]; // WRITE 2 dw
    s.extend([13 | (2 << 8), (FENCE + 8) as u32, (FENCE >> 32) as u32]); // TIMESTAMP global
    s.extend([6, 0]); // TRAP
    s.extend([0, 0, 0]); // zero dwords = NOPs
    submit(&mut r, 0, &s);
    assert_eq!(r.gpu.take_errors(), vec![]);
    assert_eq!(
        [r.get32(phys(FENCE)), r.get32(phys(FENCE + 4))],
        [0xAAAA_0001, 0xBBBB_0002]
    );
    assert!(r.get64(phys(FENCE + 8)) >= 500_000, "5 ms at 100 MHz");
}

#[test]
fn unknown_packet_and_page_fault_stop_the_queue() {
    let mut r = rig();
    let mut s = fence(FENCE, 1).to_vec();
    s.extend([0x77, 0, 0, 0]);
    s.extend(fence(FENCE + 4, 2));
    submit(&mut r, 0, &s);
    assert_eq!([r.get32(phys(FENCE)), r.get32(phys(FENCE + 4))], [1, 0]);
    let e = r.gpu.take_errors();
    assert!(
        matches!(
            &e[..],
            [GpuError::QueueHang {
                engine: Engine::Sdma,
                header: 0x77,
                ..
            }]
        ),
        "{e:?}"
    );
    assert_eq!(
        r.gpu.reg_read(SDMA0_QUEUE0_RB_RPTR),
        16,
        "stuck at the bad packet"
    );

    let mut r = rig();
    let unmapped = VA_BASE + 0x800_0000;
    submit(&mut r, 0, &copy_linear(SRC, unmapped, 64));
    let e = r.gpu.take_errors();
    assert!(e.iter().any(|x| matches!(x, GpuError::PageFault { engine: Engine::Sdma, va, write: true, .. } if *va == unmapped)), "{e:?}");
    assert_ne!(r.gpu.reg_read(GCVM_L2_PROTECTION_FAULT_STATUS), 0);
}

#[test]
fn injected_queue_hang_never_advances() {
    let mut r = rig();
    r.gpu.faults(|f| f.hang_queue = Some(Engine::Sdma));
    submit(&mut r, 0, &fence(FENCE, 3));
    assert_eq!(r.get32(phys(FENCE)), 0);
    assert_eq!(r.gpu.reg_read(SDMA0_QUEUE0_RB_RPTR), 0);
}

#[test]
fn a_poll_never_satisfied_trips_the_watchdog() {
    let mut r = rig();
    let mut s = vec![
        8 | (3 << 28) | (1 << 31),
        FENCE as u32,
        (FENCE >> 32) as u32,
        1,
        !0,
        4 | (0xFFF << 16),
    ];
    s.extend(fence(FENCE + 4, 1));
    submit(&mut r, 0, &s);
    r.gpu.advance(9_000_000_000);
    r.service();
    assert_eq!(
        r.gpu.take_errors(),
        vec![],
        "still within the 10 s watchdog"
    );
    r.gpu.advance(2_000_000_000);
    r.service();
    let e = r.gpu.take_errors();
    assert!(
        matches!(&e[..], [GpuError::QueueHang { engine: Engine::Sdma, why, .. }] if why.contains("watchdog")),
        "{e:?}"
    );
    assert_eq!(r.get32(phys(FENCE + 4)), 0);
}
