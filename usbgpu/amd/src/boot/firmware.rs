//! The firmware a boot loads, read from a directory (default `/lib/firmware/amdgpu`) and checked by
//! the typed header parsers of [`crate::fw`]. File names come from the discovered IP versions
//! (`<maj>_<min>_<rev>`, docs/hw/amd-firmware.md §1). A missing or malformed file is one error
//! naming the file.
use crate::error::AmdError;
use crate::fw::{self, PspBundle, PspComponent};
use crate::ip::{Ip, IpTable, IpVersion};
use std::path::{Path, PathBuf};

/// The default firmware directory.
pub const DEFAULT_DIR: &str = "/lib/firmware/amdgpu";
/// Every blob passes through the bridge's 512 KiB SRAM (docs/hw/amd-driver.md §4 step 2).
pub const MAX_BLOB: usize = 512 << 10;

/// PSP `LOAD_IP_FW` firmware types (Linux `enum psp_gfx_fw_type`, docs/hw/amd-driver.md §4 step 5).
pub mod fw_type {
    /// RLC save/restore list CNTL / GPM / SRM.
    pub const RLC_RESTORE_LIST_CNTL: u32 = 20;
    /// GPM memory list.
    pub const RLC_RESTORE_LIST_GPM: u32 = 21;
    /// SRM memory list.
    pub const RLC_RESTORE_LIST_SRM: u32 = 22;
    /// RLC_V.
    pub const RLC_V: u32 = 7;
    /// RLC_G.
    pub const RLC_G: u32 = 8;
    /// RLC_P.
    pub const RLC_P: u32 = 25;
    /// RLC IRAM.
    pub const RLC_IRAM: u32 = 26;
    /// SMU.
    pub const SMU: u32 = 18;
    /// RLC DRAM boot.
    pub const RLC_DRAM_BOOT: u32 = 48;
    /// IMU instruction / data.
    pub const IMU_I: u32 = 68;
    /// IMU data.
    pub const IMU_D: u32 = 69;
    /// SDMA thread 0 (context).
    pub const SDMA_TH0: u32 = 71;
    /// SDMA thread 1 (control).
    pub const SDMA_TH1: u32 = 72;
    /// RS64 MEC code.
    pub const RS64_MEC: u32 = 89;
    /// RS64 MEC pipe-0 stack.
    pub const RS64_MEC_P0_STACK: u32 = 94;
}

/// PSP bootloader commands per sOS component (docs/hw/amd-driver.md §4 step 5).
pub mod bl_cmd {
    /// Key database.
    pub const KDB: u32 = 0x80000;
    /// TOS SPL table.
    pub const SPL: u32 = 0x1000_0000;
    /// System driver.
    pub const SYS_DRV: u32 = 0x10000;
    /// SoC driver.
    pub const SOC_DRV: u32 = 0xB0000;
    /// Interface driver.
    pub const INTF_DRV: u32 = 0xD0000;
    /// Debug driver.
    pub const DBG_DRV: u32 = 0xC0000;
    /// RAS driver.
    pub const RAS_DRV: u32 = 0xE0000;
    /// The secure OS itself.
    pub const SOS: u32 = 0x20000;
}

/// One image for a `LOAD_IP_FW` command.
#[derive(Clone, Debug)]
pub struct IpImage {
    /// PSP firmware type.
    pub fw_type: u32,
    /// The bytes.
    pub data: Vec<u8>,
}

/// A loaded file's name and its ucode version, for reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileVersion {
    /// File name.
    pub file: String,
    /// `ucode_version` of the common header.
    pub version: u32,
}

/// Everything the PSP and GFX steps need.
#[derive(Clone, Debug)]
pub struct FirmwareSet {
    /// Bootloader steps in order: (command, bytes).
    pub bootloader: Vec<(u32, Vec<u8>)>,
    /// The sOS bundle's table of contents, if any.
    pub toc: Option<Vec<u8>>,
    /// The SMU image (loaded right after LOAD_TOC).
    pub smu: IpImage,
    /// Every other IP image in load order.
    pub ip: Vec<IpImage>,
    /// RS64 MEC ucode start address (for `CP_MEC_RS64_PRGRM_CNTR_START`).
    pub mec_ucode_start: u64,
    /// Files read, with versions.
    pub files: Vec<FileVersion>,
}

fn ver(v: IpVersion) -> String {
    format!("{}_{}_{}", v.0, v.1, v.2)
}

fn read(dir: &Path, name: &str) -> Result<(PathBuf, Vec<u8>), AmdError> {
    let path = dir.join(name);
    let data = std::fs::read(&path).map_err(|e| {
        AmdError::Firmware(format!(
            "firmware {}: {e} (install Debian's firmware-amd-graphics, or point --firmware-dir / MODELRT_AMD_FIRMWARE_DIR at a copy; `cargo xtask firmware` fetches one into target/amdgpu-firmware)",
            path.display()
        ))
    })?;
    Ok((path, data))
}

fn bad(path: &Path, e: impl core::fmt::Display) -> AmdError {
    AmdError::Firmware(format!("firmware {}: {e}", path.display()))
}

fn image(path: &Path, fw_type: u32, data: &[u8]) -> Result<IpImage, AmdError> {
    if data.len() > MAX_BLOB {
        return Err(bad(
            path,
            format_args!(
                "image type {fw_type} is {} bytes, more than the bridge's 512 KiB SRAM",
                data.len()
            ),
        ));
    }
    Ok(IpImage {
        fw_type,
        data: data.to_vec(),
    })
}

fn version_of(ips: &IpTable, ip: Ip) -> Result<String, AmdError> {
    ips.version(ip).map(ver).ok_or_else(|| {
        AmdError::Firmware(format!(
            "firmware: IP discovery reported no {} block, so its firmware name is unknown",
            ip.name()
        ))
    })
}

