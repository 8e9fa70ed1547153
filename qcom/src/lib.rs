//! `modelrt-qcom`: Adreno (KGSL + a6xx PM4 command streams) and Hexagon DSP (FastRPC) backends.
#![cfg_attr(not(feature = "std"), no_std)]
