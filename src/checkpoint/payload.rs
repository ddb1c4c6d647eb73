//! Reading a checkpoint's payload and decoding it in one pass, at the speed of a plain
//! `read` of the file.
//!
//! The payload is decoded while it is read from the file, and its checksum computed on
//! the same bytes as they arrive, so the file is never held whole in memory and never
//! copied twice:
//!
//! * small values go through a 64 KiB buffer (bincode reads them a few bytes at a time);
//! * a large block of bytes — a [`crate::checkpoint::bulk`] vector, a
//!   `serde_bytes::ByteBuf`, a C or Fortran program's registered region — is read by
//!   the kernel straight into the memory it is restored to, 1 MiB at a time, each MiB
//!   checksummed right after its read while it is still in the cache.
//!
//! The value decoded is handed back only once the whole payload has been read and its
//! checksum matches the header's: a torn or damaged file is never loaded. Bytes after
//! the value (bincode allows them) are read and checksummed too. Every allocation the
//! decoding makes is bounded by the payload length of the (checksummed) header, which
//! is the file's size.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use bincode::Options;
use serde::de::{DeserializeOwned, Visitor};
use xxhash_rust::xxh3::Xxh3Default;

use super::bulk;
use super::error::CheckpointError;
use super::storage::FileHeader;

/// Bytes read ahead for the small values of a payload.
const BUFFER: usize = 64 << 10;
/// Bytes read into a large destination per `read` call, then checksummed while still
/// in the cache.
const CHUNK: usize = 1 << 20;

/// Why reading the payload stopped before its end.
#[derive(Debug)]
enum Stopped {
    /// The file ended early (it was truncated after its size was checked).
    Short { read: u64 },
    /// The read itself failed.
    Io(io::Error),
}

/// The payload of one open checkpoint file, read once, checksummed as it is read.
pub(crate) struct PayloadReader {
    file: File,
    path: PathBuf,
    /// Payload length announced by the header.
    total: u64,
    /// Payload bytes not yet read from the file.
    left: u64,
    buf: Box<[u8]>,
    /// Unconsumed bytes of `buf` are `buf[at..end]`.
    at: usize,
    end: usize,
    hasher: Xxh3Default,
    stopped: Option<Stopped>,
    /// Holds a string or a small borrowed block while the visitor looks at it.
    scratch: Vec<u8>,
}

impl std::fmt::Debug for PayloadReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PayloadReader")
            .field("path", &self.path)
            .field("total", &self.total)
            .field("left", &self.left)
            .finish_non_exhaustive()
    }
}

impl PayloadReader {
    /// Reads the payload of `file`, positioned at its first byte, whose header is
    /// `header`.
    fn new(file: File, header: &FileHeader, path: &Path) -> Self {
        Self {
            file,
            path: path.to_path_buf(),
            total: header.payload_len,
            left: header.payload_len,
            buf: vec![0u8; BUFFER].into_boxed_slice(),
            at: 0,
            end: 0,
            hasher: Xxh3Default::new(),
            stopped: None,
            scratch: Vec::new(),
        }
    }

    /// Bytes of the payload not yet handed to the decoder.
    fn unconsumed(&self) -> u64 {
        self.left + (self.end - self.at) as u64
    }

    /// Reads exactly `dst.len()` payload bytes from the file into `dst` and
    /// checksums them. The caller has checked they are within the payload.
    fn read_file(&mut self, dst: &mut [u8]) -> io::Result<()> {
        let mut done = 0;
        while done < dst.len() {
            match self.file.read(&mut dst[done..]) {
                Ok(0) => {
                    let read = self.total - self.left + done as u64;
                    self.stopped = Some(Stopped::Short { read });
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let copy = io::Error::new(e.kind(), e.to_string());
                    self.stopped = Some(Stopped::Io(e));
                    return Err(copy);
                }
            }
        }
        self.hasher.update(dst);
        self.left -= dst.len() as u64;
        Ok(())
    }

    /// Refills the read-ahead buffer (it is empty).
    fn refill(&mut self) -> io::Result<()> {
        let n = usize::try_from(self.left).map_or(BUFFER, |left| left.min(BUFFER));
        let mut buf = std::mem::take(&mut self.buf);
        let r = self.read_file(&mut buf[..n]);
        self.buf = buf;
        r?;
        self.at = 0;
        self.end = n;
        Ok(())
    }

