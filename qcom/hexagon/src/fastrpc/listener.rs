//! The reverse-RPC listener (docs/hw/fastrpc.md §4): while the DSP loader opens a library it calls back into the
//! host through handle 3; the host answers with "next" invokes that send the previous reply and receive the next
//! request. This file holds the message codec and the file server ("tinylib" = the bound kernel library, plus
//! `testsig-*.so` files from one directory); the thread that drives it lives in [`super::session`].
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Capacity of the request and response buffers.
pub const BUF_CAP: usize = 0x10000;
/// The virtual fd the library is served under.
pub const LIB_FD: u32 = 0xFFFF;
/// The name the loader asks for.
pub const LIB_NAME: &str = "tinylib";
/// First virtual fd handed out for testsig files.
const FILE_FD_BASE: u32 = 0x1000;

/// Reverse calls, by scalars word.
pub const RSC_GREETING: u32 = 0x0002_0200;
pub const RSC_OPEN: u32 = 0x1305_0100;
pub const RSC_CLOSE: u32 = 0x0301_0000;
pub const RSC_SEEK: u32 = 0x0901_0000;
pub const RSC_READ: u32 = 0x0401_0200;
pub const RSC_STAT: u32 = 0x1F02_0100;
pub const RSC_MMAP: u32 = 0x0201_0100;

/// Size of the `apps_std_STAT` reply.
pub const STAT_LEN: usize = 96;

fn align8(x: usize) -> usize {
    (x + 7) & !7
}

fn word(b: &[u8], i: usize) -> Option<u32> {
    b.get(4 * i..4 * i + 4)
        .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
}

/// A decoded request: its input arguments (slices of the request buffer) and the sizes of its outputs.
#[derive(Debug, Default)]
pub struct Request<'a> {
    pub ins: Vec<&'a [u8]>,
    pub out_sizes: Vec<u32>,
}

/// Decode `req` (the used part of the request buffer) for a call with `nin` inputs and `nout` outputs; `None`
/// when it is malformed or its outputs could not fit one response buffer.
pub fn decode_request(req: &[u8], nin: usize, nout: usize) -> Option<Request<'_>> {
    let mut r = Request::default();
    let mut c = 0usize;
    for _ in 0..nin {
        let n = word(&req[c.min(req.len())..], 0)? as usize;
        let start = align8(c + 4);
        r.ins.push(req.get(start..start.checked_add(n)?)?);
        c = start + n;
    }
    for _ in 0..nout {
        r.out_sizes.push(word(&req[c.min(req.len())..], 0)?);
        c += 4;
    }
    // the whole response must fit the response buffer; refuse before allocating anything for it
    let total: u64 = r.out_sizes.iter().map(|&n| u64::from(n) + 12).sum();
    (total <= BUF_CAP as u64).then_some(r)
}

/// Encode a response: for each output, its u32 size then its bytes at the next 8-byte boundary. Returns the
/// response length, or `None` if it does not fit `out`.
pub fn encode_response(out: &mut [u8], outs: &[&[u8]]) -> Option<usize> {
    let mut c = 0usize;
    for o in outs {
        out.get_mut(c..c + 4)?
            .copy_from_slice(&(o.len() as u32).to_le_bytes());
        let start = align8(c + 4);
        out.get_mut(start..start + o.len())?.copy_from_slice(o);
        c = start + o.len();
    }
    Some(c)
}

/// What the listener serves: the library currently being loaded and the testsig directory.
#[derive(Debug, Default)]
pub struct FileServer {
    lib: Option<Arc<[u8]>>,
    lib_cursor: usize,
    testsig_dir: Option<PathBuf>,
    files: Vec<Option<(Vec<u8>, usize)>>,
}

/// The server shared between the session (which binds libraries) and its listener thread.
pub type SharedServer = Arc<Mutex<FileServer>>;

/// A reply: status (0 ok) and the output arguments.
pub type Reply = (u32, Vec<Vec<u8>>);

impl FileServer {
    /// A server that serves testsig files from `testsig_dir` (none if `None`).
    pub fn new(testsig_dir: Option<PathBuf>) -> Self {
        FileServer {
            testsig_dir,
            ..Default::default()
        }
    }

    /// Serve `lib` as "tinylib" from offset 0.
    pub fn bind(&mut self, lib: Arc<[u8]>) {
        self.lib = Some(lib);
        self.lib_cursor = 0;
    }

