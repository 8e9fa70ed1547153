//! The real USB transport (std): finds ASM24 bridges running the custom firmware with `nusb` 0.2,
//! claims interface 0 (detaching a kernel driver), and implements [`UsbTransport`] with per-transfer
//! timeouts. Bulk OUT submissions are queued on the endpoint (≤ 2 in flight) and control OUT
//! submissions are kept as pending transfers (≤ 4; nusb submits them on creation on Linux), so a
//! 0xF2 arm overlaps the previous window's bulk OUT as in the reference copy pipeline. Failures of
//! submitted transfers are latched and reported by `wait_all` (or the next synchronous bulk OUT).
//!
//! Not verified on hardware in this tree: the reference host also issues a USB device reset after
//! detaching a kernel driver; this transport relies on `detach_and_claim_interface` alone.
use crate::{EP_BULK_IN, EP_BULK_OUT, PRODUCT_PREFIXES, USB_IDS};
use modelrt_hal::usb::{Setup, Transfer, UsbError, UsbTransport};
use nusb::transfer::{
    Buffer, Bulk, ControlIn, ControlOut, ControlType, In, Out, Recipient, TransferError,
};
use nusb::MaybeFuture;
use std::collections::VecDeque;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::time::Duration;

/// A bridge found on the bus.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BridgeInfo {
    pub bus: u8,
    pub address: u8,
    pub vendor_id: u16,
    pub product_id: u16,
    /// iProduct (the firmware identifies itself here: "custom…").
    pub product: Option<String>,
    /// bcdDevice: the firmware's version as USB reports it (the protocol has no version request).
    pub bcd_device: u16,
}

impl BridgeInfo {
    /// `usb:<bus>-<address>` (docs/hw/asm24-bridge.md §1).
    pub fn name(&self) -> String {
        format!("usb:{}-{}", self.bus, self.address)
    }

    /// Whether iProduct names firmware that speaks the custom protocol.
    pub fn is_custom_firmware(&self) -> bool {
        self.product
            .as_deref()
            .is_some_and(|p| PRODUCT_PREFIXES.iter().any(|pre| p.starts_with(pre)))
    }
}

/// Which bridge to open.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selector {
    /// n-th bridge in enumeration order (0xADD1 devices first).
    Index(usize),
    /// Bus number and device address.
    BusAddress(u8, u8),
}

/// udev rule that grants access to the bridges.
pub const UDEV_RULE: &str =
    "SUBSYSTEM==\"usb\", ATTR{idVendor}==\"add1\", ATTR{idProduct}==\"0001\", MODE=\"0666\"\n\
SUBSYSTEM==\"usb\", ATTR{idVendor}==\"3801\", ATTR{idProduct}==\"0001\", MODE=\"0666\"";

/// Opening or enumerating failed.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot enumerate USB devices: {0}")]
    Enumerate(nusb::Error),
    #[error("no ASM24 bridge with custom firmware found (looked for add1:0001 and 3801:0001)")]
    NoBridge,
    #[error("bridge {selector:?} does not exist ({count} bridges available)")]
    NotFound { selector: Selector, count: usize },
    #[error("permission denied opening {name} (EACCES); add a udev rule to /etc/udev/rules.d/99-asm24.rules:\n{UDEV_RULE}\nthen run `udevadm control --reload && udevadm trigger` and replug")]
    PermissionDenied { name: String },
    #[error("{name} is busy (claimed by another process or driver)")]
    Busy { name: String },
    #[error("{name}: iProduct {product:?} is not the custom firmware (expected a name starting with \"custom\" or \"AS2462\")")]
    NotCustomFirmware {
        name: String,
        product: Option<String>,
    },
    #[error("{name}: {step}: {source}")]
    Open {
        name: String,
        step: &'static str,
        source: nusb::Error,
    },
    #[error("{name}: cannot take the lock file {path}: {source}")]
    Lock {
        name: String,
        path: String,
        source: std::io::Error,
    },
}

