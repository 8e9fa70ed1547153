//! Device models (emulators) for the flash tools: [`flash_board`] (a Navi31 board's BAR5 — SPI
//! flash behind the ROM_SW engine, ROM aperture, PSP flash mailbox — for the bridge emulator of
//! `modelrt-asm24` or directly) and [`direct`] (any device model as a plain `Mmio`, the path
//! without a bridge, like native PCI).
pub mod direct;
pub mod flash_board;
