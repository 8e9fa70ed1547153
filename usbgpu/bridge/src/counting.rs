//! [`TransferCounts`]: transfers and bytes per direction, kept the same way by the host-side
//! [`Counting`] wrapper and by the bridge emulator, so tools report round trips per MiB on real
//! hardware exactly as on the emulator.
use crate::proto::request;
use core::time::Duration;
use modelrt_hal::usb::{Transfer, UsbError, UsbTransport};

/// Transfers and bytes seen on the link (failed transfers count too; their bytes do not).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransferCounts {
    /// Control OUT transfers (including submitted ones).
    pub control_out: u64,
    /// Control IN transfers.
    pub control_in: u64,
    /// Bulk OUT transfers (including submitted ones).
    pub bulk_out: u64,
    /// Bulk IN transfers.
    pub bulk_in: u64,
    /// Data-stage bytes of control OUT transfers (counted when issued).
    pub control_bytes_out: u64,
    /// Data-stage bytes received by control IN transfers.
    pub control_bytes_in: u64,
    /// Bytes moved by bulk OUT (a submitted bulk OUT counts as sent; its failure is reported later).
    pub bulk_bytes_out: u64,
    /// Bytes moved by bulk IN.
    pub bulk_bytes_in: u64,
    /// Mode-0 TLP requests (0xF0 OUT with mode 0 in wIndex bits 1:0): each asks for one PCIe TLP.
    pub tlps: u64,
}

/// What [`TransferCounts::issue`] remembers about a transfer until its bytes are known.
#[derive(Clone, Copy, Debug)]
pub struct Issued {
    out: bool,
    control: bool,
    len: usize,
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
            tlps: self.tlps.saturating_sub(e.tlps),
        }
    }

    /// Count `t` as issued (whatever its outcome): one transfer, a control OUT's data stage, a TLP.
    pub fn issue(&mut self, t: &Transfer<'_>) -> Issued {
        match t {
            Transfer::ControlOut(setup, data) => {
                self.control_out += 1;
                self.control_bytes_out += data.len() as u64;
                if setup.request == request::TLP && setup.index & 3 == 0 {
                    self.tlps += 1;
                }
            }
            Transfer::ControlIn(..) => self.control_in += 1,
            Transfer::BulkOut(..) => self.bulk_out += 1,
            Transfer::BulkIn(..) => self.bulk_in += 1,
        }
        Issued {
            out: t.is_out(),
            control: t.is_control(),
            len: t.len(),
        }
    }

    /// Count the `n` bytes an issued transfer moved (control OUT bytes were counted at issue).
    pub fn moved(&mut self, issued: Issued, n: usize) {
        let n = n as u64;
        match (issued.control, issued.out) {
            (true, true) => {}
            (true, false) => self.control_bytes_in += n,
            (false, true) => self.bulk_bytes_out += n,
            (false, false) => self.bulk_bytes_in += n,
        }
    }

    /// Count a submitted transfer as issued and, for a bulk OUT, as fully sent.
    pub fn submitted(&mut self, t: &Transfer<'_>) {
        let issued = self.issue(t);
        self.moved(issued, issued.len);
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
    fn transfer(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<usize, UsbError> {
        let issued = self.counts.issue(&t);
        let n = self.inner.transfer(t, timeout)?;
        self.counts.moved(issued, n);
        Ok(n)
    }

    fn sleep(&mut self, d: Duration) {
        self.inner.sleep(d)
    }

    fn submit(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<(), UsbError> {
        // Counted as sent; a short or failed submission is reported by `wait_all`.
        self.counts.submitted(&t);
        self.inner.submit(t, timeout)
    }

    fn wait_all(&mut self) -> Result<(), UsbError> {
        self.inner.wait_all()
    }
}