    /// Fills `dst` with the next payload bytes: what the buffer holds, then straight
    /// from the file into `dst`, [`CHUNK`] bytes at a time.
    fn read_direct(&mut self, dst: &mut [u8]) -> io::Result<()> {
        if dst.len() as u64 > self.unconsumed() {
            return Err(past_end());
        }
        let from_buf = dst.len().min(self.end - self.at);
        let (head, mut rest) = dst.split_at_mut(from_buf);
        head.copy_from_slice(&self.buf[self.at..self.at + from_buf]);
        self.at += from_buf;
        while !rest.is_empty() {
            let n = rest.len().min(CHUNK);
            let (chunk, tail) = rest.split_at_mut(n);
            self.read_file(chunk)?;
            rest = tail;
        }
        Ok(())
    }

    /// A block of `len` payload bytes of its own, read straight into it.
    fn block(&mut self, len: usize) -> io::Result<Vec<u8>> {
        if len as u64 > self.unconsumed() {
            return Err(past_end());
        }
        let mut v = vec![0u8; len];
        crate::huge_pages::advise_capacity(&v);
        self.read_direct(&mut v)?;
        Ok(v)
    }

    /// Reads and checksums whatever the decoder left, then checks the checksum.
    fn finish(&mut self, header: &FileHeader) -> Result<(), CheckpointError> {
        self.at = self.end;
        while self.stopped.is_none() && self.left > 0 {
            // The error is recorded in `stopped`.
            if self.refill().is_err() {
                break;
            }
            self.at = self.end;
        }
        match self.stopped.take() {
            Some(Stopped::Short { read }) => Err(CheckpointError::corrupt(
                &self.path,
                format!(
                    "file is {} bytes, header says {}",
                    read + super::storage::HEADER_LEN as u64,
                    header.file_len()
                ),
            )),
            Some(Stopped::Io(e)) => Err(CheckpointError::io("read", &self.path, e)),
            None => {
                let sum = self.hasher.digest();
                if sum == header.checksum {
                    Ok(())
                } else {
                    Err(CheckpointError::corrupt(
                        &self.path,
                        format!(
                            "payload checksum {sum:016x} != stored {:016x}",
                            header.checksum
                        ),
                    ))
                }
            }
        }
    }
}

fn past_end() -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        "a block runs past the end of the payload",
    )
}

impl Read for PayloadReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at == self.end {
            if self.left == 0 {
                return Ok(0);
            }
            self.refill()?;
        }
        let n = out.len().min(self.end - self.at);
        out[..n].copy_from_slice(&self.buf[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }

    #[inline]
    fn read_exact(&mut self, out: &mut [u8]) -> io::Result<()> {
        if self.end - self.at >= out.len() {
            out.copy_from_slice(&self.buf[self.at..self.at + out.len()]);
            self.at += out.len();
            return Ok(());
        }
        if out.len() >= BUFFER {
            return self.read_direct(out);
        }
        let mut done = 0;
        while done < out.len() {
            match self.read(&mut out[done..])? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => done += n,
            }
        }
        Ok(())
    }
}

impl<'de> bincode::BincodeRead<'de> for PayloadReader {
    fn forward_read_str<V: Visitor<'de>>(
        &mut self,
        length: usize,
        visitor: V,
    ) -> bincode::Result<V::Value> {
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.resize(length, 0);
        self.read_exact(&mut scratch)?;
        let r = match std::str::from_utf8(&scratch) {
            Ok(s) => visitor.visit_str(s),
            Err(e) => Err(Box::new(bincode::ErrorKind::InvalidUtf8Encoding(e))),
        };
        self.scratch = scratch;
        r
    }

    fn get_byte_buffer(&mut self, length: usize) -> bincode::Result<Vec<u8>> {
        Ok(self.block(length)?)
    }

    fn forward_read_bytes<V: Visitor<'de>>(
        &mut self,
        length: usize,
        visitor: V,
    ) -> bincode::Result<V::Value> {
        // A `bulk` vector waiting for these bytes: they go straight into its memory.
        if let Some(offer) = bulk::take_offer() {
            let values = offer.fill(length, &mut |dst| self.read_direct(dst))?;
            let _delivered = bulk::Delivered::new(values);
            return visitor.visit_bytes(&[]);
        }
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        scratch.resize(length, 0);
        let r = self
            .read_exact(&mut scratch)
            .map_err(Into::into)
            .and_then(|()| visitor.visit_bytes(&scratch));
        // A large block is not kept for the next string.
        if scratch.capacity() <= BUFFER {
            self.scratch = scratch;
        }
        r
    }
}

