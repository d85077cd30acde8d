//! The kernel's user-MAD interface, as the subnet manager uses it: open
//! `/dev/infiniband/umadN` (and `issmN`, which marks the port as having an SM), register
//! one agent for directed-route SMPs (class 0x81), one for LID-routed SMPs (class 0x01,
//! where traps arrive) and one for subnet administration (class 0x03, the SA's requests),
//! then `write` and `poll` + `read` 256-byte MADs behind the user-MAD header.
//!
//! Everything goes through `libc::{open, ioctl, write, poll, read, close}`, never
//! `std::fs`: Debian's `libumad2sim.so` (the ibsim client library, loaded with
//! `LD_PRELOAD`) interposes exactly these symbols, and `std` calls `open64`, which it does
//! not see. The header is the 56-byte layout the kernel uses when `IB_USER_MAD_ENABLE_PKEY`
//! is never called (and the one umad2sim reads); this crate never calls it.
//!
//! **MADs of other classes.** A kernel answers a request no agent registered for itself
//! (status "unsupported method/attribute"). libumad2sim (0.10 to 0.12) instead hands it to
//! its receive thread, which dereferences a null queue and kills the process (SIGSEGV): one
//! `perfquery` or CM request from any host would take the SM down. Under libumad2sim the
//! port therefore opens a second descriptor as the device's eighth: libumad2sim's lookup of
//! the descriptor of an unregistered class (-1) lands on that slot, so such MADs are queued
//! there instead ([`UmadPort::catches_all_classes`]), and `recv` returns them like any other
//! for the SM to answer or drop.
//!
//! This is the only crate of fabroute with `unsafe` code.

// Q_Key of QP1 (the GSI), which every GSI MAD is sent with.
use mad::sa::QP1_QKEY;
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

/// Descriptors per device in libumad2sim (`FD_PER_DEVICE`); its descriptors start at 1024.
const SIM_FDS: libc::c_int = 8;
const SIM_FD_BASE: libc::c_int = 1024;

/// An open user-MAD port with its SMP and SA agents.
#[derive(Debug)]
pub struct UmadPort {
    fd: libc::c_int,
    issm: Option<libc::c_int>,
    /// libumad2sim only: the descriptor that MADs of unregistered classes are queued on.
    catch_all: Option<libc::c_int>,
    agent_dr: u32,
    agent_lid: u32,
    agent_sa: u32,
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
    /// it), and registers the two SMP agents and the SA agent. Under libumad2sim it also
    /// opens the descriptor that catches every other class (module documentation).
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
            catch_all: None,
            agent_dr: 0,
            agent_lid: 0,
            agent_sa: 0,
            start: Instant::now(),
            kernel_timeout_ms: 0,
        };
        port.agent_dr = port.register(mad::CLASS_SUBN_DR, 0, 1)?;
        port.agent_lid = port.register(mad::CLASS_SUBN_LID, 0, 1)?;
        port.agent_sa = port.register(mad::sa::CLASS_SUBN_ADM, 1, mad::sa::SA_CLASS_VERSION)?;
        let under_sim = std::env::var("LD_PRELOAD").is_ok_and(|p| p.contains("umad2sim"));
        if under_sim && fd >= SIM_FD_BASE {
            port.catch_all = port.open_catch_all(dev);
        }
        Ok(port)
    }

    /// Whether MADs of classes no agent registered for reach `recv` (libumad2sim), rather
    /// than being answered by the kernel.
    pub fn catches_all_classes(&self) -> bool {
        self.catch_all.is_some()
    }

    /// libumad2sim: opens `dev` until a descriptor takes the device's last slot, keeps that
    /// one and closes the others. `None` when no descriptor got that slot.
    fn open_catch_all(&self, dev: &str) -> Option<libc::c_int> {
        let mut extra = Vec::new();
        let mut found = None;
        for _ in 1..SIM_FDS {
            let Ok(f) = c_open(dev, libc::O_RDWR | libc::O_NONBLOCK) else {
                break;
            };
            if f >= SIM_FD_BASE && (f - SIM_FD_BASE) % SIM_FDS == SIM_FDS - 1 {
                found = Some(f);
                break;
            }
            extra.push(f);
        }
        for f in extra {
            // SAFETY: `f` was opened above and is closed once.
            unsafe { libc::close(f) };
        }
        found
    }

    fn register(&self, class: u8, qpn: u8, version: u8) -> io::Result<u32> {
        let mut req = RegReq {
            id: 0,
            // Every method: responses to our requests and unsolicited requests alike.
            method_mask: [u32::MAX; 4],
            qpn,
            mgmt_class: class,
            mgmt_class_version: version,
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

impl UmadPort {
    /// One non-blocking read of `fd`: the MAD and its source, or `None`.
    fn read_one(&self, fd: libc::c_int) -> io::Result<Option<([u8; MAD_SIZE], Address)>> {
        let mut buf = [0u8; HDR + MAD_SIZE];
        // SAFETY: `buf` is a live, writable buffer of `buf.len()` bytes.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = io::Error::last_os_error();
            // umad2sim returns -EWOULDBLOCK as the value itself, without errno.
            if e.kind() == io::ErrorKind::WouldBlock || n == -(libc::EWOULDBLOCK as isize) {
                return Ok(None);
            }
            return Err(e);
        }
        if (n as usize) < HDR + 24 {
            return Ok(None);
        }
        let status = i32::from_ne_bytes([buf[4], buf[5], buf[6], buf[7]]);
        if status != 0 {
            // A send the kernel timed out (only with kernel_timeout_ms > 0): no MAD.
            return Ok(None);
        }
        let from = Address {
            qpn: u32::from_be_bytes([buf[20], buf[21], buf[22], buf[23]]),
            lid: u16::from_be_bytes([buf[28], buf[29]]),
        };
        let mut m = [0u8; MAD_SIZE];
        let len = (n as usize - HDR).min(MAD_SIZE);
        m[..len].copy_from_slice(&buf[HDR..HDR + len]);
        Ok(Some((m, from)))
    }

    /// `poll` on the main descriptor for up to `ms` milliseconds: whether it is readable.
    fn wait(&self, ms: libc::c_int) -> io::Result<bool> {
        let mut pfd = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(e);
        }
        Ok(r > 0)
    }
}

