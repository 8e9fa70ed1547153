//! The DSP loader and the reverse-RPC listener in the FastRPC device model: `open_lib` fetches the library
//! through the host's listener thread (open, seek, read in chunks, close — each a reverse call the listener's
//! `next` invoke takes and answers) and checks it, as the DSP-side loader does (docs/hw/fastrpc.md §5).
use std::time::Instant;

use super::{einval, err, wire, FastRpcModel};
use crate::fastrpc::listener as lst;
use crate::fastrpc::{Arg, FastRpcError};

impl FastRpcModel {
    /// One reverse call through the host's listener, bounded by the model's wait.
    fn reverse(
        &self,
        sc: u32,
        ins: &[&[u8]],
        out_sizes: &[u32],
    ) -> Result<(u32, Vec<Vec<u8>>), String> {
        let deadline = Instant::now() + self.wait;
        let mut st = self.lock();
        st.next_ctx += 1;
        let ctx = st.next_ctx;
        st.pending = Some((ctx, sc, wire::encode_request(ins, out_sizes)));
        st.reply = None;
        self.cv.notify_all();
        loop {
            if let Some((c, status, resp)) = st.reply.take() {
                if c != ctx {
                    return Err(format!("listener answered context {c}, {ctx} was asked"));
                }
                let outs = if status == 0 {
                    wire::decode_response(&resp, out_sizes)?
                } else {
                    vec![]
                };
                return Ok((status, outs));
            }
            if st.chan.as_ref().is_none_or(|c| c.dead) {
                return Err("the channel closed while the loader waited for the listener".into());
            }
            let now = Instant::now();
            if now >= deadline {
                st.pending = None;
                return Err(format!(
                    "the host listener did not answer reverse call {sc:#010x} in {:?}",
                    self.wait
                ));
            }
            st = self
                .cv
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// The DSP loader: fetch "tinylib" through the listener and check it.
    fn load_library(&self, name: &str) -> Result<Vec<u8>, String> {
        let mut path = name.as_bytes().to_vec();
        path.push(0);
        let (status, outs) = self.reverse(lst::RSC_OPEN, &[&[0; 4], &[], &[], &path, &[]], &[4])?;
        let fd = outs
            .first()
            .and_then(|o| o.get(..4))
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
        if status != 0 || fd != Some(lst::LIB_FD) {
            return Err(format!(
                "open of {name:?} answered status {status}, fd {fd:?} (expected fd 0xFFFF)"
            ));
        }
        let words = |w: &[u32]| w.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>();
        let (status, _) = self.reverse(lst::RSC_SEEK, &[&words(&[lst::LIB_FD, 0, 0])], &[])?;
        if status != 0 {
            return Err(format!("seek answered status {status}"));
        }
        let mut lib = Vec::new();
        const CHUNK: u32 = 0x8000;
        loop {
            let (status, outs) =
                self.reverse(lst::RSC_READ, &[&words(&[lst::LIB_FD, CHUNK])], &[8, CHUNK])?;
            let (Some(head), Some(data)) = (outs.first(), outs.get(1)) else {
                return Err(format!("read answered status {status} without data"));
            };
            let n = head
                .get(..4)
                .map_or(0, |w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]));
            if status != 0 || n as usize != data.len() {
                return Err(format!(
                    "read answered status {status}, {n} bytes for {}",
                    data.len()
                ));
            }
            if n == 0 {
                break;
            }
            lib.extend_from_slice(data);
            if lib.len() > 64 << 20 {
                return Err("library larger than 64 MiB".into());
            }
        }
        self.reverse(lst::RSC_CLOSE, &[&words(&[lst::LIB_FD])], &[])?;
        wire::check_library(&lib)?;
        Ok(lib)
    }

