//! The kernel's user-MAD interface, as the subnet manager uses it: open
//! `/dev/infiniband/umadN` (and `issmN`, which marks the port as having an SM), register
//! one agent for directed-route SMPs (class 0x81) and one for LID-routed SMPs (class 0x01,
//! where traps arrive), then `write` and `poll` + `read` 256-byte MADs behind the
//! user-MAD header.
//!
//! Everything goes through `libc::{open, ioctl, write, poll, read, close}`, never
//! `std::fs`: Debian's `libumad2sim.so` (the ibsim client library, loaded with
//! `LD_PRELOAD`) interposes exactly these symbols, and `std` calls `open64`, which it does
//! not see. The header is the 56-byte layout the kernel uses when `IB_USER_MAD_ENABLE_PKEY`
//! is never called (and the one umad2sim reads); this crate never calls it.
//!
//! This is the only crate of fabroute with `unsafe` code.

use mad::{Address, Transport, MAD_SIZE};
use std::ffi::CString;
use std::io;
use std::time::{Duration, Instant};

/// Bytes of the user-MAD header in front of each MAD (the layout without P_Key index).
pub const HDR: usize = 56;

/// `IB_USER_MAD_REGISTER_AGENT`: `_IOWR(0x1b, 1, struct ib_user_mad_reg_req)` (28 bytes).
const REGISTER_AGENT: libc::c_ulong = (3 << 30) | (28 << 16) | (0x1b << 8) | 1;

#[repr(C)]
struct RegReq {
    id: u32,
    method_mask: [u32; 4],
    qpn: u8,
    mgmt_class: u8,
    mgmt_class_version: u8,
    oui: [u8; 3],
    rmpp_version: u8,
}

/// An open user-MAD port with its two SMP agents.
#[derive(Debug)]
pub struct UmadPort {
    fd: libc::c_int,
    issm: Option<libc::c_int>,
    agent_dr: u32,
    agent_lid: u32,
    start: Instant,
    /// Response timeout the kernel applies per send (0: the SM keeps its own timeouts).
    pub kernel_timeout_ms: u32,
}

fn c_open(path: &str, flags: libc::c_int) -> io::Result<libc::c_int> {
    let c = CString::new(path).map_err(|_| io::Error::other("NUL in a device path"))?;
    // SAFETY: `c` is a valid NUL-terminated string that lives across the call.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("cannot open {path}: {e}")));
    }
    Ok(fd)
}

impl UmadPort {
    /// Opens `dev` (e.g. `/dev/infiniband/umad0`) and, when given, `issm` (e.g.
    /// `/dev/infiniband/issm0`, which sets the port's IsSM capability so traps are sent to
    /// it), and registers the two SMP agents.
    pub fn open(dev: &str, issm: Option<&str>) -> io::Result<UmadPort> {
        let fd = c_open(dev, libc::O_RDWR | libc::O_NONBLOCK)?;
        let issm = match issm {
            Some(p) => match c_open(p, libc::O_RDWR) {
                Ok(f) => Some(f),
                Err(e) => {
                    // SAFETY: `fd` was opened above and is closed once.
                    unsafe { libc::close(fd) };
                    return Err(e);
                }
            },
            None => None,
        };
        let mut port = UmadPort {
            fd,
            issm,
            agent_dr: 0,
            agent_lid: 0,
            start: Instant::now(),
            kernel_timeout_ms: 0,
        };
        port.agent_dr = port.register(mad::CLASS_SUBN_DR)?;
        port.agent_lid = port.register(mad::CLASS_SUBN_LID)?;
        Ok(port)
    }

    fn register(&self, class: u8) -> io::Result<u32> {
        let mut req = RegReq {
            id: 0,
            // Every method: responses to our requests and unsolicited traps alike.
            method_mask: [u32::MAX; 4],
            qpn: 0,
            mgmt_class: class,
            mgmt_class_version: 1,
            oui: [0; 3],
            rmpp_version: 0,
        };
        // SAFETY: `req` is a properly laid out `ib_user_mad_reg_req` the kernel (or
        // umad2sim) reads and writes back its `id`; it outlives the call.
        let r = unsafe { libc::ioctl(self.fd, REGISTER_AGENT, &mut req as *mut RegReq) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(
                e.kind(),
                format!("cannot register an agent for class {class:#04x}: {e}"),
            ));
        }
        Ok(req.id)
    }
}

impl Transport for UmadPort {
    fn send(&mut self, m: &[u8; MAD_SIZE], to: Address) -> io::Result<()> {
        let mut buf = [0u8; HDR + MAD_SIZE];
        let agent = if m[1] == mad::CLASS_SUBN_DR {
            self.agent_dr
        } else {
            self.agent_lid
        };
        buf[0..4].copy_from_slice(&agent.to_ne_bytes());
        buf[8..12].copy_from_slice(&self.kernel_timeout_ms.to_ne_bytes());
        buf[20..24].copy_from_slice(&to.qpn.to_be_bytes());
        // Q_Key of QP0 is unused; the SMI ignores it.
        buf[28..30].copy_from_slice(&to.lid.to_be_bytes());
        buf[HDR..].copy_from_slice(m);
        // SAFETY: `buf` is a live buffer of `buf.len()` bytes.
        let n = unsafe { libc::write(self.fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n as usize != buf.len() {
            return Err(io::Error::other(format!(
                "short write of a MAD: {n} of {} bytes",
                buf.len()
            )));
        }
        Ok(())
    }

    fn recv(&mut self, timeout: Duration) -> io::Result<Option<[u8; MAD_SIZE]>> {
        let mut pfd = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // Round a sub-millisecond wait up: poll's unit is the millisecond.
        let ms = if ms == 0 && !timeout.is_zero() { 1 } else { ms };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(None);
            }
            return Err(e);
        }
        if r == 0 {
            return Ok(None);
        }
        let mut buf = [0u8; HDR + MAD_SIZE];
        // SAFETY: `buf` is a live, writable buffer of `buf.len()` bytes.
        let n = unsafe { libc::read(self.fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(None);
            }
            return Err(e);
        }
        // umad2sim returns -EWOULDBLOCK as the value itself, without errno.
        if (n as usize) < HDR + 24 {
            return Ok(None);
        }
        let status = i32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]);
        if status != 0 {
            // A send the kernel timed out (only with kernel_timeout_ms > 0): no MAD.
            return Ok(None);
        }
        let mut m = [0u8; MAD_SIZE];
        let len = (n as usize - HDR).min(MAD_SIZE);
        m[..len].copy_from_slice(&buf[HDR..HDR + len]);
        Ok(Some(m))
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }
}

impl Drop for UmadPort {
    fn drop(&mut self) {
        // SAFETY: both descriptors were opened by `open` and are closed exactly once here.
        unsafe {
            libc::close(self.fd);
            if let Some(f) = self.issm {
                libc::close(f);
            }
        }
    }
}
