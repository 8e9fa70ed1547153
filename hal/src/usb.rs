//! The USB transport the ASM24 bridge driver runs over: vendor control transfers plus bulk endpoints.
//! Implemented by `nusb` on the host and by the bridge emulator in tests.
//!
//! Control transfers are device-recipient *vendor* requests (bmRequestType `0x40` out / `0xC0` in);
//! the transport fills in the request type. Every call carries its own timeout, so no call can hang.
//! The transport also owns the clock used for protocol pauses ([`UsbTransport::sleep`]): on hardware
//! that is the OS clock, in the emulator it advances emulated time.
//!
//! Every transfer goes through one method, [`UsbTransport::transfer`], taking a [`Transfer`]; the
//! per-kind calls (`control_out`, `bulk_in`, …) are provided on top of it, so a transport or a
//! wrapper (counting, recording) implements one method instead of re-declaring the whole set.
//!
//! Pipelining: [`UsbTransport::submit`] (and `submit_control_out` / `submit_bulk_out`) may return
//! before the transfer finished; its outcome is reported by the next [`UsbTransport::wait_all`]
//! (the first error is latched). The provided defaults run synchronously, which is always correct.
use core::fmt;
use core::time::Duration;

/// Why a USB transfer failed. One line, suitable for users.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsbError {
    /// The transfer did not finish within its timeout.
    Timeout,
    /// The device stalled (rejected) the request or endpoint.
    Stall,
    /// The device went away.
    Disconnected,
    /// The device is claimed by another process or driver.
    Busy,
    /// The OS refused access (EACCES); fixing it needs a udev rule or root.
    AccessDenied,
    /// A transfer moved fewer bytes than required.
    Short { expected: usize, actual: usize },
    /// The device sent more data than the buffer holds.
    Overflow,
    /// Any other OS or host-controller error (errno when known, else 0).
    Os(i32),
}

impl fmt::Display for UsbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UsbError::Timeout => write!(f, "USB transfer timed out"),
            UsbError::Stall => write!(f, "USB device stalled the request"),
            UsbError::Disconnected => write!(f, "USB device disconnected"),
            UsbError::Busy => write!(
                f,
                "USB device is busy (claimed by another process or driver)"
            ),
            UsbError::AccessDenied => write!(f, "permission denied opening the USB device"),
            UsbError::Short { expected, actual } => {
                write!(f, "short USB transfer: {actual}/{expected} bytes")
            }
            UsbError::Overflow => write!(f, "USB device sent more data than requested"),
            UsbError::Os(code) => write!(f, "USB I/O error (os error {code})"),
        }
    }
}

impl core::error::Error for UsbError {}

/// The setup fields of a vendor control request (bmRequestType is implied by the direction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// bRequest.
    pub request: u8,
    /// wValue.
    pub value: u16,
    /// wIndex.
    pub index: u16,
}

impl Setup {
    pub const fn new(request: u8, value: u16, index: u16) -> Self {
        Setup {
            request,
            value,
            index,
        }
    }
}

