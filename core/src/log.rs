//! Logging on the `no_std` paths (bundle load, validation failure, submit error): with the `defmt`
//! feature these are `defmt`'s macros; without it they compile to nothing, but their arguments are
//! still type-checked and borrowed, so a disabled log changes no warning and no behaviour.
//!
//! Format strings are `defmt` syntax (`{=u32}`, `{=str}`, `{}` for `defmt::Format` types). A value
//! that is only `core::fmt::Debug` goes through [`debug`]. With `defmt` enabled, the final firmware
//! image must provide a `defmt` global logger (e.g. `defmt-rtt`), as for any `defmt` user.

/// Implementation of the level macros below; not for direct use.
macro_rules! __log {
    ($level:ident, $fmt:literal $(, $arg:expr)* $(,)?) => {{
        #[cfg(feature = "defmt")]
        ::defmt::$level!($fmt $(, $arg)*);
        #[cfg(not(feature = "defmt"))]
        {
            $(let _ = &$arg;)*
        }
    }};
}

/// `defmt::info!`, or nothing without the `defmt` feature.
macro_rules! info {
    ($($t:tt)*) => { $crate::log::__log!(info, $($t)*) };
}

/// `defmt::warn!`, or nothing without the `defmt` feature.
macro_rules! warning {
    ($($t:tt)*) => { $crate::log::__log!(warn, $($t)*) };
}

/// `defmt::error!`, or nothing without the `defmt` feature.
macro_rules! error {
    ($($t:tt)*) => { $crate::log::__log!(error, $($t)*) };
}

pub(crate) use {__log, error, info, warning};

/// A `Debug` value as a log argument (`defmt::Debug2Format` with the feature).
#[cfg(feature = "defmt")]
pub(crate) fn debug<T: core::fmt::Debug + ?Sized>(v: &T) -> defmt::Debug2Format<'_, T> {
    defmt::Debug2Format(v)
}

/// A `Debug` value as a log argument (`defmt::Debug2Format` with the feature).
#[cfg(not(feature = "defmt"))]
pub(crate) fn debug<T: core::fmt::Debug + ?Sized>(v: &T) -> &T {
    v
}
