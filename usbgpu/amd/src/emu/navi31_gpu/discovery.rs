//! The IP discovery blob the model places at `VRAM − 64 KiB` (docs/hw/amd-gpu.md §4): binary
//! header, IP-discovery table (one die, Navi31 IP versions and register bases), GC info table and an
//! empty harvest table, built from the documented layout (docs/hw/amd-firmware.md §4).

/// Distance of the blob from the top of VRAM.
pub const FROM_TOP: u64 = 64 << 10;

const BINARY_SIGNATURE: u32 = 0x2821_1407;
const IP_DISCOVERY_SIGNATURE: u32 = 0x5344_5049; // "IPDS"
const GC_TABLE_ID: u32 = 0x4347;
const HARVEST_SIGNATURE: u32 = 0x5652_4148;

/// Table slots in the binary header's table list.
const TABLE_IP_DISCOVERY: usize = 0;
const TABLE_GC: usize = 1;
const TABLE_HARVEST: usize = 2;

/// One IP block as the discovery table lists it.
#[derive(Clone, Copy, Debug)]
pub struct IpBlock {
    /// Hardware id (GC 11, SDMA0 42, …).
    pub hw_id: u16,
    /// Instance number.
    pub instance: u8,
    /// (major, minor, revision).
    pub version: (u8, u8, u8),
    /// Register segment bases in dwords.
    pub bases: &'static [u32],
}

const GC_BASES: &[u32] = &[0x1260, 0xA000, 0x1C000, 0x240_2C00];
const MP_BASES: &[u32] = &[0x16000, 0xDC_0000, 0xE0_0000, 0xE4_0000, 0x243_FC00];

/// Instance 0 of IP `hw_id` at `version` with register `bases`.
const fn ip(hw_id: u16, version: (u8, u8, u8), bases: &'static [u32]) -> IpBlock {
    IpBlock {
        hw_id,
        instance: 0,
        version,
        bases,
    }
}

/// The Navi31 IP list (versions as docs/hw/amd-gpu.md §4 lists them; bases = the default Navi base
/// table).
pub const NAVI31_IPS: &[IpBlock] = &[
    ip(11, (11, 0, 0), GC_BASES),
    ip(42, (6, 0, 0), GC_BASES),
    ip(43, (6, 0, 0), GC_BASES),
    ip(34, (3, 0, 0), &[0x1A000, 0x240_8800]),
    ip(108, (4, 3, 0), &[0x0, 0x14, 0xD20, 0x10400, 0x241_B000]),
    ip(255, (13, 0, 0), MP_BASES),
    ip(1, (13, 0, 0), MP_BASES),
    ip(41, (6, 0, 0), &[0xF20, 0x240_A400]),
    ip(40, (6, 0, 0), &[0x10A0, 0x240_A000]),
    ip(4, (13, 0, 0), &[0x16800, 0x16A00, 0x44_0000, 0x240_1000]),
];

/// GC info v1.0 values (a 7900 XTX-shaped part: 6 SE × 2 SA × 4 WGP, wave32, 64 KiB LDS).
const GC_INFO_V1_0: [u32; 19] = [
    6,    // gc_num_se
    4,    // gc_num_wgp0_per_sa
    0,    // gc_num_wgp1_per_sa
    4,    // gc_num_rb_per_se
    16,   // gc_num_gl2c
    1536, // gc_num_gprs
    32,   // gc_num_max_gs_thds
    32,   // gc_gs_table_depth
    1792, // gc_gsprim_buff_depth
    1024, // gc_parameter_cache_depth
    1,    // gc_double_offchip_lds_buffer
    32,   // gc_wave_size
    16,   // gc_max_waves_per_simd
    32,   // gc_max_scratch_slots_per_cu
    64,   // gc_lds_size (KiB)
    1,    // gc_num_sc_per_se
    2,    // gc_num_sa_per_se
    4,    // gc_num_packer_per_sc
    4,    // gc_num_gl2a
];

fn put16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut [u8], o: usize, v: u32) {
    b[o..o + 4].copy_from_slice(&v.to_le_bytes());
}

/// Byte sum of `bytes` as a wrapping u16 (the discovery checksums).
fn checksum(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0u16, |s, &b| s.wrapping_add(b as u16))
}

/// Build the blob; `corrupt` breaks the binary signature (fault injection).
pub fn build(ips: &[IpBlock], corrupt: bool) -> Vec<u8> {
    let mut b = vec![0u8; 0x1000];
    // IP discovery table at 0x40: 80-byte header, die 0 header at 0x90, IP entries after it.
    let ipd = 0x40usize;
    let die = 0x90usize;
    put32(&mut b, ipd, IP_DISCOVERY_SIGNATURE);
    put16(&mut b, ipd + 4, 4); // version
    put16(&mut b, ipd + 12, 1); // num_dies
    put16(&mut b, ipd + 14, 0); // die_info[0].die_id
    put16(&mut b, ipd + 16, die as u16); // die_info[0].die_offset (from the blob start)
    b[ipd + 78] = 0; // 32-bit base addresses
    put16(&mut b, die, 0);
    put16(&mut b, die + 2, ips.len() as u16);
    let mut o = die + 4;
    for ip in ips {
        put16(&mut b, o, ip.hw_id);
        b[o + 2] = ip.instance;
        b[o + 3] = ip.bases.len() as u8;
        (b[o + 4], b[o + 5], b[o + 6]) = ip.version;
        o += 8;
        for &base in ip.bases {
            put32(&mut b, o, base);
            o += 4;
        }
    }
    let ipd_size = o - ipd;
    put16(&mut b, ipd + 6, ipd_size as u16);
    // GC info v1.0.
    let gc = o.next_multiple_of(16);
    put32(&mut b, gc, GC_TABLE_ID);
    put16(&mut b, gc + 4, 1);
    put16(&mut b, gc + 6, 0);
    let gc_size = 12 + 4 * GC_INFO_V1_0.len();
    put32(&mut b, gc + 8, gc_size as u32);
    for (i, v) in GC_INFO_V1_0.iter().enumerate() {
        put32(&mut b, gc + 12 + 4 * i, *v);
    }
    // Harvest table: header + 32 empty entries (nothing harvested).
    let hv = (gc + gc_size).next_multiple_of(16);
    put32(&mut b, hv, HARVEST_SIGNATURE);
    put32(&mut b, hv + 4, 0);
    let hv_size = 8 + 32 * 4;
    let total = hv + hv_size;
    // Binary header with its table list and checksums.
    put32(
        &mut b,
        0,
        if corrupt {
            0xDEAD_BEEF
        } else {
            BINARY_SIGNATURE
        },
    );
    put16(&mut b, 4, 1); // version 1.0
    put16(&mut b, 10, total as u16);
    for (slot, off, size) in [
        (TABLE_IP_DISCOVERY, ipd, ipd_size),
        (TABLE_GC, gc, gc_size),
        (TABLE_HARVEST, hv, hv_size),
    ] {
        let e = 12 + 8 * slot;
        put16(&mut b, e, off as u16);
        let sum = checksum(&b[off..off + size]);
        put16(&mut b, e + 2, sum);
        put16(&mut b, e + 4, size as u16);
    }
    // The binary checksum covers everything after the checksum field itself.
    let sum = checksum(&b[10..total]);
    put16(&mut b, 8, sum);
    b.truncate(total);
    b
}
