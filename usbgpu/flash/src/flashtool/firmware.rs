//! The firmware-side commands: the PSP early-boot mailbox (probe, stream a whole IFWI image) and the
//! ROM aperture dump (ROM_INDEX/ROM_DATA), each over a board's BAR5.
use crate::navi31::aperture;
use crate::navi31::psp::{Mailbox, Probe};

use super::{Board, FlashEvent, FlashToolError, Unit};

/// Size of an IFWI image `ifwi_all` streams.
pub const IFWI_SIZE: u32 = 0x20_0000;

/// Query the PSP mailbox (read-only): boot partition, FB state, SPI model id, transfer type.
pub fn psp_probe(board: &mut Board) -> Result<Probe, FlashToolError> {
    let delay = board.delay();
    let mut mb = Mailbox::new(board.bar5()?, delay);
    mb.probe().map_err(FlashToolError::device)
}

/// Stream every IFWI item the PSP requests from `image` until it reports the final phase; returns
/// the items in the order sent. After `Start`, each item is a `Stream(Item)` event followed by
/// `Stream(Bytes)` events.
pub fn psp_ifwi_all(
    board: &mut Board,
    image: &[u8],
    progress: &mut dyn FnMut(FlashEvent),
) -> Result<Vec<u8>, FlashToolError> {
    let delay = board.delay();
    let mut mb = Mailbox::new(board.bar5()?, delay);
    progress(FlashEvent::Start {
        what: "item",
        unit: Unit::Bytes,
        total: 0,
    });
    let items = mb.ifwi_all(image, |ev| progress(FlashEvent::Stream(ev)));
    progress(FlashEvent::Finish);
    Ok(items.map_err(FlashToolError::device)?.to_vec())
}

/// Dump the 2 MiB ROM aperture; refuses a dump without the AA55AA55 magic or with mirrored halves.
pub fn rom_dump(
    board: &mut Board,
    progress: &mut dyn FnMut(FlashEvent),
) -> Result<Vec<u8>, FlashToolError> {
    let mut buf = vec![0u8; aperture::DUMP_SIZE];
    progress(FlashEvent::Start {
        what: "rom dump",
        unit: Unit::Bytes,
        total: buf.len() as u64,
    });
    let r = aperture::dump(&mut board.bar5()?, &mut buf, |n| {
        progress(FlashEvent::Position(n as u64))
    });
    progress(FlashEvent::Finish);
    r.map_err(FlashToolError::device)?;
    Ok(buf)
}
