//! Following a file as it grows, like `tail -f`: appended complete lines,
//! starting over when the file is truncated or replaced.

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;

/// The most bytes read in one poll: a burst of output (a file that already
/// holds a long run) is taken in steps instead of one huge allocation.
pub const MAX_READ: usize = 1 << 20;

/// The longest line kept. nccl-tests lines are under 200 bytes; a longer
/// "line" is binary junk or a missing newline, dropped rather than buffered
/// without end.
pub const MAX_LINE: usize = 64 * 1024;

/// What one poll of the file found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Appended {
    /// The file was truncated or replaced since the last poll: the lines
    /// are from a new start.
    pub restarted: bool,
    /// Complete lines, without their newlines.
    pub lines: Vec<String>,
    /// Lines longer than [`MAX_LINE`] that were dropped.
    pub dropped: usize,
}

/// Follows one file.
#[derive(Debug)]
pub struct Follower {
    path: PathBuf,
    file: Option<(File, u64, u64)>,
    offset: u64,
    partial: Vec<u8>,
    skipping: bool,
    /// Skip what the file holds at the first open.
    skip_existing: bool,
}

impl Follower {
    /// Follows `path`; with `from_start` false, what it holds at the first
    /// open is skipped.
    pub fn new(path: impl Into<PathBuf>, from_start: bool) -> Follower {
        Follower {
            path: path.into(),
            file: None,
            offset: 0,
            partial: Vec::new(),
            skipping: false,
            skip_existing: !from_start,
        }
    }

    /// Reads what was appended since the last call. `NotFound` while the
    /// file does not exist (yet).
    pub fn poll(&mut self) -> io::Result<Appended> {
        let mut out = Appended::default();
        let on_disk = match std::fs::metadata(&self.path) {
            Ok(m) => m,
            Err(e) => {
                // Gone (rotated away, job cleaned up): wait for a new one.
                if self.file.take().is_some() {
                    self.reset();
                }
                self.skip_existing = false;
                return Err(e);
            }
        };
        let same = matches!(&self.file, Some((_, dev, ino)) if *dev == on_disk.dev() && *ino == on_disk.ino());
        if !same {
            let file = File::open(&self.path)?;
            let m = file.metadata()?;
            out.restarted = self.file.is_some();
            self.reset();
            if std::mem::take(&mut self.skip_existing) {
                self.offset = m.len();
            }
            self.file = Some((file, m.dev(), m.ino()));
        }
        let len = match &self.file {
            Some((file, _, _)) => file.metadata()?.len(),
            None => return Ok(out),
        };
        if len < self.offset {
            out.restarted = true;
            self.reset();
        }
        let Some((file, _, _)) = &self.file else { return Ok(out) };
        let want = (len - self.offset).min(MAX_READ as u64) as usize;
        if want == 0 {
            return Ok(out);
        }
        let mut buf = vec![0u8; want];
        let n = file.read_at(&mut buf, self.offset)?;
        self.offset += n as u64;
        for &byte in &buf[..n] {
            if byte == b'\n' {
                if self.skipping {
                    self.skipping = false;
                } else {
                    out.lines.push(String::from_utf8_lossy(&self.partial).into_owned());
                }
                self.partial.clear();
            } else if !self.skipping {
                if self.partial.len() >= MAX_LINE {
                    self.partial.clear();
                    self.skipping = true;
                    out.dropped += 1;
                } else {
                    self.partial.push(byte);
                }
            }
        }
        Ok(out)
    }

    fn reset(&mut self) {
        self.offset = 0;
        self.partial.clear();
        self.skipping = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn appended_lines_truncation_and_partial_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let mut f = Follower::new(&path, true);
        assert_eq!(f.poll().unwrap_err().kind(), io::ErrorKind::NotFound);
        std::fs::write(&path, "a\nb").unwrap();
        assert_eq!(f.poll().unwrap().lines, vec!["a"]);
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"c\nd\n").unwrap();
        assert_eq!(f.poll().unwrap().lines, vec!["bc", "d"]);
        assert_eq!(f.poll().unwrap(), Appended::default());
        std::fs::write(&path, "x\n").unwrap();
        let got = f.poll().unwrap();
        assert!(got.restarted);
        assert_eq!(got.lines, vec!["x"]);
    }

    #[test]
    fn from_start_false_skips_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        std::fs::write(&path, "old\n").unwrap();
        let mut f = Follower::new(&path, false);
        assert!(f.poll().unwrap().lines.is_empty());
        std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(b"new\n").unwrap();
        assert_eq!(f.poll().unwrap().lines, vec!["new"]);
    }

    #[test]
    fn an_overlong_line_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.log");
        let mut text = "x".repeat(MAX_LINE + 10);
        text.push_str("\nok\n");
        std::fs::write(&path, text).unwrap();
        let got = Follower::new(&path, true).poll().unwrap();
        assert_eq!(got.lines, vec!["ok"]);
        assert_eq!(got.dropped, 1);
    }
}
