//! Real command-stream captures against our PM4 packet splitter (docs/hw/adreno-kgsl-pm4.md §17):
//! `compute-a540.rd.gz`, Qualcomm's own driver running a compute shader on an a540, walked packet by packet with
//! `modelrt_qcom::pm4::packets` (following indirect buffers, draw-state groups and the render-mode/checkpoint
//! buffers) must agree with Mesa's cffdump decoding of the same file (`compute-a540.log`) on every packet's address,
//! opcode or register, dword count and payload; `fd-clouds.rd.gz` (Mesa's driver on an a630) the same on every
//! distinct packet cffdump shows. Data: `tests/data/README.md`.
mod capture;

use capture::{inflate, rd};
use modelrt_qcom::pm4::{packets, Header};

/// One packet: GPU address, header and payload dwords, what it is.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Rec {
    addr: u64,
    what: String,
    dwords: Vec<u32>,
}

fn what(h: Header) -> String {
    match h {
        Header::Type7 { opcode, count } => format!("opcode {opcode:02x} ({} dwords)", count + 1),
        Header::Type4 { reg, .. } => format!("write {reg:04x}"),
    }
}

/// Every packet of the stream at `addr` (`n` dwords) and of the buffers it points the CP at.
fn walk(s: &rd::Submit, addr: u64, n: usize, out: &mut Vec<Rec>, depth: u32) -> Result<(), String> {
    if depth > 4 {
        return Err(format!("indirect buffers nested too deep at {addr:#x}"));
    }
    let dw = s.read(addr, n)?;
    for p in packets(&dw) {
        let p = p.map_err(|e| format!("stream at {addr:#x}: {e}"))?;
        let at = addr + 4 * p.at as u64;
        out.push(Rec {
            addr: at,
            what: what(p.header),
            dwords: dw[p.at..p.at + 1 + p.payload.len()].to_vec(),
        });
        let pl = p.payload;
        let a64 = |lo: usize| pl[lo] as u64 | (pl[lo + 1] as u64) << 32;
        if let Header::Type7 { opcode, .. } = p.header {
            match opcode {
                // CP_INDIRECT_BUFFER: address lo/hi, size in dwords.
                0x3f => walk(s, a64(0), pl[2] as usize & 0xFFFFF, out, depth + 1)?,
                // CP_SET_DRAW_STATE: groups of (count | flags, address lo, hi).
                0x43 => {
                    for g in pl.chunks_exact(3) {
                        let count = (g[0] & 0xFFFF) as usize;
                        if count > 0 {
                            walk(s, g[1] as u64 | (g[2] as u64) << 32, count, out, depth + 1)?;
                        }
                    }
                }
                // CP_SET_RENDER_MODE: ADDR_1_LEN at payload 5, ADDR_1 at 6/7.
                0x6c if pl.len() >= 8 && pl[5] > 0 => {
                    walk(s, a64(6), pl[5] as usize, out, depth + 1)?
                }
                // CP_COMPUTE_CHECKPOINT: ADDR_1_LEN at payload 4, ADDR_1 at 5/6.
                0x6e if pl.len() >= 7 && pl[4] > 0 => {
                    walk(s, a64(5), pl[4] as usize, out, depth + 1)?
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// A packet as cffdump prints it: address, the kind line before it, the dwords shown, whether a `*` line elided
/// repeats of the last 8-dword row.
struct Logged {
    addr: u64,
    what: String,
    shown: Vec<u32>,
    elided: bool,
}

fn tabs(l: &str) -> usize {
    l.len() - l.trim_start_matches('\t').len()
}

/// `ADDR:<tabs>OFFS: dwords…` → (address, tab count, offset, dwords).
fn dump_line(l: &str) -> Option<(u64, usize, u32, Vec<u32>)> {
    let (a, rest) = l.split_once(':')?;
    if a.len() != 16 {
        return None;
    }
    let addr = u64::from_str_radix(a, 16).ok()?;
    let t = tabs(rest);
    let (off, dws) = rest.trim_start_matches('\t').split_once(": ")?;
    let off = u32::from_str_radix(off, 16).ok()?;
    let dws = dws
        .split(' ')
        .map(|x| u32::from_str_radix(x, 16))
        .collect::<Result<_, _>>()
        .ok()?;
    Some((addr, t, off, dws))
}

fn parse_log(text: &str) -> Vec<Logged> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    // The kind line waiting for its raw dump, per indentation (nested buffers print their packets in between).
    let mut pending: Vec<Option<String>> = vec![None; 16];
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let body = l.trim_start_matches('\t');
        if let Some(rest) = body.strip_prefix("opcode: ") {
            // NAME (hex) (N dwords)
            let parts: Vec<&str> = rest.rsplitn(3, " (").collect();
            let n: usize = parts[0].trim_end_matches(" dwords)").parse().unwrap_or(0);
            let op = u8::from_str_radix(parts[1].trim_end_matches(')'), 16).unwrap_or(0);
            pending[tabs(l).min(15)] = Some(format!("opcode {op:02x} ({n} dwords)"));
        } else if let Some(rest) = body.strip_prefix("write ") {
            let reg = rest
                .rsplit_once(" (")
                .map(|(_, r)| r.trim_end_matches(')'))
                .unwrap_or("");
            pending[tabs(l).min(15)] = Some(format!("write {}", reg.to_lowercase()));
        } else if let Some((addr, t, 0, dws)) = dump_line(l) {
            if let Some(w) = pending.get_mut(t).and_then(Option::take) {
                let mut shown = dws;
                let mut elided = false;
                while let Some(n) = lines.get(i + 1) {
                    if n.trim() == "*" {
                        elided = true;
                        i += 1;
                        break;
                    }
                    match dump_line(n) {
                        Some((a2, t2, off, d2))
                            if t2 == t && off != 0 && a2 == addr + off as u64 =>
                        {
                            shown.extend(d2);
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(Logged {
                    addr,
                    what: w,
                    shown,
                    elided,
                });
            }
        }
        i += 1;
    }
    out
}

/// Whether our packet is what cffdump showed: same address and kind, the shown dwords are a prefix, and anything
/// past them appears only where cffdump elided rows.
fn agrees(ours: &Rec, log: &Logged) -> bool {
    if ours.addr != log.addr || !ours.dwords.starts_with(&log.shown) {
        return false;
    }
    let opcode_ok = !log.what.starts_with("opcode") || ours.what == log.what;
    let write_ok = !log.what.starts_with("write") || ours.what == log.what;
    if !(opcode_ok && write_ok) {
        return false;
    }
    if !log.elided {
        return ours.dwords.len() == log.shown.len();
    }
    // cffdump's `*` stands for rows it did not print because they repeat: here every elided dword equals the
    // last one shown (a run of zeros after a header row), or whole rows repeat the last row.
    let rest = &ours.dwords[log.shown.len()..];
    let row = &log.shown[log.shown.len().saturating_sub(8)..];
    let last = log.shown.last().copied();
    !rest.is_empty()
        && (rest.iter().all(|&d| Some(d) == last) || rest.chunks(8).all(|c| row.starts_with(c)))
}

/// Walks every submission of the capture `gz` and compares its packets with cffdump's `log`; returns the number
/// of packets that agree.
fn check(gz: &[u8], log_text: &str, gpu_id: u32) -> usize {
    check_with(gz, log_text, gpu_id, true).0
}

/// As [`check`]; with `strict` false (a6xx cffdump shows a draw-state group at each draw, and only the groups
/// enabled for the pass it decodes) every distinct packet cffdump shows must agree with the packet we find at its
/// address, and the distinct packets of ours that cffdump never showed are counted. Returns (distinct packets
/// compared, ours not shown).
fn check_with(gz: &[u8], log_text: &str, gpu_id: u32, strict: bool) -> (usize, usize) {
    let cap = rd::parse(&inflate::gunzip(gz).unwrap()).unwrap();
    assert_eq!(cap.gpu_id, Some(gpu_id));
    let log = parse_log(log_text);
    // cffdump prints each command stream it decodes with its size: those are the capture's first submissions.
    let sizes: Vec<u32> = log_text
        .lines()
        .filter_map(|l| {
            l.strip_prefix("cmdstream[")?
                .split_once("]: ")?
                .1
                .strip_suffix(" dwords")?
                .parse()
                .ok()
        })
        .collect();
    let decoded = &cap.submits[..sizes.len().min(cap.submits.len())];
    assert_eq!(sizes, decoded.iter().map(|s| s.dwords).collect::<Vec<_>>());
    let mut ours = Vec::new();
    for s in decoded {
        walk(s, s.addr, s.dwords as usize, &mut ours, 0).unwrap();
    }
    if !strict {
        let mut shown: Vec<&Logged> = log.iter().collect();
        shown.sort_by(|a, b| (a.addr, &a.shown).cmp(&(b.addr, &b.shown)));
        shown.dedup_by(|a, b| a.addr == b.addr && a.shown == b.shown);
        let bad: Vec<String> = shown
            .iter()
            .filter(|g| !ours.iter().any(|o| agrees(o, g)))
            .take(10)
            .map(|g| {
                format!(
                    "log {:#x} {} {:08x?} has no agreeing packet of ours",
                    g.addr, g.what, g.shown
                )
            })
            .collect();
        assert!(bad.is_empty(), "disagreements:\n{}", bad.join("\n"));
        let mut mine: Vec<&Rec> = ours.iter().collect();
        mine.sort();
        mine.dedup();
        let unseen = mine
            .iter()
            .filter(|o| !shown.iter().any(|g| g.addr == o.addr))
            .count();
        return (shown.len(), unseen);
    }
    // Packet for packet, in address order (cffdump prints a buffer's packets before the packet pointing at it).
    let mut o = ours.clone();
    o.sort();
    let mut l: Vec<&Logged> = log.iter().collect();
    l.sort_by(|a, b| (a.addr, &a.shown).cmp(&(b.addr, &b.shown)));
    let bad: Vec<String> = o
        .iter()
        .zip(&l)
        .filter(|(a, b)| !agrees(a, b))
        .take(10)
        .map(|(a, b)| {
            format!(
                "ours {:#x} {} {:08x?} / log {:#x} {} {:08x?}",
                a.addr, a.what, a.dwords, b.addr, b.what, b.shown
            )
        })
        .collect();
    assert!(bad.is_empty(), "disagreements:\n{}", bad.join("\n"));
    assert_eq!(
        o.len(),
        l.len(),
        "packet counts: ours {}, cffdump {}",
        o.len(),
        l.len()
    );
    (o.len(), 0)
}

#[test]
fn compute_a540_capture_agrees_with_cffdump_packet_for_packet() {
    let n = check(
        include_bytes!("data/compute-a540.rd.gz"),
        include_str!("data/compute-a540.log"),
        540,
    );
    assert_eq!(n, 141, "cffdump decodes 141 packets");
}

#[test]
fn fd_clouds_a630_capture_agrees_with_cffdump_packet_for_packet() {
    let log = inflate::gunzip(include_bytes!("data/fd-clouds.log.gz")).unwrap();
    let log = String::from_utf8(log).unwrap();
    let (n, unseen) = check_with(include_bytes!("data/fd-clouds.rd.gz"), &log, 630, false);
    eprintln!(
        "fd-clouds: {n} distinct packets cffdump shows agree; {unseen} of ours it did not show"
    );
    assert_eq!(n, 533, "cffdump shows 573 packets, 533 of them distinct");
    assert_eq!(
        unseen, 0,
        "every packet we walk is at an address cffdump decoded"
    );
}

/// Every register write cffdump shows in `log`: (register, name, the field line's text after `NAME: `, value).
fn logged_writes(log: &str) -> Vec<(u32, String, String, u32)> {
    let lines: Vec<&str> = log.lines().map(|l| l.trim_start_matches('\t')).collect();
    let mut out = Vec::new();
    for (k, l) in lines.iter().enumerate() {
        let Some(rest) = l.strip_prefix("write ") else {
            continue;
        };
        let Some((name, reg)) = rest.rsplit_once(" (") else {
            continue;
        };
        let Ok(reg) = u32::from_str_radix(reg.trim_end_matches(')'), 16) else {
            continue;
        };
        let fields = lines
            .get(k + 1)
            .and_then(|f| f.strip_prefix(&format!("{name}: ")))
            .unwrap_or("")
            .to_string();
        // The raw dump follows the field lines of every register written by this packet.
        let value = lines[k + 1..]
            .iter()
            .find_map(|f| dump_line(f).map(|(_, _, _, d)| d.get(1).copied()))
            .flatten();
        if let Some(value) = value {
            out.push((reg, name.to_string(), fields, value));
        }
    }
    out
}

/// The flag names cffdump lists for `value` of `reg` when every listed bit is a single-bit flag, in bit order.
fn flag_bits(writes: &[(u32, String, String, u32)], reg: u32, value: u32) -> Vec<String> {
    let (_, _, fields, _) = writes
        .iter()
        .find(|w| w.0 == reg && w.3 == value)
        .unwrap_or_else(|| panic!("no write of {value:#x} to {reg:#x} in the log"));
    fields
        .trim_start_matches("{ ")
        .trim_end_matches(" }")
        .split(" | ")
        .map(str::to_string)
        .collect()
}

#[test]
fn fd_clouds_names_and_fields_of_the_registers_our_stream_writes() {
    use modelrt_qcom::a6xx::regs;
    let log = String::from_utf8(inflate::gunzip(include_bytes!("data/fd-clouds.log.gz")).unwrap())
        .unwrap();
    let w = logged_writes(&log);
    let name = |reg: u32| {
        w.iter()
            .find(|x| x.0 == reg)
            .map(|x| x.1.clone())
            .unwrap_or_else(|| panic!("{reg:#x} not written in the capture"))
    };
    // The capture's decoder uses the older register names that regs.rs keeps in its comments.
    assert_eq!(name(regs::SP_UPDATE_CNTL), "HLSQ_INVALIDATE_CMD");
    assert_eq!(name(regs::SP_MODE_CNTL), "SP_MODE_CONTROL");
    assert_eq!(name(regs::SP_PERFCTR_SHADER_MASK), "SP_PERFCTR_ENABLE");
    assert_eq!(name(regs::TPL1_MODE_CNTL), "SP_TP_MODE_CNTL");
    assert_eq!(name(regs::TPL1_DBG_ECO_CNTL), "TPL1_DBG_ECO_CNTL");
    // SP_MODE_CNTL: the capture writes our IR3 value and cffdump spells out the fields regs.rs names.
    let mode: Vec<_> = w.iter().filter(|x| x.0 == regs::SP_MODE_CNTL).collect();
    assert!(mode.iter().any(|x| x.3 == regs::SP_MODE_CNTL_IR3));
    for m in mode.iter().filter(|x| x.3 == regs::SP_MODE_CNTL_IR3) {
        assert_eq!(m.2, "{ CONSTANT_DEMOTION_ENABLE | ISAMMODE = ISAMMODE_GL }");
    }
    // Flag registers: a write of all-ones low bits lists one flag per bit, in bit order.
    let inval = flag_bits(&w, regs::SP_UPDATE_CNTL, 0xff);
    let ours: Vec<&str> = (0..8)
        .filter(|b| regs::UPDATE_CS_STATE_UAV >> b & 1 == 1)
        .map(|b| inval[b].as_str())
        .collect();
    assert_eq!(
        ours,
        ["CS_STATE", "CS_IBO"],
        "UPDATE_CS_STATE_UAV = CS_STATE | CS_UAV (old name CS_IBO)"
    );
    let perf = flag_bits(&w, regs::SP_PERFCTR_SHADER_MASK, 0x3f);
    assert_eq!(perf[regs::PERFCTR_CS.trailing_zeros() as usize], "CS");
    // TPL1_MODE_CNTL: the capture's 0xa2 has ISAMMODE = ISAMMODE_GL in its low two bits, our whole IR3 value.
    let tp = w.iter().find(|x| x.0 == regs::TPL1_MODE_CNTL).unwrap();
    assert!(tp.2.starts_with("{ ISAMMODE = ISAMMODE_GL"), "{}", tp.2);
    assert_eq!(tp.3 & 3, regs::TPL1_MODE_CNTL_IR3);
}
