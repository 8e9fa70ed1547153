//! How to load: the device, host threads, and typed per-family options ([`DeviceOptions`]) that only
//! the family that defines an option type reads (e.g. the AMD driver's firmware directory), so the
//! generic loader carries no family's parameters.
use std::any::Any;
use std::sync::Arc;

use crate::device::DeviceChoice;
use crate::trust::TrustStore;

/// Options for loading a bundle.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    pub device: DeviceChoice,
    /// One device per role of a multi-device bundle (`--device qcom-emu,usb-emu`), in role order;
    /// empty: [`device`](Self::device) for every role (`auto` then picks each role's device).
    pub roles: Vec<DeviceChoice>,
    /// Host worker threads (0 = the backend's choice: the CPU uses as many as the kernels were split
    /// into, capped by the host's cores; see `modelrt_cpu::threads`).
    pub threads: usize,
    /// Per-family options.
    pub options: DeviceOptions,
    /// The keys a bundle must be signed by (none: signatures are not checked). Checked before the
    /// device is opened (`crate::trust`).
    pub trusted_keys: Option<TrustStore>,
}

impl LoadOptions {
    /// Load on `device` with default threads and options.
    pub fn on(device: DeviceChoice) -> LoadOptions {
        LoadOptions {
            device,
            ..LoadOptions::default()
        }
    }
}

/// Who loads, so that errors name the device the way that caller does: the CLI's `--device NAME`
/// (the default), Python's `device="NAME"`, the C API's device argument. Set it in
/// [`LoadOptions::options`]; the registry reads it for its suggestions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Caller {
    #[default]
    Cli,
    Python,
    C,
}

impl Caller {
    /// How this caller chooses device `name`: `--device cpu`, `device="cpu"`, `device "cpu"`.
    pub fn device(self, name: &str) -> String {
        match self {
            Caller::Cli => format!("--device {name}"),
            Caller::Python => format!("device=\"{name}\""),
            Caller::C => format!("device \"{name}\""),
        }
    }

    /// Another device name in a list after [`device`](Self::device): bare on the CLI, quoted in
    /// the APIs.
    pub fn alternative(self, name: &str) -> String {
        match self {
            Caller::Cli => name.to_string(),
            Caller::Python | Caller::C => format!("\"{name}\""),
        }
    }
}

/// Per-family options, one value per type: a family defines its option struct and reads it with
/// [`get`](Self::get); callers set it with [`set`](Self::set). Families ignore types they do not know.
#[derive(Clone, Default)]
pub struct DeviceOptions {
    items: Vec<Arc<dyn Any + Send + Sync>>,
}

impl DeviceOptions {
    /// Set the option of type `T` (replacing an earlier one).
    pub fn set<T: Any + Send + Sync>(&mut self, value: T) {
        self.items.retain(|v| !v.is::<T>());
        self.items.push(Arc::new(value));
    }

    /// [`set`](Self::set), by value.
    pub fn with<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.set(value);
        self
    }

    /// The option of type `T`, if set.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.items.iter().find_map(|v| v.downcast_ref::<T>())
    }
}

impl std::fmt::Debug for DeviceOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceOptions({} set)", self.items.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct A(u32);
    #[derive(Debug, PartialEq)]
    struct B(&'static str);

    #[test]
    fn each_caller_names_a_device_its_own_way() {
        assert_eq!(Caller::Cli.device("cpu"), "--device cpu");
        assert_eq!(Caller::Python.device("cpu"), "device=\"cpu\"");
        assert_eq!(Caller::C.alternative("auto"), "\"auto\"");
    }

    #[test]
    fn one_value_per_type() {
        let mut o = DeviceOptions::default().with(A(1)).with(B("x"));
        assert_eq!(o.get::<A>(), Some(&A(1)));
        assert_eq!(o.get::<B>(), Some(&B("x")));
        o.set(A(2));
        assert_eq!(o.get::<A>(), Some(&A(2)));
        assert_eq!(o.get::<u8>(), None);
    }
}
