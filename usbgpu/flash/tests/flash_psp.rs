//! PSP early-boot mailbox against the emulator: probe values and error texts, gating in SOS,
//! readiness and timeout handling, `ifwi_all` streaming exactly the resolved IFWI items, and the
//! abort rules (one best-effort END after a failure mid-stream, no END after a failed START, no
//! second END after a rejected END).
use modelrt_gpuflash::emu::direct::{DirectError, DirectMmio, SharedModel};
use modelrt_gpuflash::emu::flash_board::{
    InjectError, Navi31Bar5, Navi31Config, PspConfig, PspPhase,
};
use modelrt_gpuflash::navi31::ifwi;
use modelrt_gpuflash::navi31::psp::{cmd, error_text, Mailbox, PspError};
use modelrt_gpuflash::navi31::regs::{PSP_COMMAND, PSP_COMMAND_DATA};
use modelrt_hal::mmio::Mmio;

mod common {
    pub mod ifwi;
}

use common::ifwi::{add_ifwi_tables, put};

const SIZE: usize = 0x20_0000;

/// An IFWI-shaped image with the structures §9 resolves.
fn ifwi_image() -> Vec<u8> {
    let mut img: Vec<u8> = (0..SIZE).map(|i| (i * 7 + 3) as u8).collect();
    add_ifwi_tables(&mut img);
    // `$SGN` entry 0: type 1, 0x40 bytes at 0x9000.
    put(&mut img, 0x8010, 1);
    put(&mut img, 0x8018, 0x40);
    put(&mut img, 0x801C, 0x9000);
    img
}

type Model = SharedModel<Navi31Bar5>;
type Mb = Mailbox<DirectMmio<Model>, modelrt_gpuflash::emu::direct::ModelDelay<Navi31Bar5>>;

fn mailbox(cfg: PspConfig) -> (Model, Mb) {
    let m = SharedModel::new(
        Navi31Bar5::new(
            ifwi_image(),
            Navi31Config {
                psp: cfg,
                ..Navi31Config::default()
            },
        )
        .unwrap(),
    );
    let mb = Mailbox::new(DirectMmio::new(m.clone()), m.delay());
    (m, mb)
}

#[test]
fn probe_reports_values_and_errors() {
    let cfg = PspConfig {
        boot_partition: 1,
        fb_state: 0x22,
        spi_model_id: 0xC86015,
        ..PspConfig::default()
    };
    let (_m, mut mb) = mailbox(cfg.clone());
    let p = mb.probe().unwrap();
    assert_eq!((p.boot_partition.error, p.boot_partition.response), (0, 1));
    assert_eq!(p.fb_state.response, 0x22);
    assert_eq!(p.spi_model_id.response, 0xC86015);
    assert_eq!(p.transfer_type.response, cfg.schedule[0]);

    let (_m, mut mb) = mailbox(PspConfig {
        phase: PspPhase::Sos,
        ..PspConfig::default()
    });
    let p = mb.probe().unwrap();
    assert_eq!(p.transfer_type.error, 0x0A, "SOS gates update commands");
    assert_eq!(error_text(0x0A), "partition update error");
    assert_eq!(error_text(0x0C), "write to SPI error");
    assert_eq!(error_text(0x12), "initialization error");
    let e = PspError::<String>::Failed {
        name: "GET_TRANSFER_TYPE",
        error: 0x0A,
    }
    .to_string();
    assert!(
        e.contains("reset card and do not initialize AMDev/SOS"),
        "{e}"
    );
}

#[test]
fn not_ready_and_timeout_are_errors() {
    let (m, mut mb) = mailbox(PspConfig::default());
    DirectMmio::new(m.clone())
        .write32(PSP_COMMAND, 0x0001_0000)
        .unwrap();
    let e = mb.command(cmd::GET_BOOT_PARTITION, None, 10).unwrap_err();
    assert_eq!(
        e,
        PspError::NotReady {
            command: 1,
            status: 0x0001_0000
        }
    );
    // A mailbox that stays busy longer than the timeout.
    let (_m, mut mb) = mailbox(PspConfig {
        busy_ns: 5_000_000_000,
        ..PspConfig::default()
    });
    assert_eq!(
        mb.command(cmd::GET_FB_STATE, None, 50).unwrap_err(),
        PspError::Timeout { command: 6 }
    );
}

