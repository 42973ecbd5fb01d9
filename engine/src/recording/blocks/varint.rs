//! LEB128 varints, zigzag, and a cursor that refuses to read past its end.

/// Why a block's body cannot be decoded: it is cut short or inconsistent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub String);

/// Appends `v` as a LEB128 varint.
#[inline]
pub fn put_u64(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends `v` zigzag-encoded: small magnitudes of either sign stay short.
#[inline]
pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    put_u64(out, zigzag(v));
}

/// Appends a length-prefixed string.
pub fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Reads a decoded body front to back.
pub struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Cursor<'a> {
        Cursor { bytes, pos: 0 }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// A varint. Most in a block are one or two bytes (a time index's
    /// step, a steady counter's delta of delta): those are read without a
    /// loop.
    #[inline]
    pub fn u64(&mut self) -> Result<u64, Malformed> {
        match self.bytes.get(self.pos..self.pos + 2) {
            Some(&[b0, _]) if b0 < 0x80 => {
                self.pos += 1;
                Ok(u64::from(b0))
            }
            Some(&[b0, b1]) if b1 < 0x80 => {
                self.pos += 2;
                Ok(u64::from(b0 & 0x7f) | u64::from(b1) << 7)
            }
            _ => self.long_u64(),
        }
    }

    /// A varint of any length, or at the end of the bytes.
    #[inline(never)]
    fn long_u64(&mut self) -> Result<u64, Malformed> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.bytes.get(self.pos).ok_or_else(|| Malformed("a number is cut short".into()))?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(Malformed("a number is longer than 64 bits".into()))
    }

    /// A zigzag varint.
    #[inline]
    pub fn i64(&mut self) -> Result<i64, Malformed> {
        self.u64().map(unzigzag)
    }

    /// A count of items each taking at least `min_bytes` bytes: refused when
    /// the rest of the body cannot hold them, so a corrupt count never
    /// allocates.
    pub fn count(&mut self, min_bytes: usize, what: &str) -> Result<usize, Malformed> {
        let n = self.u64()?;
        if n > (self.remaining() / min_bytes.max(1)) as u64 {
            return Err(Malformed(format!("{n} {what} cannot fit in the {} bytes left", self.remaining())));
        }
        Ok(n as usize)
    }

    /// `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if n > self.remaining() {
            return Err(Malformed(format!("{n} bytes wanted, {} left", self.remaining())));
        }
        let out = &self.bytes[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// One byte.
    pub fn byte(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }

    /// A length-prefixed string.
    pub fn str(&mut self) -> Result<&'a str, Malformed> {
        let n = self.count(1, "string bytes")?;
        std::str::from_utf8(self.take(n)?).map_err(|_| Malformed("a string is not UTF-8".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_at_their_edges() {
        let mut out = Vec::new();
        let unsigned = [0, 1, 127, 128, 16_383, 16_384, u64::MAX - 1, u64::MAX];
        let signed = [0, -1, 1, i64::MIN, i64::MAX, -64, 63, -65];
        unsigned.iter().for_each(|v| put_u64(&mut out, *v));
        signed.iter().for_each(|v| put_i64(&mut out, *v));
        put_str(&mut out, "Ethernet4");
        let mut c = Cursor::new(&out);
        assert_eq!(unsigned.map(|_| c.u64().unwrap()), unsigned);
        assert_eq!(signed.map(|_| c.i64().unwrap()), signed);
        assert_eq!(c.str().unwrap(), "Ethernet4");
        assert_eq!(c.remaining(), 0);
        assert!(c.u64().is_err(), "reading past the end is an error");
        // A one- or two-byte number as the last bytes, and one cut short.
        for (bytes, v) in [(&[5u8][..], Some(5)), (&[0x85, 0x01][..], Some(133)), (&[0x85][..], None)] {
            assert_eq!(Cursor::new(bytes).u64().ok(), v, "{bytes:?}");
        }
    }

    #[test]
    fn a_count_the_body_cannot_hold_is_refused() {
        let mut out = Vec::new();
        put_u64(&mut out, 1 << 40);
        out.extend_from_slice(&[0; 10]);
        let err = Cursor::new(&out).count(1, "samples").unwrap_err();
        assert!(err.0.contains("cannot fit in the 10 bytes left"), "{err}");
        assert!(Cursor::new(&[0xff; 11]).u64().is_err(), "more than 64 bits");
    }
}