fn classify(name: &str, step: &'static str, e: nusb::Error) -> HostError {
    match e.kind() {
        nusb::ErrorKind::PermissionDenied if e.os_error() == Some(libc::EACCES as u32) => {
            HostError::PermissionDenied {
                name: name.to_owned(),
            }
        }
        nusb::ErrorKind::Busy => HostError::Busy {
            name: name.to_owned(),
        },
        _ => HostError::Open {
            name: name.to_owned(),
            step,
            source: e,
        },
    }
}

/// All bridges with the custom firmware's USB ids, 0xADD1 first (docs/hw/asm24-bridge.md §1).
pub fn list_bridges() -> Result<Vec<BridgeInfo>, HostError> {
    let devices: Vec<nusb::DeviceInfo> = match nusb::list_devices().wait() {
        Ok(d) => d.collect(),
        // No USB subsystem at all (e.g. a container without /sys/bus/usb): no bridges.
        Err(e)
            if e.kind() == nusb::ErrorKind::NotFound
                || e.os_error() == Some(libc::ENOENT as u32) =>
        {
            Vec::new()
        }
        Err(e) => return Err(HostError::Enumerate(e)),
    };
    let mut out = Vec::new();
    for (vid, pid) in USB_IDS {
        for d in devices
            .iter()
            .filter(|d| d.vendor_id() == vid && d.product_id() == pid)
        {
            out.push(BridgeInfo {
                bus: d.busnum(),
                address: d.device_address(),
                vendor_id: vid,
                product_id: pid,
                product: d.product_string().map(str::to_owned),
                bcd_device: d.device_version(),
            });
        }
    }
    Ok(out)
}

/// An opened, claimed bridge.
pub struct NusbTransport {
    info: BridgeInfo,
    interface: nusb::Interface,
    ep_out: nusb::Endpoint<Bulk, Out>,
    ep_in: nusb::Endpoint<Bulk, In>,
    /// Expected lengths and timeouts of queued bulk OUTs.
    pending: VecDeque<(usize, Duration)>,
    /// Submitted control OUTs (already in flight on Linux, where nusb submits on creation).
    pending_control: VecDeque<PendingControl>,
    latched: Option<UsbError>,
    _lock: File,
}

/// Waits for one submitted control transfer.
type PendingControl = Box<dyn FnOnce() -> Result<(), TransferError> + Send>;

fn map_transfer(e: TransferError) -> UsbError {
    match e {
        TransferError::Cancelled => UsbError::Timeout,
        TransferError::Stall => UsbError::Stall,
        TransferError::Disconnected => UsbError::Disconnected,
        TransferError::Fault => UsbError::Os(libc::EIO),
        TransferError::InvalidArgument => UsbError::Os(libc::EINVAL),
        TransferError::Unknown(code) => UsbError::Os(code as i32),
    }
}

/// A vendor-type, device-recipient control OUT (every OUT request of the protocol).
fn vendor_out(setup: Setup, data: &[u8]) -> ControlOut<'_> {
    ControlOut {
        control_type: ControlType::Vendor,
        recipient: Recipient::Device,
        request: setup.request,
        value: setup.value,
        index: setup.index,
        data,
    }
}

fn take_lock(name: &str) -> Result<File, HostError> {
    let path = std::env::temp_dir().join(format!("am_{name}.lock"));
    let lock_err = |source| HostError::Lock {
        name: name.to_owned(),
        path: path.display().to_string(),
        source,
    };
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(lock_err)?;
    // SAFETY: flock on a valid, owned fd; no memory is shared with the kernel.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc != 0 {
        return Err(HostError::Busy {
            name: name.to_owned(),
        });
    }
    Ok(file)
}

