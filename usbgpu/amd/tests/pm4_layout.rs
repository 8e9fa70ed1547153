//! The PM4 encoders the submit path uses (`modelrt_amd::pm4::write_indirect_buffer`, `write_release_mem`)
//! against the packet field table of docs/hw/amd-driver.md §9.1: the expected dwords are built from
//! the table's rows (dword, bit range, constant or named value bits), for random addresses, sizes,
//! values and data selects.
use modelrt_amd::pm4;
use proptest::prelude::*;

/// One table row: which dword, which bits, and what goes there.
struct Row {
    dword: usize,
    hi: u32,
    lo: u32,
    field: Field,
}

/// A constant, or bits `hi:lo` of a named value.
enum Field {
    Const(u64),
    Bits { name: String, hi: u32, lo: u32 },
}

fn bit_range(s: &str) -> (u32, u32) {
    let (hi, lo) = s.trim().split_once(':').expect("bits as hi:lo");
    (hi.parse().expect("hi bit"), lo.parse().expect("lo bit"))
}

/// The rows of `packet` in the §9.1 field table.
fn rows(packet: &str) -> Vec<Row> {
    let doc = include_str!("../../../docs/hw/amd-driver.md");
    let table = doc
        .split("| Packet | Dword | Bits | Field |")
        .nth(1)
        .expect("the PM4 field table in docs/hw/amd-driver.md §9.1");
    let rows: Vec<Row> = table
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            (cells[0] == packet).then(|| {
                let (hi, lo) = bit_range(cells[2]);
                let field = match cells[3].strip_prefix('`') {
                    Some(rest) => {
                        let (name, rest) = rest.split_once('`').expect("closing backtick");
                        let bits = rest.trim().strip_prefix("bits ").expect("`name` bits h:l");
                        let (fhi, flo) = bit_range(bits.split_whitespace().next().unwrap());
                        Field::Bits {
                            name: name.to_string(),
                            hi: fhi,
                            lo: flo,
                        }
                    }
                    None => {
                        let n = cells[3].split_whitespace().next().unwrap();
                        Field::Const(match n.strip_prefix("0x") {
                            Some(h) => u64::from_str_radix(h, 16).unwrap(),
                            None => n.parse().unwrap(),
                        })
                    }
                };
                Row {
                    dword: cells[1].parse().expect("dword index"),
                    hi,
                    lo,
                    field,
                }
            })
        })
        .collect();
    assert!(!rows.is_empty(), "no rows for {packet} in the table");
    rows
}

/// The packet the table describes for the named values `vals`.
fn expected(packet: &str, vals: &[(&str, u64)]) -> Vec<u32> {
    let rows = rows(packet);
    let len = rows.iter().map(|r| r.dword).max().unwrap() + 1;
    let mut out = vec![0u32; len];
    let mask = |n: u32| if n >= 64 { !0u64 } else { (1u64 << n) - 1 };
    for r in rows {
        let width = r.hi - r.lo + 1;
        let v = match r.field {
            Field::Const(c) => c,
            Field::Bits { name, hi, lo } => {
                assert_eq!(hi - lo + 1, width, "{packet}: `{name}` width");
                let (_, v) = vals
                    .iter()
                    .find(|(n, _)| *n == name)
                    .unwrap_or_else(|| panic!("{packet}: no value for `{name}`"));
                (v >> lo) & mask(width)
            }
        };
        assert_eq!(v & !mask(width), 0, "{packet}: a value wider than its bits");
        out[r.dword] |= (v as u32) << r.lo;
    }
    out
}

#[test]
fn the_table_covers_every_encoded_dword() {
    assert_eq!(
        expected("INDIRECT_BUFFER", &[("ib_va", 0), ("ib_dwords", 0)]).len(),
        pm4::INDIRECT_BUFFER_DWORDS
    );
    let zeros = [("data_sel", 0), ("address", 0), ("data", 0)];
    assert_eq!(
        expected("RELEASE_MEM", &zeros).len(),
        pm4::RELEASE_MEM_DWORDS
    );
}

proptest! {
    #[test]
    fn indirect_buffer_matches_the_field_table(va in 0u64..(1 << 48), n in 0u32..(1 << 20)) {
        let va = va & !3;
        let mut out = [0u32; pm4::INDIRECT_BUFFER_DWORDS];
        pm4::write_indirect_buffer(&mut out, va, n);
        let want = expected("INDIRECT_BUFFER", &[("ib_va", va), ("ib_dwords", u64::from(n))]);
        prop_assert_eq!(out.to_vec(), want);
        // The recording encoder appends the same packet.
        let mut p = pm4::Pm4::new(0);
        p.indirect_buffer(va, n);
        prop_assert_eq!(p.dw, out.to_vec());
    }

    #[test]
    fn release_mem_matches_the_field_table(
        address in 0u64..(1 << 48),
        data in any::<u64>(),
        data_sel in prop::sample::select(vec![pm4::DATA_SEL_32, pm4::DATA_SEL_64, pm4::DATA_SEL_TIMESTAMP]),
    ) {
        let address = address & !7;
        let mut out = [0u32; pm4::RELEASE_MEM_DWORDS];
        pm4::write_release_mem(&mut out, address, data, data_sel);
        let want = expected(
            "RELEASE_MEM",
            &[("data_sel", u64::from(data_sel)), ("address", address), ("data", data)],
        );
        prop_assert_eq!(out.to_vec(), want);
        let mut p = pm4::Pm4::new(0);
        p.release_mem(address, data, data_sel);
        prop_assert_eq!(p.dw, out.to_vec());
    }
}
