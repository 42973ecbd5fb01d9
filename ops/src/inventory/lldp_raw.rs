//! A node's LLDP neighbours heard first-hand, when lldpd is not there to ask: an AF_PACKET
//! socket per NIC netdev, bound to LLDP's ethertype and joined to the nearest-bridge group
//! 01:80:c2:00:00:0e (so the NIC accepts the switch's frames), read until every netdev has
//! heard its neighbour or the wait is over. A switch sends every 30 s by default (SONiC's lldpd
//! too), hence the default wait of 35 s.
//!
//! Opening such a socket needs CAP_NET_RAW; without it the error says so. Frames are read into
//! a bounded buffer and parsed by [`lldp_frame`]; one that does not parse is
//! counted and skipped.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::inventory::lldp::Neighbor;
use crate::inventory::lldp_frame::{self, ETHERTYPE_LLDP};
use crate::inventory::DiscoverError;

/// The default wait: one switch interval (30 s) and some.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(35);
/// LLDP's nearest-bridge multicast address.
const NEAREST_BRIDGE: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e];
/// Room for any LLDPDU (at most 1500 bytes) with its Ethernet header and a VLAN tag.
const FRAME_MAX: usize = 2048;

/// What the listening heard.
#[derive(Debug, Clone, Default)]
pub struct Heard {
    /// One neighbour per netdev that heard one (the newest frame), by netdev.
    pub neighbors: Vec<Neighbor>,
    /// Frames on LLDP's ethertype that did not parse.
    pub skipped: usize,
    /// Why the last skipped frame was skipped.
    pub last_skip: Option<String>,
    /// How long it listened.
    pub waited: Duration,
}

/// Listens on each of `netdevs` for up to `wait`, returning early once each has a neighbour.
pub fn listen(netdevs: &[String], wait: Duration) -> Result<Heard, DiscoverError> {
    let sockets: Vec<(OwnedFd, &String)> =
        netdevs.iter().map(|n| open(n).map(|fd| (fd, n))).collect::<Result<_, _>>()?;
    let start = Instant::now();
    let mut found: BTreeMap<String, Neighbor> = BTreeMap::new();
    let mut heard = Heard::default();
    let mut buf = vec![0u8; FRAME_MAX];
    while found.len() < netdevs.len() {
        let left = wait.saturating_sub(start.elapsed());
        if left.is_zero() {
            break;
        }
        let mut polls: Vec<libc::pollfd> = sockets
            .iter()
            .map(|(fd, _)| libc::pollfd { fd: fd.as_raw_fd(), events: libc::POLLIN, revents: 0 })
            .collect();
        let ms = libc::c_int::try_from(left.as_millis().max(1)).unwrap_or(libc::c_int::MAX);
        // SAFETY: `polls` is a live array of `polls.len()` pollfd structures.
        let ready = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, ms) };
        if ready < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(DiscoverError::Lldp(format!("raw LLDP: poll: {err}")));
        }
        for (poll, (fd, netdev)) in polls.iter().zip(&sockets) {
            if poll.revents != 0 {
                drain(fd, netdev, &mut buf, &mut found, &mut heard)?;
            }
        }
    }
    heard.waited = start.elapsed();
    heard.neighbors = found.into_values().collect();
    Ok(heard)
}