impl FirmwareSet {
    /// Read and check every blob the boot needs from `dir`.
    pub fn load(dir: &Path, ips: &IpTable) -> Result<FirmwareSet, AmdError> {
        let mp0 = version_of(ips, Ip::Mp0)?;
        let mp1 = version_of(ips, Ip::Mp1)?;
        let sdma = version_of(ips, Ip::Sdma0)?;
        let gc = version_of(ips, Ip::Gc)?;
        let mut files = Vec::new();
        let mut note = |path: &Path, version: u32| {
            files.push(FileVersion {
                file: path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                version,
            })
        };

        // PSP sOS bundle.
        let (path, blob) = read(dir, &format!("psp_{mp0}_sos.bin"))?;
        let bundle = PspBundle::parse(&blob).map_err(|e| bad(&path, e))?;
        note(&path, bundle.common.ucode_version);
        let comp = |c: PspComponent| bundle.component(c).map(|d| bundle.bytes(&d).to_vec());
        let mp0_major = ips.version(Ip::Mp0).map_or(0, |v| v.0);
        let spl = if mp0_major >= 14 {
            comp(PspComponent::Spl)
        } else {
            comp(PspComponent::Kdb)
        };
        let order = [
            (bl_cmd::KDB, comp(PspComponent::Kdb)),
            (bl_cmd::SPL, spl),
            (bl_cmd::SYS_DRV, comp(PspComponent::SysDrv)),
            (bl_cmd::SOC_DRV, comp(PspComponent::SocDrv)),
            (bl_cmd::INTF_DRV, comp(PspComponent::IntfDrv)),
            (bl_cmd::DBG_DRV, comp(PspComponent::DbgDrv)),
            (bl_cmd::RAS_DRV, comp(PspComponent::RasDrv)),
            (bl_cmd::SOS, comp(PspComponent::Sos)),
        ];
        let mut bootloader = Vec::new();
        for (cmd, data) in order {
            if let Some(d) = data {
                if d.len() > MAX_BLOB {
                    return Err(bad(
                        &path,
                        format_args!("bootloader component {cmd:#x} exceeds 512 KiB"),
                    ));
                }
                bootloader.push((cmd, d));
            }
        }
        if !bootloader.iter().any(|(c, _)| *c == bl_cmd::SOS) {
            return Err(bad(&path, "the bundle has no SOS component"));
        }
        let toc = comp(PspComponent::Toc);

        // SMU.
        let (path, blob) = read(dir, &format!("smu_{mp1}.bin"))?;
        let smc = fw::Smc::parse(&blob).map_err(|e| bad(&path, e))?;
        note(&path, smc.common.ucode_version);
        let smu = image(&path, fw_type::SMU, smc.ucode())?;

        let mut ip = Vec::new();
        // SDMA.
        let (path, blob) = read(dir, &format!("sdma_{sdma}.bin"))?;
        let s = fw::Sdma::parse(&blob).map_err(|e| bad(&path, e))?;
        note(&path, s.common.ucode_version);
        if let Some(th1) = s.th1_bytes() {
            ip.push(image(&path, fw_type::SDMA_TH1, th1)?);
        }
        ip.push(image(&path, fw_type::SDMA_TH0, s.th0_bytes())?);
        // MEC (RS64).
        let (path, blob) = read(dir, &format!("gc_{gc}_mec.bin"))?;
        let mec = fw::Rs64Gfx::parse(&blob).map_err(|e| bad(&path, e))?;
        note(&path, mec.common.ucode_version);
        ip.push(image(&path, fw_type::RS64_MEC, mec.ucode_bytes())?);
        ip.push(image(&path, fw_type::RS64_MEC_P0_STACK, mec.data_bytes())?);
        let mec_ucode_start = mec.ucode_start_addr;
        // IMU.
        let (path, blob) = read(dir, &format!("gc_{gc}_imu.bin"))?;
        let imu = fw::Imu::parse(&blob).map_err(|e| bad(&path, e))?;
        note(&path, imu.common.ucode_version);
        ip.push(image(&path, fw_type::IMU_I, imu.iram_bytes())?);
        ip.push(image(&path, fw_type::IMU_D, imu.dram_bytes())?);
        // RLC.
        let (path, blob) = read(dir, &format!("gc_{gc}_rlc.bin"))?;
        let rlc = fw::Rlc::parse(&blob).map_err(|e| bad(&path, e))?;
        note(&path, rlc.common.ucode_version);
        if let Some(lists) = rlc.restore_lists {
            let types = [
                fw_type::RLC_RESTORE_LIST_CNTL,
                fw_type::RLC_RESTORE_LIST_GPM,
                fw_type::RLC_RESTORE_LIST_SRM,
            ];
            if rlc.iram_dram.is_none() {
                for (t, l) in types.into_iter().zip(lists) {
                    ip.push(image(&path, t, rlc.bytes(l.span))?);
                }
            }
        }
        if let Some([iram, dram]) = rlc.iram_dram {
            ip.push(image(&path, fw_type::RLC_IRAM, rlc.bytes(iram))?);
            ip.push(image(&path, fw_type::RLC_DRAM_BOOT, rlc.bytes(dram))?);
        }
        if let Some([p, v]) = rlc.rlcp_rlcv {
            ip.push(image(&path, fw_type::RLC_P, rlc.bytes(p.span))?);
            ip.push(image(&path, fw_type::RLC_V, rlc.bytes(v.span))?);
        }
        ip.push(image(&path, fw_type::RLC_G, rlc.rlc_g())?);

        Ok(FirmwareSet {
            bootloader,
            toc,
            smu,
            ip,
            mec_ucode_start,
            files,
        })
    }
}