/// Longest wait on the main descriptor before the catch-all one is looked at again
/// (libumad2sim's `poll` watches only the first of its descriptors).
const CATCH_ALL_SLICE_MS: libc::c_int = 10;

impl Transport for UmadPort {
    fn send(&mut self, m: &[u8; MAD_SIZE], to: Address) -> io::Result<()> {
        let mut buf = [0u8; HDR + MAD_SIZE];
        let agent = match m[1] {
            mad::CLASS_SUBN_DR => self.agent_dr,
            mad::CLASS_SUBN_LID => self.agent_lid,
            // The SA's answers, and the answers to other GSI classes (libumad2sim only).
            _ => self.agent_sa,
        };
        buf[0..4].copy_from_slice(&agent.to_ne_bytes());
        buf[8..12].copy_from_slice(&self.kernel_timeout_ms.to_ne_bytes());
        buf[20..24].copy_from_slice(&to.qpn.to_be_bytes());
        // Q_Key of QP0 is unused (the SMI ignores it); QP1 takes the well-known one.
        if to.qpn != 0 {
            buf[24..28].copy_from_slice(&QP1_QKEY.to_be_bytes());
        }
        buf[28..30].copy_from_slice(&to.lid.to_be_bytes());
        buf[HDR..].copy_from_slice(m);
        // An SA table answer ends with its records (`mad::sa::wire_len`).
        let len = HDR + mad::sa::wire_len(m);
        // SAFETY: `buf` is a live buffer of at least `len` bytes.
        let n = unsafe { libc::write(self.fd, buf.as_ptr().cast(), len) };
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        if n as usize != len {
            return Err(io::Error::other(format!(
                "short write of a MAD: {n} of {len} bytes"
            )));
        }
        Ok(())
    }

    fn recv(&mut self, timeout: Duration) -> io::Result<Option<([u8; MAD_SIZE], Address)>> {
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // Round a sub-millisecond wait up: poll's unit is the millisecond.
        let ms = if ms == 0 && !timeout.is_zero() { 1 } else { ms };
        let Some(catch) = self.catch_all else {
            if !self.wait(ms)? {
                return Ok(None);
            }
            return self.read_one(self.fd);
        };
        let end = Instant::now() + Duration::from_millis(ms as u64);
        loop {
            if let Some(x) = self.read_one(catch)? {
                return Ok(Some(x));
            }
            let left = end.saturating_duration_since(Instant::now()).as_millis() as libc::c_int;
            if self.wait(left.min(CATCH_ALL_SLICE_MS))? {
                return self.read_one(self.fd);
            }
            if left == 0 {
                return Ok(None);
            }
        }
    }

    fn now(&self) -> Duration {
        self.start.elapsed()
    }
}

impl Drop for UmadPort {
    fn drop(&mut self) {
        // SAFETY: the descriptors were opened by `open` and are closed exactly once here.
        unsafe {
            libc::close(self.fd);
            if let Some(f) = self.catch_all {
                libc::close(f);
            }
            if let Some(f) = self.issm {
                libc::close(f);
            }
        }
    }
}
