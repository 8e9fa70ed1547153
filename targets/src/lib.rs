//! `modelrt-targets`: platform assemblies of modelrt backends.
