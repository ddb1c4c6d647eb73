//! The state message a leaving rank sends to its replacement: its counters, then its
//! serialised state, in three parts, so that the largest memory region of a C or
//! Fortran program goes to the replacement straight from the program's memory instead
//! of being copied into a buffer first (256 MB: about 100 ms less with every rank
//! held). The replacement receives the parts one after the other into a
//! [`StateBuffer`](super::state_buffer::StateBuffer), where they make the same bytes
//! as one message would have.
//!
//! ```
//! use rankmig::migrate::state_message::StateMessage;
//!
//! let state = (1u32, 2u32);
//! // SAFETY: no region is given.
//! let message = unsafe { StateMessage::serialise(Vec::new(), &7u8, &state, None) }.unwrap();
//! assert_eq!(message.len(), 9);
//! assert_eq!(message.parts()[0], [7, 1, 0, 0, 0, 2, 0, 0, 0]);
//! ```

use std::io::Write;

use serde::Serialize;

use super::state_buffer::{LargestRegion, SMALLEST_MOVED, page_size};

/// A leaving rank's state message, ready to send.
#[derive(Debug)]
pub struct StateMessage<'a> {
    /// The message without the bytes left out: those before the gap, then those after.
    around: Vec<u8>,
    /// Where the gap is in the whole message.
    gap_at: usize,
    /// The bytes left out: the program's own memory of its largest region (empty when
    /// nothing was left out).
    left_out: &'a [u8],
    /// Where within a page the replacement is to receive the message.
    in_page: usize,
}

impl<'a> StateMessage<'a> {
    /// Serialises `counters` then `state` (bincode) into `buffer`, emptied first. With
    /// `largest` (the state's largest region, [`LargestRegion`]), its bytes are left out
    /// of the buffer when the serialiser writes them in one piece straight from the
    /// region's memory (a C program's regions do), and the message is to start where the
    /// region's bytes lie at the offset within a page the region has.
    ///
    /// # Safety
    /// `largest`, when given, describes memory valid for reads and left unchanged for
    /// `'a` (the C interface's promise for a registered region).
    pub unsafe fn serialise<C: Serialize, T: Serialize>(
        mut buffer: Vec<u8>,
        counters: &C,
        state: &'a T,
        largest: Option<LargestRegion>,
    ) -> Result<Self, bincode::Error> {
        buffer.clear();
        bincode::serialize_into(&mut buffer, counters)?;
        let counters_len = buffer.len();
        let gap = largest
            .filter(|r| r.len >= SMALLEST_MOVED)
            .map(|r| (counters_len + r.offset, r));
        let mut writer = LeavingOut {
            out: &mut buffer,
            written: counters_len,
            gap,
            left_out: false,
        };
        bincode::serialize_into(&mut writer, state)?;
        let left_out = writer.left_out;
        let in_page = largest.map_or(0, |r| r.message_in_page(counters_len, page_size()));
        let (gap_at, left_out) = match gap {
            Some((at, region)) if left_out => {
                // SAFETY: by the caller (see above); the serialiser was just given these
                // very bytes at this address.
                let bytes =
                    unsafe { std::slice::from_raw_parts(region.address as *const u8, region.len) };
                (at, bytes)
            }
            _ => (buffer.len(), &[][..]),
        };
        Ok(Self {
            around: buffer,
            gap_at,
            left_out,
            in_page,
        })
    }

    /// The three parts, in order: before the gap, the bytes left out, after the gap.
    pub fn parts(&self) -> [&[u8]; 3] {
        let (before, after) = self.around.split_at(self.gap_at.min(self.around.len()));
        [before, self.left_out, after]
    }

    /// The message's length, all parts together.
    pub fn len(&self) -> usize {
        self.around.len() + self.left_out.len()
    }

    /// True when the message is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the replacement is told first: where within a page the message starts,
    /// then the length of each part.
    pub fn layout(&self) -> [u64; 4] {
        let [before, left_out, after] = self.parts();
        [
            self.in_page as u64,
            before.len() as u64,
            left_out.len() as u64,
            after.len() as u64,
        ]
    }
}

/// A writer that appends to `out`, except the one write that is exactly the gap's
/// bytes (at the gap's position in the message, from the region's address).
struct LeavingOut<'b> {
    out: &'b mut Vec<u8>,
    /// Bytes of the message written so far, those left out included.
    written: usize,
    /// Where the gap is in the message, and the region whose bytes would fill it.
    gap: Option<(usize, LargestRegion)>,
    /// The gap's bytes were left out.
    left_out: bool,
}

impl Write for LeavingOut<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let is_gap = self.gap.is_some_and(|(at, region)| {
            !self.left_out
                && self.written == at
                && bytes.as_ptr() as usize == region.address
                && bytes.len() == region.len
        });
        if is_gap {
            self.left_out = true;
        } else {
            self.out.extend_from_slice(bytes);
        }
        self.written += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state like a C program's regions: a name, then bytes read from memory.
    #[derive(Serialize)]
    struct Regions<'r>(Vec<(&'r str, &'r serde_bytes::Bytes)>);

    #[test]
    fn the_largest_region_is_left_out_and_the_parts_make_the_whole_message() {
        let small = [1u8; 10];
        let big: Vec<u8> = (0..(2 << 20)).map(|i| (i % 253) as u8).collect();
        let state = Regions(vec![
            ("small", serde_bytes::Bytes::new(&small)),
            ("big", serde_bytes::Bytes::new(&big)),
            ("after", serde_bytes::Bytes::new(&small[..3])),
        ]);
        let counters = Some(42u64);
        let whole = bincode::serialize(&(counters, &state)).unwrap();
        // The bytes of "big" in the serialised state: after the sequence's length,
        // "small" (name and bytes with their lengths), "big"'s name and length.
        let offset = 8 + (8 + 5 + 8 + 10) + (8 + 3 + 8);
        let largest = LargestRegion {
            offset,
            in_page: big.as_ptr() as usize % page_size(),
            address: big.as_ptr() as usize,
            len: big.len(),
        };
        // SAFETY: `big` outlives the message and is not changed.
        let message =
            unsafe { StateMessage::serialise(Vec::new(), &counters, &state, Some(largest)) }
                .unwrap();
        let [before, left_out, after] = message.parts();
        assert_eq!(
            left_out.as_ptr(),
            big.as_ptr(),
            "sent from the region itself"
        );
        assert_eq!(message.len(), whole.len());
        assert_eq!([before, left_out, after].concat(), whole);
        let counters_len = 9;
        let start = message.layout()[0] as usize;
        assert_eq!(
            (start + counters_len + offset) % page_size(),
            big.as_ptr() as usize % page_size(),
            "received at a start that puts the region's bytes at its offset in a page"
        );
    }

    #[test]
    fn without_a_region_or_at_another_address_nothing_is_left_out() {
        let big = vec![5u8; 2 << 20];
        let state = Regions(vec![("big", serde_bytes::Bytes::new(&big))]);
        let whole = bincode::serialize(&(0u8, &state)).unwrap();
        let elsewhere = LargestRegion {
            offset: 8 + 8 + 3 + 8,
            in_page: 0,
            address: big.as_ptr() as usize + 1,
            len: big.len(),
        };
        for largest in [None, Some(elsewhere)] {
            // SAFETY: `big` outlives the message and is not changed.
            let message =
                unsafe { StateMessage::serialise(Vec::new(), &0u8, &state, largest) }.unwrap();
            assert!(message.parts()[1].is_empty());
            assert_eq!(message.parts()[0], &whole[..]);
        }
    }
}