/// One USB transfer: what the host sends or receives on one endpoint.
///
/// Control transfers are device-recipient vendor requests (the transport fills in bmRequestType);
/// IN transfers carry the buffer the device's data lands in.
#[derive(Debug, PartialEq, Eq)]
pub enum Transfer<'a> {
    /// Vendor OUT request (bmRequestType `0x40`) with a data stage (may be empty).
    ControlOut(Setup, &'a [u8]),
    /// Vendor IN request (bmRequestType `0xC0`) reading at most `buf.len()` bytes.
    ControlIn(Setup, &'a mut [u8]),
    /// Bulk OUT of the data on the endpoint.
    BulkOut(u8, &'a [u8]),
    /// Bulk IN of at most `buf.len()` bytes on the endpoint.
    BulkIn(u8, &'a mut [u8]),
}

impl Transfer<'_> {
    /// Bytes the transfer asks to move (data to send, or room to receive).
    pub fn len(&self) -> usize {
        match self {
            Transfer::ControlOut(_, data) | Transfer::BulkOut(_, data) => data.len(),
            Transfer::ControlIn(_, buf) | Transfer::BulkIn(_, buf) => buf.len(),
        }
    }

    /// True when nothing is to be moved (a control request without data stage).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True for host → device transfers.
    pub fn is_out(&self) -> bool {
        matches!(self, Transfer::ControlOut(..) | Transfer::BulkOut(..))
    }

    /// True for control transfers (endpoint 0).
    pub fn is_control(&self) -> bool {
        matches!(self, Transfer::ControlOut(..) | Transfer::ControlIn(..))
    }
}

/// Vendor control transfers + bulk endpoints of one claimed USB interface.
///
/// Implementors write [`UsbTransport::transfer`] and [`UsbTransport::sleep`] (and, to pipeline,
/// [`UsbTransport::submit`] / [`UsbTransport::wait_all`]); the per-kind methods
/// (`control_out`, `bulk_in`, …) are provided on top of them and are not meant to be overridden,
/// so a wrapper that intercepts `transfer` sees every transfer.
pub trait UsbTransport {
    /// Run one transfer to completion within `timeout`; returns the bytes moved (for a control
    /// OUT, the length of its data stage).
    fn transfer(&mut self, transfer: Transfer<'_>, timeout: Duration) -> Result<usize, UsbError>;

    /// Wait `duration` on the transport's clock (OS time on hardware, emulated time in the emulator).
    fn sleep(&mut self, duration: Duration);

    /// Start an OUT transfer that may complete later (its result is reported by
    /// [`UsbTransport::wait_all`]; a bulk OUT that moves less than all of its data is reported as
    /// [`UsbError::Short`]). Transfers are issued in call order per endpoint; the transport copies
    /// the data. The default runs the transfer synchronously, which is always correct.
    fn submit(&mut self, transfer: Transfer<'_>, timeout: Duration) -> Result<(), UsbError> {
        let expected = transfer.len();
        let control = transfer.is_control();
        let sent = self.transfer(transfer, timeout)?;
        if !control && sent != expected {
            return Err(UsbError::Short {
                expected,
                actual: sent,
            });
        }
        Ok(())
    }

    /// Wait for every submitted transfer; returns the first error since the last call.
    fn wait_all(&mut self) -> Result<(), UsbError> {
        Ok(())
    }

    /// Vendor OUT request (bmRequestType `0x40`) with `data` (may be empty).
    fn control_out(
        &mut self,
        request: u8,
        value: u16,
        index: u16,
        data: &[u8],
        timeout: Duration,
    ) -> Result<(), UsbError> {
        let setup = Setup::new(request, value, index);
        self.transfer(Transfer::ControlOut(setup, data), timeout)
            .map(|_| ())
    }

    /// Vendor IN request (bmRequestType `0xC0`); returns the number of bytes received.
    fn control_in(
        &mut self,
        request: u8,
        value: u16,
        index: u16,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<usize, UsbError> {
        let setup = Setup::new(request, value, index);
        self.transfer(Transfer::ControlIn(setup, buf), timeout)
    }

    /// Bulk OUT on `endpoint`; returns the number of bytes sent.
    fn bulk_out(
        &mut self,
        endpoint: u8,
        data: &[u8],
        timeout: Duration,
    ) -> Result<usize, UsbError> {
        self.transfer(Transfer::BulkOut(endpoint, data), timeout)
    }

    /// Bulk IN on `endpoint`; returns the number of bytes received.
    fn bulk_in(
        &mut self,
        endpoint: u8,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<usize, UsbError> {
        self.transfer(Transfer::BulkIn(endpoint, buf), timeout)
    }

    /// [`UsbTransport::submit`] of a vendor OUT request.
    fn submit_control_out(
        &mut self,
        request: u8,
        value: u16,
        index: u16,
        data: &[u8],
        timeout: Duration,
    ) -> Result<(), UsbError> {
        let setup = Setup::new(request, value, index);
        self.submit(Transfer::ControlOut(setup, data), timeout)
    }

    /// [`UsbTransport::submit`] of a bulk OUT of all of `data`.
    fn submit_bulk_out(
        &mut self,
        endpoint: u8,
        data: &[u8],
        timeout: Duration,
    ) -> Result<(), UsbError> {
        self.submit(Transfer::BulkOut(endpoint, data), timeout)
    }
}

/// Forwards the required `UsbTransport` methods through a pointer type (`&mut T`, `Box<T>`).
macro_rules! forward_transport {
    ($(#[$attr:meta])* $ptr:ty) => {
        $(#[$attr])*
        impl<T: UsbTransport + ?Sized> UsbTransport for $ptr {
            fn transfer(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<usize, UsbError> {
                (**self).transfer(t, timeout)
            }
            fn sleep(&mut self, duration: Duration) {
                (**self).sleep(duration)
            }
            fn submit(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<(), UsbError> {
                (**self).submit(t, timeout)
            }
            fn wait_all(&mut self) -> Result<(), UsbError> {
                (**self).wait_all()
            }
        }
    };
}

forward_transport!(&mut T);
forward_transport!(#[cfg(feature = "std")] std::boxed::Box<T>);
