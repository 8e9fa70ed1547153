//! AMD GPUs behind the ASM24 bridge: the AM driver's protocol pieces (firmware blob headers, the IP
//! discovery table, …).
pub mod discovery;
pub mod fw;

// The AM driver (std: it allocates while booting and recording; `run` itself does not).
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod boot;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod bus;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod code_object;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod device;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod error;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod ip;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod mem;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod pm4;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod queue;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod regs;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod scratch;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod sdma;
#[cfg(all(feature = "std", any(target_os = "linux", target_os = "macos")))]
pub mod transfer;