#[test]
fn argument_is_written_only_when_given() {
    let (m, mut mb) = mailbox(PspConfig::default());
    DirectMmio::new(m.clone())
        .write32(PSP_COMMAND_DATA, 0xDEAD_BEEF)
        .unwrap();
    mb.command(0x0E, None, 100).unwrap();
    let log = m.lock().psp().log.clone();
    assert_eq!(
        log.last().map(|l| (l.command, l.arg, l.error)),
        Some((0x0E, 0xDEAD_BEEF, 0x0E))
    );
}

#[test]
fn ifwi_all_streams_the_requested_items() {
    let schedule = vec![0x101, 0x102, 0x180, 0x181, 0x182, 0x203];
    let (m, mut mb) = mailbox(PspConfig {
        schedule: schedule.clone(),
        ..PspConfig::default()
    });
    let img = ifwi_image();
    let items = mb.ifwi_all(&img, |_| {}).unwrap();
    assert_eq!(items.as_slice(), &[0x01, 0x02, 0x80, 0x81, 0x82, 0x03]);
    let g = m.lock();
    let got = &g.psp().received;
    assert_eq!(got.len(), 6);
    for (item, data) in got {
        let r = ifwi::resolve(&img, *item).unwrap();
        assert_eq!(data.as_slice(), &img[r], "item {item:#x}");
    }
    // Spot-check against the §9 table directly: item 0x02 = 0x2000 + (2+1)*0x10 bytes.
    assert_eq!(got[1].1.len(), 0x30);
    assert_eq!(got[4].1.as_slice(), &img[0x9000..0x9040]);
    drop(g);
    // After the final phase the board needs a power cycle: further transfers are refused.
    let e = mb.ifwi_all(&img, |_| {}).unwrap_err();
    assert_eq!(
        e,
        PspError::Failed {
            name: "GET_TRANSFER_TYPE",
            error: 0x10
        }
    );
}

/// `ifwi_all` over a one-item `schedule` with `inject` armed: its error and the argument of every
/// END_TRANSFER the PSP received.
fn ifwi_all_failing(schedule: u32, inject: InjectError) -> (PspError<DirectError>, Vec<u32>) {
    let (m, mut mb) = mailbox(PspConfig {
        schedule: vec![schedule],
        inject: Some(inject),
        ..PspConfig::default()
    });
    let e = mb.ifwi_all(&ifwi_image(), |_| {}).unwrap_err();
    let ends = m
        .lock()
        .psp()
        .log
        .iter()
        .filter(|l| l.command == cmd::END_TRANSFER)
        .map(|l| l.arg)
        .collect();
    (e, ends)
}

#[test]
fn failure_mid_stream_sends_one_best_effort_end() {
    let (e, ends) = ifwi_all_failing(
        0x202,
        InjectError {
            command: cmd::DATA_TRANSFER,
            occurrence: 3,
            error: 0x0D,
        },
    );
    assert_eq!(
        e,
        PspError::Failed {
            name: "DATA_TRANSFER",
            error: 0x0D
        }
    );
    assert_eq!(ends.len(), 1);
    assert_eq!(
        ends[0],
        (12 << 8) | 0x02,
        "END carries the 12 bytes sent before the failure"
    );
}

#[test]
fn rejected_end_is_not_repeated_and_failed_start_sends_no_end() {
    let (e, ends) = ifwi_all_failing(
        0x201,
        InjectError {
            command: cmd::END_TRANSFER,
            occurrence: 0,
            error: 0x0C,
        },
    );
    assert_eq!(
        e,
        PspError::Failed {
            name: "END_TRANSFER",
            error: 0x0C
        }
    );
    assert_eq!(ends.len(), 1);

    // `ifwi_all_failing` asserts the failure itself.
    let (_, ends) = ifwi_all_failing(
        0x201,
        InjectError {
            command: cmd::START_TRANSFER,
            occurrence: 0,
            error: 0x03,
        },
    );
    assert_eq!(ends.len(), 0);
}

#[test]
fn ifwi_all_checks_size_and_item_budget() {
    let (_m, mut mb) = mailbox(PspConfig::default());
    assert_eq!(
        mb.ifwi_all(&[0u8; 16], |_| {}).unwrap_err(),
        PspError::ImageSize(16)
    );
    // 20 phase-1 items: no terminal phase within Navi31's 19.
    let (_m, mut mb) = mailbox(PspConfig {
        schedule: vec![0x101; 20],
        ..PspConfig::default()
    });
    assert_eq!(
        mb.ifwi_all(&ifwi_image(), |_| {}).unwrap_err(),
        PspError::NoTerminalPhase
    );
}