impl NusbTransport {
    /// Find and open a bridge: lock, check iProduct, set configuration 1, detach a kernel driver
    /// and claim interface 0, alt setting 0.
    pub fn open(selector: Selector) -> Result<Self, HostError> {
        let bridges = list_bridges()?;
        if bridges.is_empty() {
            return Err(HostError::NoBridge);
        }
        let info = match selector {
            Selector::Index(i) => bridges.get(i),
            Selector::BusAddress(b, a) => bridges.iter().find(|d| d.bus == b && d.address == a),
        }
        .cloned()
        .ok_or(HostError::NotFound {
            selector,
            count: bridges.len(),
        })?;
        let name = info.name();
        if !info.is_custom_firmware() {
            return Err(HostError::NotCustomFirmware {
                name,
                product: info.product,
            });
        }
        let lock = take_lock(&name)?;
        let dev_info = nusb::list_devices()
            .wait()
            .map_err(HostError::Enumerate)?
            .find(|d| d.busnum() == info.bus && d.device_address() == info.address)
            .ok_or(HostError::NotFound {
                selector,
                count: bridges.len(),
            })?;
        let device = dev_info
            .open()
            .wait()
            .map_err(|e| classify(&name, "open", e))?;
        if device
            .active_configuration()
            .map(|c| c.configuration_value())
            .ok()
            != Some(1)
        {
            device
                .set_configuration(1)
                .wait()
                .map_err(|e| classify(&name, "set configuration 1", e))?;
        }
        let interface = device
            .detach_and_claim_interface(0)
            .wait()
            .map_err(|e| classify(&name, "claim interface 0", e))?;
        if interface.get_alt_setting() != 0 {
            interface
                .set_alt_setting(0)
                .wait()
                .map_err(|e| classify(&name, "alt setting 0", e))?;
        }
        let ep_out = interface
            .endpoint::<Bulk, Out>(EP_BULK_OUT)
            .map_err(|e| classify(&name, "bulk OUT 0x02", e))?;
        let ep_in = interface
            .endpoint::<Bulk, In>(EP_BULK_IN)
            .map_err(|e| classify(&name, "bulk IN 0x81", e))?;
        Ok(NusbTransport {
            info,
            interface,
            ep_out,
            ep_in,
            pending: VecDeque::new(),
            pending_control: VecDeque::new(),
            latched: None,
            _lock: lock,
        })
    }

    /// What was opened.
    pub fn info(&self) -> &BridgeInfo {
        &self.info
    }

    /// Wait for the oldest queued bulk OUT; a failure is latched for the next `wait_all`.
    fn complete_one(&mut self) {
        let Some((expected, timeout)) = self.pending.pop_front() else {
            return;
        };
        let result = match self.ep_out.wait_next_complete(timeout) {
            None => {
                // Timed out: cancel everything queued and collect the cancelled transfers (bounded).
                self.ep_out.cancel_all();
                for _ in 0..self.pending.len() + 1 {
                    if self.ep_out.pending() == 0 {
                        break;
                    }
                    let _ = self.ep_out.wait_next_complete(Duration::from_secs(1));
                }
                self.pending.clear();
                Err(UsbError::Timeout)
            }
            Some(c) => match c.status {
                Err(e) => Err(map_transfer(e)),
                Ok(()) if c.actual_len != expected => Err(UsbError::Short {
                    expected,
                    actual: c.actual_len,
                }),
                Ok(()) => Ok(()),
            },
        };
        if let Err(e) = result {
            self.latched.get_or_insert(e);
        }
    }

    /// Wait for one submitted control OUT; a failure is latched for the next `wait_all`.
    fn finish_control(&mut self, wait: PendingControl) {
        if let Err(e) = wait() {
            self.latched.get_or_insert(map_transfer(e));
        }
    }

    fn drain(&mut self) {
        while let Some(wait) = self.pending_control.pop_front() {
            self.finish_control(wait);
        }
        while !self.pending.is_empty() {
            self.complete_one();
        }
    }
}

impl NusbTransport {
    fn sync_control_out(
        &mut self,
        setup: Setup,
        data: &[u8],
        timeout: Duration,
    ) -> Result<usize, UsbError> {
        self.interface
            .control_out(vendor_out(setup, data), timeout)
            .wait()
            .map_err(map_transfer)?;
        Ok(data.len())
    }