    pub(super) fn open_lib(&self, args: &mut [Arg<'_>]) -> Result<(), FastRpcError> {
        let call = "INVOKE open_lib";
        let (Arg::In(head), Arg::In(uri)) = (&args[0], &args[1]) else {
            unreachable!("shape checked")
        };
        let sizes_ok = matches!((&args[2], &args[3]), (Arg::Out(a), Arg::Out(b)) if a.len() == 8 && b.len() == 255);
        if head.len() != 8 || !sizes_ok {
            return Err(einval(
                call,
                "open_lib takes in u32[2], in URI, out 8 bytes, out 255 bytes",
            ));
        }
        let ulen = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        if ulen != uri.len() || uri.last() != Some(&0) {
            return Err(einval(
                call,
                "the URI length word must count the URI with its NUL",
            ));
        }
        let text = String::from_utf8_lossy(&uri[..uri.len() - 1]).into_owned();
        let parsed = text
            .strip_prefix("file:///")
            .and_then(|r| r.split_once('?'))
            .filter(|(_, q)| {
                q.split('&').next() == Some("entry") && q.split('&').any(|p| p == "_dom=cdsp")
            });
        let Some((name, _)) = parsed else {
            return Err(einval(
                call,
                format!("URI {text:?} is not file:///<name>?entry&…&_dom=cdsp"),
            ));
        };
        let res = self.load_library(name);
        let (mut status, mut msg, mut handle) = (0i32, String::new(), 0u32);
        match res {
            Ok(lib) => {
                let mut st = self.lock();
                handle = st.next_lib;
                st.next_lib += 1;
                st.libs.insert(handle, lib);
            }
            Err(e) => {
                status = -1;
                msg = e;
            }
        }
        if let [_, _, Arg::Out(ret), Arg::Out(text)] = args {
            ret[..4].copy_from_slice(&handle.to_le_bytes());
            ret[4..].copy_from_slice(&status.to_le_bytes());
            let n = msg.len().min(254);
            text[..n].copy_from_slice(&msg.as_bytes()[..n]);
        }
        Ok(())
    }

    pub(super) fn listener_next(&self, args: &mut [Arg<'_>]) -> Result<(), FastRpcError> {
        let call = "INVOKE listener next";
        let (Arg::In(send), Arg::In(resp)) = (&args[0], &args[1]) else {
            unreachable!("shape checked")
        };
        let shapes = matches!((&args[2], &args[3]), (Arg::Out(r), Arg::Out(b)) if r.len() == 16 && b.len() == lst::BUF_CAP);
        if send.len() != 16 || resp.len() > lst::BUF_CAP || !shapes {
            return Err(einval(
                call,
                "next takes in 16 bytes, in ≤ 64 KiB, out 16 bytes, out 64 KiB",
            ));
        }
        let w = |i: usize| {
            u32::from_le_bytes([
                send[4 * i],
                send[4 * i + 1],
                send[4 * i + 2],
                send[4 * i + 3],
            ])
        };
        let (ctx, status, len, cap) = (w(0), w(1), w(2), w(3));
        if len as usize != resp.len() || cap as usize != lst::BUF_CAP {
            return Err(einval(
                call,
                "msg_send's length/capacity words disagree with the buffers",
            ));
        }
        let mut st = self.lock();
        Self::ready(&mut st, call)?;
        let gen = st.generation;
        match st.taken.take() {
            Some((c, _)) if c == ctx => st.reply = Some((ctx, status, resp.to_vec())),
            Some((c, _)) => {
                return Err(einval(
                    call,
                    format!("reply for context {ctx}, {c} is outstanding"),
                ))
            }
            None if status != 0xFFFF_FFFF || ctx != 0 => {
                return Err(einval(call, "a reply with no outstanding request"));
            }
            None => {}
        }
        self.cv.notify_all();
        loop {
            if st.generation != gen || st.chan.as_ref().is_none_or(|c| c.dead) {
                return Err(err(call, libc::ECONNRESET, "the channel closed"));
            }
            if let Some((c, rsc, req)) = st.pending.take() {
                st.taken = Some((c, rsc));
                if req.len() > lst::BUF_CAP {
                    return Err(einval(
                        call,
                        "reverse request larger than the request buffer",
                    ));
                }
                if let [_, _, Arg::Out(recv), Arg::Out(buf)] = args {
                    recv[..4].copy_from_slice(&c.to_le_bytes());
                    recv[4..8].copy_from_slice(&0u32.to_le_bytes());
                    recv[8..12].copy_from_slice(&rsc.to_le_bytes());
                    buf[..req.len()].copy_from_slice(&req);
                }
                return Ok(());
            }
            st = self.cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
    }
}
