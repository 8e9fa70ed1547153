//! [`Counting`]: a [`UsbTransport`] wrapper that counts transfers and bytes per direction, so tools
//! can report round trips per MiB on real hardware exactly as on the emulator.
use core::time::Duration;
use modelrt_hal::usb::{UsbError, UsbTransport};

/// Transfers and bytes seen by the host (failed transfers count too).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransferCounts {
    pub control_out: u64,
    pub control_in: u64,
    pub bulk_out: u64,
    pub bulk_in: u64,
    pub control_bytes_out: u64,
    pub control_bytes_in: u64,
    pub bulk_bytes_out: u64,
    pub bulk_bytes_in: u64,
}

impl TransferCounts {
    /// Control transfers.
    pub fn control(&self) -> u64 {
        self.control_out + self.control_in
    }

    /// Bulk transfers.
    pub fn bulk(&self) -> u64 {
        self.bulk_out + self.bulk_in
    }

    /// All transfers (USB round trips).
    pub fn transfers(&self) -> u64 {
        self.control() + self.bulk()
    }

    /// `self − earlier`, saturating.
    pub fn since(&self, e: &TransferCounts) -> TransferCounts {
        TransferCounts {
            control_out: self.control_out.saturating_sub(e.control_out),
            control_in: self.control_in.saturating_sub(e.control_in),
            bulk_out: self.bulk_out.saturating_sub(e.bulk_out),
            bulk_in: self.bulk_in.saturating_sub(e.bulk_in),
            control_bytes_out: self.control_bytes_out.saturating_sub(e.control_bytes_out),
            control_bytes_in: self.control_bytes_in.saturating_sub(e.control_bytes_in),
            bulk_bytes_out: self.bulk_bytes_out.saturating_sub(e.bulk_bytes_out),
            bulk_bytes_in: self.bulk_bytes_in.saturating_sub(e.bulk_bytes_in),
        }
    }
}

/// Counts every transfer passed to the inner transport.
pub struct Counting<T> {
    inner: T,
    counts: TransferCounts,
}

impl<T> Counting<T> {
    pub fn new(inner: T) -> Self {
        Counting {
            inner,
            counts: TransferCounts::default(),
        }
    }

    pub fn counts(&self) -> TransferCounts {
        self.counts
    }

    pub fn inner(&self) -> &T {
        &self.inner
    }

    pub fn into_inner(self) -> T {
        self.inner
    }
}

impl<T: UsbTransport> UsbTransport for Counting<T> {
    fn control_out(
        &mut self,
        r: u8,
        v: u16,
        i: u16,
        data: &[u8],
        t: Duration,
    ) -> Result<(), UsbError> {
        self.counts.control_out += 1;
        self.counts.control_bytes_out += data.len() as u64;
        self.inner.control_out(r, v, i, data, t)
    }

    fn control_in(
        &mut self,
        r: u8,
        v: u16,
        i: u16,
        buf: &mut [u8],
        t: Duration,
    ) -> Result<usize, UsbError> {
        self.counts.control_in += 1;
        let n = self.inner.control_in(r, v, i, buf, t)?;
        self.counts.control_bytes_in += n as u64;
        Ok(n)
    }

    fn bulk_out(&mut self, ep: u8, data: &[u8], t: Duration) -> Result<usize, UsbError> {
        self.counts.bulk_out += 1;
        let n = self.inner.bulk_out(ep, data, t)?;
        self.counts.bulk_bytes_out += n as u64;
        Ok(n)
    }

    fn bulk_in(&mut self, ep: u8, buf: &mut [u8], t: Duration) -> Result<usize, UsbError> {
        self.counts.bulk_in += 1;
        let n = self.inner.bulk_in(ep, buf, t)?;
        self.counts.bulk_bytes_in += n as u64;
        Ok(n)
    }

    fn sleep(&mut self, d: Duration) {
        self.inner.sleep(d)
    }

    fn submit_control_out(
        &mut self,
        r: u8,
        v: u16,
        i: u16,
        data: &[u8],
        t: Duration,
    ) -> Result<(), UsbError> {
        self.counts.control_out += 1;
        self.counts.control_bytes_out += data.len() as u64;
        self.inner.submit_control_out(r, v, i, data, t)
    }

    fn submit_bulk_out(&mut self, ep: u8, data: &[u8], t: Duration) -> Result<(), UsbError> {
        self.counts.bulk_out += 1;
        // Counted as sent; a short or failed submission is reported by `wait_all`.
        self.counts.bulk_bytes_out += data.len() as u64;
        self.inner.submit_bulk_out(ep, data, t)
    }

    fn wait_all(&mut self) -> Result<(), UsbError> {
        self.inner.wait_all()
    }
}