/// Reads the payload of `file` (a checkpoint file positioned just after its header
/// `header`, whose size was checked against it), decodes it as a `T` (bincode, as
/// [`bincode::serialize`] wrote it) and verifies its checksum, in one pass.
///
/// A file that ends early or whose checksum differs gives
/// [`CheckpointError::Corrupt`] (whatever the decoding gave), a failed read
/// [`CheckpointError::Io`], a payload that verifies but does not decode as a `T`
/// [`CheckpointError::Serde`]. `path` names the file in messages.
pub fn load<T: DeserializeOwned>(
    file: File,
    header: &FileHeader,
    path: &Path,
) -> Result<T, CheckpointError> {
    let mut reader = PayloadReader::new(file, header, path);
    // `bincode::deserialize`'s options, with every length bounded by the payload's.
    let options = bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .allow_trailing_bytes()
        .with_limit(header.payload_len);
    let decoded = options.deserialize_from_custom::<_, T>(&mut reader);
    reader.finish(header)?;
    decoded.map_err(|source| CheckpointError::Serde {
        path: path.to_path_buf(),
        source,
    })
}

impl<'de> bincode::BincodeRead<'de> for &mut PayloadReader {
    fn forward_read_str<V: Visitor<'de>>(
        &mut self,
        length: usize,
        visitor: V,
    ) -> bincode::Result<V::Value> {
        (**self).forward_read_str(length, visitor)
    }

    fn get_byte_buffer(&mut self, length: usize) -> bincode::Result<Vec<u8>> {
        (**self).get_byte_buffer(length)
    }

    fn forward_read_bytes<V: Visitor<'de>>(
        &mut self,
        length: usize,
        visitor: V,
    ) -> bincode::Result<V::Value> {
        (**self).forward_read_bytes(length, visitor)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use serde::{Deserialize, Serialize};

    use super::super::storage::{FORMAT_VERSION, HEADER_LEN, open_checked, payload_checksum};
    use super::*;

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct State {
        iter: u64,
        #[serde(with = "crate::checkpoint::bulk")]
        rows: Vec<f64>,
        names: Vec<String>,
        #[serde(with = "crate::checkpoint::bulk")]
        owners: Vec<i32>,
        regions: Vec<(String, serde_bytes::ByteBuf)>,
        plain: Vec<f64>,
    }

    fn state(n: usize) -> State {
        State {
            iter: 9,
            rows: (0..n).map(|i| i as f64 * 0.5 - 1.0).collect(),
            // Many small values, crossing the read-ahead buffer's boundaries.
            names: (0..5000).map(|i| format!("name {i}")).collect(),
            owners: (0..n as i32).rev().collect(),
            regions: vec![
                (
                    "grid".into(),
                    serde_bytes::ByteBuf::from(vec![7u8; 3 * n + 1]),
                ),
                ("empty".into(), serde_bytes::ByteBuf::new()),
            ],
            plain: vec![0.25; 100],
        }
    }

    /// Writes a checkpoint file holding `payload`; returns its path.
    fn write_file(dir: &Path, payload: &[u8]) -> PathBuf {
        let h = FileHeader {
            version: FORMAT_VERSION,
            rank: 0,
            ranks: 1,
            epoch: 1,
            calls: 3,
            payload_len: payload.len() as u64,
            checksum: payload_checksum(payload),
            job: "t".into(),
        };
        let mut head = [0u8; HEADER_LEN];
        h.encode(&mut head);
        let p = dir.join("rank-000000.ckpt");
        let mut bytes = head.to_vec();
        bytes.extend_from_slice(payload);
        fs::write(&p, bytes).unwrap();
        p
    }

    fn load_file<T: DeserializeOwned>(p: &Path) -> Result<T, CheckpointError> {
        let (f, h) = open_checked(p)?;
        load(f, &h, p)
    }

    #[test]
    fn a_state_with_blocks_and_small_values_comes_back_equal() {
        let dir = tempfile::tempdir().unwrap();
        // Blocks larger than the read-ahead buffer and than one chunk.
        for n in [0, 3, 100_000, 300_000] {
            let s = state(n);
            let p = write_file(dir.path(), &bincode::serialize(&s).unwrap());
            assert_eq!(load_file::<State>(&p).unwrap(), s, "{n} values");
        }
    }

    #[test]
    fn a_flipped_byte_anywhere_is_corruption_and_nothing_is_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let payload = bincode::serialize(&state(200_000)).unwrap();
        // In the iteration, in a bulk block (read straight into the vector), in the
        // byte region, in the last byte.
        for at in [0, 8 + 8 + 1_000_000, payload.len() - 500, payload.len() - 1] {
            let mut bad = payload.clone();
            bad[at] ^= 0x10;
            let p = write_file(dir.path(), &bad);
            // The header's checksum is the intact payload's.
            let mut file = fs::read(&p).unwrap();
            let mut head = [0u8; HEADER_LEN];
            let (_, h) = open_checked(&p).unwrap();
            FileHeader {
                checksum: payload_checksum(&payload),
                ..h
            }
            .encode(&mut head);
            file[..HEADER_LEN].copy_from_slice(&head);
            fs::write(&p, file).unwrap();
            let e = load_file::<State>(&p).unwrap_err();
            assert!(e.is_corruption(), "byte {at}: {e}");
            assert!(e.to_string().contains("payload checksum"), "{e}");
        }
    }

    #[test]
    fn trailing_bytes_are_read_and_checksummed() {
        let dir = tempfile::tempdir().unwrap();
        let mut payload = bincode::serialize(&7u64).unwrap();
        payload.extend_from_slice(&[1u8; 200_000]);
        let p = write_file(dir.path(), &payload);
        assert_eq!(load_file::<u64>(&p).unwrap(), 7);
    }

    #[test]
    fn a_file_cut_after_its_size_was_checked_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_file(dir.path(), &bincode::serialize(&state(50_000)).unwrap());
        let (f, h) = open_checked(&p).unwrap();
        fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(HEADER_LEN as u64 + 1000)
            .unwrap();
        let e = load(f, &h, &p).map(|_: State| ()).unwrap_err();
        assert!(e.is_corruption(), "{e}");
        assert!(e.to_string().contains("file is 1128 bytes"), "{e}");
    }

    #[test]
    fn a_verified_payload_of_another_type_is_a_decoding_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = write_file(dir.path(), &bincode::serialize(&(1u64, 2u64)).unwrap());
        let e = load_file::<State>(&p).unwrap_err();
        assert!(matches!(e, CheckpointError::Serde { .. }), "{e}");
    }

    #[test]
    fn a_block_length_past_the_payload_is_refused_before_allocating() {
        #[derive(Deserialize, Debug)]
        struct Big {
            #[serde(with = "crate::checkpoint::bulk")]
            _v: Vec<f64>,
        }
        #[derive(Deserialize, Debug)]
        struct Bytes {
            _b: serde_bytes::ByteBuf,
        }
        let dir = tempfile::tempdir().unwrap();
        // A length of 2^60 bytes, then 16 bytes.
        let mut payload = (1u64 << 60).to_le_bytes().to_vec();
        payload.extend_from_slice(&[0u8; 16]);
        let p = write_file(dir.path(), &payload);
        let e = load_file::<Big>(&p).unwrap_err();
        assert!(matches!(e, CheckpointError::Serde { .. }), "{e}");
        let e = load_file::<Bytes>(&p).unwrap_err();
        assert!(matches!(e, CheckpointError::Serde { .. }), "{e}");
    }

    #[test]
    fn a_bulk_vector_decoded_by_another_deserialiser_meanwhile_is_not_disturbed() {
        /// Decodes a bulk vector of its own from a slice inside a restore.
        #[derive(Debug, PartialEq)]
        struct Nested(Vec<f64>);
        impl<'de> Deserialize<'de> for Nested {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                #[derive(Deserialize)]
                struct Inner(#[serde(with = "crate::checkpoint::bulk")] Vec<f64>);
                let bytes = serde_bytes::ByteBuf::deserialize(d)?;
                let inner: Inner =
                    bincode::deserialize(&bytes).map_err(serde::de::Error::custom)?;
                Ok(Self(inner.0))
            }
        }
        #[derive(Deserialize, Debug, PartialEq)]
        struct Outer {
            nested: Nested,
            #[serde(with = "crate::checkpoint::bulk")]
            after: Vec<f64>,
        }
        #[derive(Serialize)]
        struct InnerOut(#[serde(with = "crate::checkpoint::bulk")] Vec<f64>);
        #[derive(Serialize)]
        struct OuterOut {
            nested: serde_bytes::ByteBuf,
            #[serde(with = "crate::checkpoint::bulk")]
            after: Vec<f64>,
        }
        let inner = bincode::serialize(&InnerOut(vec![1.5; 10_000])).unwrap();
        let out = OuterOut {
            nested: serde_bytes::ByteBuf::from(inner),
            after: vec![-2.0; 20_000],
        };
        let dir = tempfile::tempdir().unwrap();
        let p = write_file(dir.path(), &bincode::serialize(&out).unwrap());
        let back: Outer = load_file(&p).unwrap();
        assert_eq!(back.nested, Nested(vec![1.5; 10_000]));
        assert_eq!(back.after, vec![-2.0; 20_000]);
    }
}
