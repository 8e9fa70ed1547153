//! The USB transport the ASM24 bridge driver runs over: vendor control transfers plus bulk endpoints.
//! Implemented by `nusb` on the host and by the bridge emulator in tests.
//!
//! Control transfers are device-recipient *vendor* requests (bmRequestType `0x40` out / `0xC0` in);
//! the transport fills in the request type. Every call carries its own timeout, so no call can hang.
//! The transport also owns the clock used for protocol pauses ([`UsbTransport::sleep`]): on hardware
//! that is the OS clock, in the emulator it advances emulated time.
//!
//! Pipelining: [`UsbTransport::submit_control_out`] and [`UsbTransport::submit_bulk_out`] may return
//! before the transfer finished; their outcome is reported by the next [`UsbTransport::wait_all`]
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

/// Vendor control transfers + bulk endpoints of one claimed USB interface.
pub trait UsbTransport {
    /// Vendor OUT request (bmRequestType `0x40`) with `data` (may be empty).
    fn control_out(
        &mut self,
        request: u8,
        value: u16,
        index: u16,
        data: &[u8],
        timeout: Duration,
    ) -> Result<(), UsbError>;

    /// Vendor IN request (bmRequestType `0xC0`); returns the number of bytes received.
    fn control_in(
        &mut self,
        request: u8,
        value: u16,
        index: u16,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<usize, UsbError>;

    /// Bulk OUT on `endpoint`; returns the number of bytes sent.
    fn bulk_out(&mut self, endpoint: u8, data: &[u8], timeout: Duration)
        -> Result<usize, UsbError>;

    /// Bulk IN on `endpoint`; returns the number of bytes received.
    fn bulk_in(
        &mut self,
        endpoint: u8,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<usize, UsbError>;

    /// Wait `duration` on the transport's clock (OS time on hardware, emulated time in the emulator).
    fn sleep(&mut self, duration: Duration);

    /// Start a vendor OUT request that may complete later (its result is reported by
    /// [`UsbTransport::wait_all`]). Transfers are issued in call order per endpoint.
    fn submit_control_out(
        &mut self,
        request: u8,
        value: u16,
        index: u16,
        data: &[u8],
        timeout: Duration,
    ) -> Result<(), UsbError> {
        self.control_out(request, value, index, data, timeout)
    }

    /// Start a bulk OUT of all of `data` that may complete later (the transport copies `data`);
    /// a short write is reported as [`UsbError::Short`] by [`UsbTransport::wait_all`].
    fn submit_bulk_out(
        &mut self,
        endpoint: u8,
        data: &[u8],
        timeout: Duration,
    ) -> Result<(), UsbError> {
        let sent = self.bulk_out(endpoint, data, timeout)?;
        if sent != data.len() {
            return Err(UsbError::Short {
                expected: data.len(),
                actual: sent,
            });
        }
        Ok(())
    }

    /// Wait for every submitted transfer; returns the first error since the last call.
    fn wait_all(&mut self) -> Result<(), UsbError> {
        Ok(())
    }
}

/// Forwards every `UsbTransport` method through a pointer type (`&mut T`, `Box<T>`).
macro_rules! forward_transport {
    ($(#[$attr:meta])* $ptr:ty) => {
        $(#[$attr])*
        impl<T: UsbTransport + ?Sized> UsbTransport for $ptr {
            fn control_out(
                &mut self,
                request: u8,
                value: u16,
                index: u16,
                data: &[u8],
                timeout: Duration,
            ) -> Result<(), UsbError> {
                (**self).control_out(request, value, index, data, timeout)
            }
            fn control_in(
                &mut self,
                request: u8,
                value: u16,
                index: u16,
                buf: &mut [u8],
                timeout: Duration,
            ) -> Result<usize, UsbError> {
                (**self).control_in(request, value, index, buf, timeout)
            }
            fn bulk_out(
                &mut self,
                endpoint: u8,
                data: &[u8],
                timeout: Duration,
            ) -> Result<usize, UsbError> {
                (**self).bulk_out(endpoint, data, timeout)
            }
            fn bulk_in(
                &mut self,
                endpoint: u8,
                buf: &mut [u8],
                timeout: Duration,
            ) -> Result<usize, UsbError> {
                (**self).bulk_in(endpoint, buf, timeout)
            }
            fn sleep(&mut self, duration: Duration) {
                (**self).sleep(duration)
            }
            fn submit_control_out(
                &mut self,
                request: u8,
                value: u16,
                index: u16,
                data: &[u8],
                timeout: Duration,
            ) -> Result<(), UsbError> {
                (**self).submit_control_out(request, value, index, data, timeout)
            }
            fn submit_bulk_out(
                &mut self,
                endpoint: u8,
                data: &[u8],
                timeout: Duration,
            ) -> Result<(), UsbError> {
                (**self).submit_bulk_out(endpoint, data, timeout)
            }
            fn wait_all(&mut self) -> Result<(), UsbError> {
                (**self).wait_all()
            }
        }
    };
}

forward_transport!(&mut T);
forward_transport!(#[cfg(feature = "std")] std::boxed::Box<T>);