    fn sync_control_in(
        &mut self,
        setup: Setup,
        buf: &mut [u8],
        timeout: Duration,
    ) -> Result<usize, UsbError> {
        let length = u16::try_from(buf.len()).map_err(|_| UsbError::Overflow)?;
        let req = ControlIn {
            control_type: ControlType::Vendor,
            recipient: Recipient::Device,
            request: setup.request,
            value: setup.value,
            index: setup.index,
            length,
        };
        let data = self
            .interface
            .control_in(req, timeout)
            .wait()
            .map_err(map_transfer)?;
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        Ok(n)
    }

    fn sync_bulk_out(&mut self, data: &[u8], timeout: Duration) -> Result<usize, UsbError> {
        self.drain();
        if let Some(e) = self.latched.take() {
            return Err(e);
        }
        let mut buf = self.ep_out.allocate(data.len());
        buf.extend_from_slice(data);
        let c = self.ep_out.transfer_blocking(buf, timeout);
        c.status.map_err(map_transfer)?;
        Ok(c.actual_len)
    }

    fn sync_bulk_in(&mut self, buf: &mut [u8], timeout: Duration) -> Result<usize, UsbError> {
        // IN requests must be whole packets; a device sending more than `buf` is an overflow.
        let mps = self.ep_in.max_packet_size().max(1);
        let requested = buf.len().div_ceil(mps).max(1) * mps;
        let c = self
            .ep_in
            .transfer_blocking(Buffer::new(requested), timeout);
        c.status.map_err(map_transfer)?;
        if c.actual_len > buf.len() {
            return Err(UsbError::Overflow);
        }
        buf[..c.actual_len].copy_from_slice(&c.buffer[..c.actual_len]);
        Ok(c.actual_len)
    }
}

impl UsbTransport for NusbTransport {
    fn transfer(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<usize, UsbError> {
        match t {
            Transfer::ControlOut(setup, data) => self.sync_control_out(setup, data, timeout),
            Transfer::ControlIn(setup, buf) => self.sync_control_in(setup, buf, timeout),
            Transfer::BulkOut(EP_BULK_OUT, data) => self.sync_bulk_out(data, timeout),
            Transfer::BulkIn(EP_BULK_IN, buf) => self.sync_bulk_in(buf, timeout),
            Transfer::BulkOut(..) | Transfer::BulkIn(..) => Err(UsbError::Stall),
        }
    }

    fn sleep(&mut self, duration: Duration) {
        std::thread::sleep(duration);
    }

    fn submit(&mut self, t: Transfer<'_>, timeout: Duration) -> Result<(), UsbError> {
        match t {
            Transfer::ControlOut(setup, data) => {
                let fut = self.interface.control_out(vendor_out(setup, data), timeout);
                self.pending_control.push_back(Box::new(move || fut.wait()));
                // Bound the number of in-flight control submissions.
                while self.pending_control.len() > 4 {
                    if let Some(wait) = self.pending_control.pop_front() {
                        self.finish_control(wait);
                    }
                }
                Ok(())
            }
            Transfer::BulkOut(EP_BULK_OUT, data) => {
                let mut buf = self.ep_out.allocate(data.len());
                buf.extend_from_slice(data);
                self.ep_out.submit(buf);
                self.pending.push_back((data.len(), timeout));
                // Keep at most two transfers in flight (double buffering, like the two copy windows).
                while self.pending.len() > 2 {
                    self.complete_one();
                }
                Ok(())
            }
            Transfer::BulkOut(..) => Err(UsbError::Stall),
            // IN transfers are not pipelined: run them now.
            t @ (Transfer::ControlIn(..) | Transfer::BulkIn(..)) => {
                self.transfer(t, timeout).map(|_| ())
            }
        }
    }

    fn wait_all(&mut self) -> Result<(), UsbError> {
        self.drain();
        match self.latched.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