    fn file(&mut self, fd: u32) -> Option<(&[u8], &mut usize)> {
        if fd == LIB_FD {
            let lib = self.lib.as_deref()?;
            return Some((lib, &mut self.lib_cursor));
        }
        let i = fd.checked_sub(FILE_FD_BASE)? as usize;
        let (data, cur) = self.files.get_mut(i)?.as_mut()?;
        Some((data.as_slice(), cur))
    }

    fn testsig(&self, name: &str) -> Option<Vec<u8>> {
        let ok = name.starts_with("testsig-") && name.ends_with(".so") && !name.contains('/');
        let dir = self.testsig_dir.as_ref().filter(|_| ok)?;
        std::fs::read(dir.join(name)).ok()
    }

    /// Answer one reverse call; `None` for a call this host does not understand (the listener then stops).
    pub fn serve(&mut self, sc: u32, req: &Request<'_>) -> Option<Reply> {
        let in0 = |i: usize| req.ins.first().and_then(|b| word(b, i));
        let fail = Some((
            1,
            req.out_sizes.iter().map(|&n| vec![0; n as usize]).collect(),
        ));
        match sc {
            RSC_GREETING => Some((
                0,
                req.out_sizes.iter().map(|&n| vec![0; n as usize]).collect(),
            )),
            RSC_OPEN => {
                let name = cstr(req.ins.get(3)?);
                let fd = if name == LIB_NAME && self.lib.is_some() {
                    self.lib_cursor = 0;
                    LIB_FD
                } else if let Some(data) = self.testsig(&name) {
                    self.files.push(Some((data, 0)));
                    FILE_FD_BASE + self.files.len() as u32 - 1
                } else {
                    return fail;
                };
                Some((0, vec![fd.to_le_bytes().to_vec()]))
            }
            RSC_CLOSE => {
                let fd = in0(0)?;
                if let Some(slot) = fd
                    .checked_sub(FILE_FD_BASE)
                    .and_then(|i| self.files.get_mut(i as usize))
                {
                    *slot = None;
                }
                Some((0, vec![]))
            }
            RSC_SEEK => {
                let (fd, off, whence) = (in0(0)?, in0(1)?, in0(2)?);
                match self.file(fd) {
                    Some((data, cur)) if whence == 0 && off as usize <= data.len() => {
                        *cur = off as usize;
                        Some((0, vec![]))
                    }
                    _ => fail,
                }
            }
            RSC_READ => {
                let (fd, len) = (in0(0)?, in0(1)?);
                let want = (*req.out_sizes.get(1)?).min(len) as usize;
                let Some((data, cur)) = self.file(fd) else {
                    return fail;
                };
                let chunk = data[*cur..(*cur + want).min(data.len())].to_vec();
                *cur += chunk.len();
                let mut head = (chunk.len() as u32).to_le_bytes().to_vec();
                head.extend_from_slice(&u32::from(chunk.is_empty()).to_le_bytes());
                Some((0, vec![head, chunk]))
            }
            RSC_STAT => {
                let name = cstr(req.ins.get(1)?);
                let size = if name == LIB_NAME {
                    self.lib.as_ref()?.len()
                } else {
                    match self.testsig(&name) {
                        Some(d) => d.len(),
                        None => return fail,
                    }
                };
                let mut st = vec![0u8; STAT_LEN];
                // {tsz, dev, ino: u64; mode, nlink: u32; rdev, size: u64; times}
                st[24..28].copy_from_slice(&0o100444u32.to_le_bytes());
                st[28..32].copy_from_slice(&1u32.to_le_bytes());
                st[40..48].copy_from_slice(&(size as u64).to_le_bytes());
                Some((0, vec![st]))
            }
            _ => None,
        }
    }
}

fn cstr(b: &[u8]) -> String {
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// The fields of the request a "next" returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextMsg {
    pub ctx: u32,
    pub handle: u32,
    pub sc: u32,
}

impl NextMsg {
    /// Decode the 16-byte `msg_recv`.
    pub fn decode(b: &[u8; 16]) -> Self {
        let w = |i| word(b, i).unwrap_or(0);
        NextMsg {
            ctx: w(0),
            handle: w(1),
            sc: w(2),
        }
    }
}

/// Encode the 16-byte `msg_send`: the answered context, its status, the response length, the request capacity.
pub fn encode_send(ctx: u32, status: u32, resp_len: u32) -> [u8; 16] {
    let mut b = [0u8; 16];
    for (i, v) in [ctx, status, resp_len, BUF_CAP as u32]
        .into_iter()
        .enumerate()
    {
        b[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    b
}
