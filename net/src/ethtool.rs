//! The ethtool statistics ioctls (`SIOCETHTOOL`), wrapped safely.
//!
//! Three commands, as `ethtool -S` uses them: `ETHTOOL_GSSET_INFO` for the
//! number of statistics, `ETHTOOL_GSTRINGS` for their names (32 bytes each)
//! and `ETHTOOL_GSTATS` for their values (u64 each). The kernel copies at
//! most the count it reports, so the buffers are sized from that count.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const ETHTOOL_GSTRINGS: u32 = 0x1b;
const ETHTOOL_GSTATS: u32 = 0x1d;
const ETHTOOL_GSSET_INFO: u32 = 0x37;
const ETH_SS_STATS: u32 = 1;
const ETH_GSTRING_LEN: usize = 32;

/// The most statistics read from one interface. mlx5 with many channels
/// reports a few thousand; 65 536 caps the buffers (2 MiB of names) against
/// a driver reporting nonsense.
pub const MAX_STATS: usize = 65_536;

/// An `AF_INET` datagram socket to send ethtool ioctls on. It lives in the
/// network namespace of the thread that opened it.
#[derive(Debug)]
pub struct EthtoolSocket {
    fd: OwnedFd,
}

fn ifreq(name: &str, data: *mut libc::c_char) -> io::Result<libc::ifreq> {
    // SAFETY: ifreq is plain old data; all zeroes is a valid value.
    let mut ifr: libc::ifreq = unsafe { std::mem::zeroed() };
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= ifr.ifr_name.len() || bytes.contains(&0) {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("{name:?} is not an interface name")));
    }
    for (dst, src) in ifr.ifr_name.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    ifr.ifr_ifru.ifru_data = data;
    Ok(ifr)
}

impl EthtoolSocket {
    /// Opens the socket.
    pub fn open() -> io::Result<EthtoolSocket> {
        // SAFETY: plain socket(2) call; the result is checked.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor that nothing else owns.
        Ok(EthtoolSocket { fd: unsafe { OwnedFd::from_raw_fd(fd) } })
    }

    /// `SIOCETHTOOL` on `name` with the command buffer at `data`. Public so
    /// other ethtool commands (the actuators' tunables) share this socket
    /// and its checks instead of a second ioctl layer.
    ///
    /// # Safety
    /// `data` must point to a buffer laid out as the command in it expects,
    /// large enough for what the kernel writes back.
    pub unsafe fn ethtool(&self, name: &str, data: *mut libc::c_char) -> io::Result<()> {
        let mut ifr = ifreq(name, data)?;
        // SAFETY: ifr is a valid ifreq; the caller vouches for `data`.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SIOCETHTOOL as _, &mut ifr) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Whether `name` is a loopback interface (`IFF_LOOPBACK`).
    pub fn is_loopback(&self, name: &str) -> io::Result<bool> {
        let mut ifr = ifreq(name, std::ptr::null_mut())?;
        // SAFETY: SIOCGIFFLAGS reads and writes only the ifreq.
        let rc = unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SIOCGIFFLAGS as _, &mut ifr) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: SIOCGIFFLAGS filled in the flags member.
        let flags = unsafe { ifr.ifr_ifru.ifru_flags };
        Ok(flags as libc::c_int & libc::IFF_LOOPBACK != 0)
    }

    /// How many statistics `name` has. `EOPNOTSUPP` when its driver has
    /// no ethtool statistics.
    pub fn stats_count(&self, name: &str) -> io::Result<usize> {
        // struct ethtool_sset_info { u32 cmd; u32 reserved; u64 sset_mask; u32 data[]; }
        #[repr(C)]
        struct SsetInfo {
            cmd: u32,
            reserved: u32,
            mask: u64,
            data: [u32; 1],
        }
        let mut info = SsetInfo { cmd: ETHTOOL_GSSET_INFO, reserved: 0, mask: 1 << ETH_SS_STATS, data: [0] };
        // SAFETY: one requested set, so the kernel writes one u32 of data.
        unsafe { self.ethtool(name, (&mut info as *mut SsetInfo).cast())? };
        if info.mask & (1 << ETH_SS_STATS) == 0 {
            return Ok(0);
        }
        Ok(info.data[0] as usize)
    }

