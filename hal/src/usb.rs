//! The USB transport the ASM24 bridge driver runs over: vendor control transfers plus bulk endpoints.
//! Implemented by `nusb` on the host and by the bridge emulator in tests.