/// Reads every frame queued on `fd` without waiting; a shutdown frame (TTL 0) forgets the
/// neighbour.
fn drain(
    fd: &OwnedFd,
    netdev: &str,
    buf: &mut [u8],
    found: &mut BTreeMap<String, Neighbor>,
    heard: &mut Heard,
) -> Result<(), DiscoverError> {
    loop {
        // SAFETY: sockaddr_ll is plain data, valid when zeroed.
        let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut from_len = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: `buf` and `from` are live and their lengths are given; the kernel writes at
        // most that much.
        let n = unsafe {
            libc::recvfrom(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
                (&raw mut from).cast(),
                &mut from_len,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            return match err.kind() {
                io::ErrorKind::WouldBlock => Ok(()),
                io::ErrorKind::Interrupted => continue,
                _ => Err(DiscoverError::Lldp(format!("raw LLDP on {netdev}: reading a frame: {err}"))),
            };
        }
        if from.sll_pkttype == libc::PACKET_OUTGOING {
            continue; // our own lldpd's, if one runs here
        }
        let parsed = match usize::try_from(n) {
            Ok(len) if len <= buf.len() => lldp_frame::parse_frame(&buf[..len]),
            _ => Err(format!("a frame of {n} bytes, more than {} read", buf.len())),
        };
        match parsed {
            Ok(pdu) if pdu.ttl == 0 => drop(found.remove(netdev)),
            Ok(pdu) => drop(found.insert(netdev.to_string(), pdu.neighbor(netdev))),
            Err(why) => {
                heard.skipped += 1;
                heard.last_skip = Some(format!("on {netdev}: {why}"));
            }
        }
    }
}

/// An AF_PACKET socket receiving `netdev`'s LLDP frames.
fn open(netdev: &str) -> Result<OwnedFd, DiscoverError> {
    let fail = |what: &str, err: io::Error| DiscoverError::Lldp(format!("raw LLDP on {netdev}: {what}: {err}"));
    let name =
        CString::new(netdev).map_err(|_| DiscoverError::Lldp(format!("netdev {netdev:?}: a NUL in its name")))?;
    // SAFETY: a NUL-terminated string that lives across the call.
    let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if ifindex == 0 {
        return Err(fail("no such netdev in this network namespace", io::Error::last_os_error()));
    }
    let protocol = ETHERTYPE_LLDP.to_be();
    let kind = libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK;
    // SAFETY: socket(2) with constant arguments; the descriptor is owned at once below.
    let raw = unsafe { libc::socket(libc::AF_PACKET, kind, libc::c_int::from(protocol)) };
    if raw < 0 {
        let err = io::Error::last_os_error();
        if matches!(err.raw_os_error(), Some(libc::EPERM | libc::EACCES)) {
            return Err(DiscoverError::Lldp(format!(
                "raw LLDP on {netdev}: an AF_PACKET socket needs CAP_NET_RAW (run as root, or \
                 `setcap cap_net_raw+ep` the binary), or run lldpd and use --lldp lldpd: {err}"
            )));
        }
        return Err(fail("socket(AF_PACKET)", err));
    }
    // SAFETY: `raw` is a fresh descriptor nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: sockaddr_ll is plain data, valid when zeroed.
    let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    addr.sll_family = libc::AF_PACKET as libc::c_ushort;
    addr.sll_protocol = protocol;
    addr.sll_ifindex = ifindex as libc::c_int;
    // SAFETY: `addr` is a live sockaddr_ll and its length is given.
    let bound = unsafe {
        libc::bind(fd.as_raw_fd(), (&raw const addr).cast(), size_of::<libc::sockaddr_ll>() as libc::socklen_t)
    };
    if bound < 0 {
        return Err(fail("bind", io::Error::last_os_error()));
    }
    let mut address = [0u8; 8];
    address[..6].copy_from_slice(&NEAREST_BRIDGE);
    let mreq = libc::packet_mreq {
        mr_ifindex: ifindex as libc::c_int,
        mr_type: libc::PACKET_MR_MULTICAST as libc::c_ushort,
        mr_alen: 6,
        mr_address: address,
    };
    // SAFETY: `mreq` is a live packet_mreq and its length is given.
    let joined = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_ADD_MEMBERSHIP,
            (&raw const mreq).cast(),
            size_of::<libc::packet_mreq>() as libc::socklen_t,
        )
    };
    if joined < 0 {
        return Err(fail("joining 01:80:c2:00:00:0e (PACKET_ADD_MEMBERSHIP)", io::Error::last_os_error()));
    }
    Ok(fd)
}