    /// The names of `name`'s statistics; `count` is a fresh
    /// [`EthtoolSocket::stats_count`].
    pub fn stat_names(&self, name: &str, count: usize) -> io::Result<Vec<String>> {
        if count > MAX_STATS {
            return Err(too_many(name, count));
        }
        let room = with_slack(count);
        // struct ethtool_gstrings { u32 cmd; u32 string_set; u32 len; u8 data[]; }
        // held in u32 words for alignment.
        let mut buf = vec![0u32; 3 + room * ETH_GSTRING_LEN / 4];
        buf[0] = ETHTOOL_GSTRINGS;
        buf[1] = ETH_SS_STATS;
        buf[2] = count as u32;
        // SAFETY: the buffer holds the header and `room` strings, more than
        // the driver's count read just before (see `with_slack`).
        unsafe { self.ethtool(name, buf.as_mut_ptr().cast())? };
        let len = buf[2] as usize;
        if len > room {
            return Err(too_many(name, len));
        }
        // SAFETY: the u32 buffer viewed as bytes, within its length.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), buf.len() * 4) };
        let names = bytes[12..]
            .chunks_exact(ETH_GSTRING_LEN)
            .take(len)
            .map(|chunk| match CStr::from_bytes_until_nul(chunk) {
                Ok(s) => s.to_string_lossy().into_owned(),
                Err(_) => String::from_utf8_lossy(chunk).into_owned(),
            })
            .collect();
        Ok(names)
    }

    /// The values of `name`'s statistics into `values`; `count` is a fresh
    /// [`EthtoolSocket::stats_count`].
    pub fn stat_values(&self, name: &str, count: usize, values: &mut Vec<u64>) -> io::Result<()> {
        if count > MAX_STATS {
            return Err(too_many(name, count));
        }
        let room = with_slack(count);
        // struct ethtool_stats { u32 cmd; u32 n_stats; u64 data[]; }
        let mut buf = vec![0u64; 1 + room];
        let header = buf.as_mut_ptr().cast::<u32>();
        // SAFETY: the first u64 holds the two u32 header fields.
        unsafe {
            header.write(ETHTOOL_GSTATS);
            header.add(1).write(count as u32);
        }
        // SAFETY: room for `room` values after the header (see `with_slack`).
        unsafe { self.ethtool(name, buf.as_mut_ptr().cast())? };
        // SAFETY: reading back the n_stats header field.
        let n = unsafe { buf.as_ptr().cast::<u32>().add(1).read() } as usize;
        if n > room {
            return Err(too_many(name, n));
        }
        values.clear();
        values.extend_from_slice(&buf[1..1 + n]);
        Ok(())
    }
}

/// Room for `count` entries and then some. The kernel ignores the count in
/// the request and writes as many entries as the driver has *now*; between
/// reading the count and this call a driver can grow (channels added).
/// `ethtool -S` has the same race; the slack makes it harmless for any
/// reconfiguration short of multiplying the channel count.
fn with_slack(count: usize) -> usize {
    count * 2 + 256
}

fn too_many(name: &str, count: usize) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{name} reports {count} statistics (more than {MAX_STATS})"))
}

/// The most interfaces listed: a host with thousands of containers' veths
/// is possible; past 4096 the list is cut rather than read without end.
pub const MAX_INTERFACES: usize = 4096;

/// The names of the interfaces in the calling thread's network namespace.
pub fn interfaces() -> io::Result<Vec<String>> {
    // SAFETY: if_nameindex returns a list ending in a zero entry, or null;
    // it is freed below with if_freenameindex.
    let list = unsafe { libc::if_nameindex() };
    if list.is_null() {
        return Err(io::Error::last_os_error());
    }
    let mut names = Vec::new();
    let mut entry = list;
    // SAFETY: walks the list up to its terminating entry; each name is a
    // NUL-terminated string owned by the list.
    unsafe {
        while (*entry).if_index != 0 && !(*entry).if_name.is_null() && names.len() < MAX_INTERFACES {
            names.push(CStr::from_ptr((*entry).if_name).to_string_lossy().into_owned());
            entry = entry.add(1);
        }
        libc::if_freenameindex(list);
    }
    names.sort();
    Ok(names)
}
