//! The state a C or Fortran program registers: named memory regions, saved and handed
//! over as they are.

use std::collections::HashMap;
use std::ops::Range;

use serde::ser::SerializeSeq;
use serde::{Deserialize, Serialize, Serializer};

use crate::migrate::state_buffer::{LargestRegion, StateBuffer, page_size, populate_for_write};

/// One region the program registered: `bytes` bytes at `data`, saved under `name`.
#[derive(Debug)]
pub struct Region {
    /// The name given to `rankmig_register`.
    pub name: String,
    /// The program's memory.
    pub data: *mut u8,
    /// Its length.
    pub bytes: usize,
}

/// The registered regions, in registration order. Serialises as a sequence of
/// `(name, bytes)` read straight from the program's memory.
#[derive(Debug, Default)]
pub struct Regions(Vec<Region>);

impl Regions {
    /// Adds a region, or replaces the one registered under the same name (a program
    /// registers again when it reallocates or resizes).
    pub fn register(&mut self, region: Region) {
        match self.0.iter_mut().find(|r| r.name == region.name) {
            Some(old) => *old = region,
            None => self.0.push(region),
        }
    }

    /// Where the largest region lies: its bytes' offset in the serialised form
    /// (bincode's: a length before the sequence, and before each name and each region's
    /// bytes) and the offset of its memory within a page. `None` without regions.
    pub fn largest(&self) -> Option<LargestRegion> {
        let page = page_size();
        let mut offset = LENGTH;
        let mut largest: Option<(usize, LargestRegion)> = None;
        for region in &self.0 {
            let bytes_at = offset + LENGTH + region.name.len() + LENGTH;
            if largest.is_none_or(|(size, _)| region.bytes > size) {
                let place = LargestRegion {
                    offset: bytes_at,
                    in_page: region.data as usize % page,
                    address: region.data as usize,
                    len: region.bytes,
                };
                largest = Some((region.bytes, place));
            }
            offset = bytes_at + region.bytes;
        }
        largest.map(|(_, place)| place)
    }
}

/// Bytes of a length in the serialised form (bincode's fixed-width `u64`).
const LENGTH: usize = 8;

impl Serialize for Regions {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for region in &self.0 {
            // SAFETY: `rankmig_register`'s contract: `data` stays valid for `bytes`
            // bytes while registered.
            let bytes = unsafe { region_bytes(region) };
            seq.serialize_element(&(&region.name, serde_bytes::Bytes::new(bytes)))?;
        }
        seq.end()
    }
}

/// The bytes of `region`.
///
/// # Safety
/// `region.data` is valid for reads of `region.bytes` bytes (or `bytes` is 0).
unsafe fn region_bytes(region: &Region) -> &[u8] {
    if region.bytes == 0 || region.data.is_null() {
        return &[];
    }
    // SAFETY: by the caller.
    unsafe { std::slice::from_raw_parts(region.data, region.bytes) }
}

/// Regions read back from a checkpoint or received from the rank a process replaces,
/// waiting for the program to register where they go.
#[derive(Debug, Default, Deserialize)]
#[serde(from = "Vec<(String, serde_bytes::ByteBuf)>")]
pub struct SavedRegions {
    /// Where each region's bytes are.
    regions: HashMap<String, Saved>,
    /// The state message the [`Saved::InMessage`] ranges point into.
    message: StateBuffer,
}

/// Where the saved bytes of one region are.
#[derive(Debug)]
enum Saved {
    /// A copy of their own (read from a checkpoint).
    Own(Vec<u8>),
    /// A range of the state message they arrived in (not copied out of it).
    InMessage(Range<usize>),
}

impl From<Vec<(String, serde_bytes::ByteBuf)>> for SavedRegions {
    fn from(list: Vec<(String, serde_bytes::ByteBuf)>) -> Self {
        Self {
            regions: list
                .into_iter()
                .map(|(name, bytes)| (name, Saved::Own(bytes.into_vec())))
                .collect(),
            message: StateBuffer::default(),
        }
    }
}

impl SavedRegions {
    /// The regions of a state message whose serialised [`Regions`] start at `offset`,
    /// left where they are: each region goes once from the message into the
    /// program's memory (its pages moved, or copied), when it is registered.
    pub fn in_message(message: StateBuffer, offset: usize) -> Result<Self, bincode::Error> {
        let body = message.as_slice().get(offset..).unwrap_or_default();
        let list: Vec<(String, &[u8])> = bincode::deserialize(body)?;
        let start = message.as_slice().as_ptr() as usize;
        let regions = list
            .into_iter()
            .map(|(name, bytes)| {
                let from = bytes.as_ptr() as usize - start;
                (name, Saved::InMessage(from..from + bytes.len()))
            })
            .collect();
        Ok(Self { regions, message })
    }

    fn bytes_of<'a>(&'a self, saved: &'a Saved) -> &'a [u8] {
        match saved {
            Saved::Own(bytes) => bytes,
            Saved::InMessage(range) => self
                .message
                .as_slice()
                .get(range.clone())
                .unwrap_or_default(),
        }
    }
}

/// A saved region whose size differs from the one registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("region '{name}': {registered} bytes registered, {saved} bytes saved")]
pub struct SizeMismatch {
    /// The region.
    pub name: String,
    /// Bytes registered now.
    pub registered: usize,
    /// Bytes in the saved state.
    pub saved: usize,
}

impl SavedRegions {
    /// True when nothing was saved (a fresh start).
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.regions.is_empty()
    }

    /// Puts the saved bytes of `region` into it, once: `Ok(true)` when done,
    /// `Ok(false)` when nothing of that name is waiting. A size mismatch writes nothing
    /// and keeps the saved bytes. Bytes of a state message have their whole pages moved
    /// into the region where they can ([`StateBuffer::move_into`]); others are copied.
    ///
    /// # Safety
    /// `region.data` is valid for writes of `region.bytes` bytes.
    pub unsafe fn copy_into(&mut self, region: &Region) -> Result<bool, SizeMismatch> {
        let Some(where_) = self.regions.get(&region.name) else {
            return Ok(false);
        };
        let saved = self.bytes_of(where_);
        if saved.len() != region.bytes {
            return Err(SizeMismatch {
                name: region.name.clone(),
                registered: region.bytes,
                saved: saved.len(),
            });
        }
        match where_ {
            _ if saved.is_empty() => {}
            Saved::InMessage(range) => {
                let range = range.clone();
                // SAFETY: by the caller, the region is valid for writes of its length,
                // equal to the range's; it is the program's memory, not the message's.
                let moved = unsafe { self.message.move_into(range, region.data) };
                let how = if moved { "its pages moved" } else { "copied" };
                crate::migrate::timeline::step(&format!(
                    "new: region '{}' in place, {how}",
                    region.name
                ));
            }
            Saved::Own(_) => {
                // SAFETY: by the caller, the region is valid for writes of its length.
                unsafe { populate_for_write(region.data, saved.len()) };
                // SAFETY: by the caller; the lengths are equal.
                unsafe { std::ptr::copy_nonoverlapping(saved.as_ptr(), region.data, saved.len()) };
            }
        }
        self.regions.remove(&region.name);
        if self.regions.values().all(|s| matches!(s, Saved::Own(_))) {
            // Every region of the message is in place: its memory goes back.
            self.message = StateBuffer::default();
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_regions_round_trip_through_the_saved_form() {
        let mut grid = vec![1.5f64, -2.0, 3.25];
        let mut iter = 42u64;
        let mut regions = Regions::default();
        regions.register(Region {
            name: "grid".into(),
            data: grid.as_mut_ptr().cast(),
            bytes: 24,
        });
        regions.register(Region {
            name: "iter".into(),
            data: (&raw mut iter).cast(),
            bytes: 8,
        });
        let bytes = bincode::serialize(&regions).unwrap();
        let mut saved: SavedRegions = bincode::deserialize(&bytes).unwrap();

        let mut grid2 = vec![0.0f64; 3];
        let mut iter2 = 0u64;
        let short = Region {
            name: "grid".into(),
            data: grid2.as_mut_ptr().cast(),
            bytes: 16,
        };
        // SAFETY: 16 bytes of grid2.
        let err = unsafe { saved.copy_into(&short) }.unwrap_err();
        assert_eq!((err.registered, err.saved), (16, 24));
        let full = Region { bytes: 24, ..short };
        // SAFETY: 24 bytes of grid2, 8 of iter2.
        unsafe {
            assert!(saved.copy_into(&full).unwrap());
            assert!(!saved.copy_into(&full).unwrap(), "copied once");
            let it = Region {
                name: "iter".into(),
                data: (&raw mut iter2).cast(),
                bytes: 8,
            };
            assert!(saved.copy_into(&it).unwrap());
        }
        assert_eq!(grid2, grid);
        assert_eq!(iter2, 42);
        assert!(saved.is_empty());
    }

    #[test]
    fn the_largest_region_is_found_where_bincode_puts_its_bytes() {
        let mut small = [3u8; 40];
        let mut big = vec![5u8; 5000];
        big[0] = 9;
        let mut regions = Regions::default();
        assert_eq!(regions.largest(), None);
        for (name, data, bytes) in [
            ("a", small.as_mut_ptr(), 40),
            ("bigger", big.as_mut_ptr(), 5000),
            ("empty", std::ptr::null_mut(), 0),
        ] {
            regions.register(Region {
                name: name.into(),
                data,
                bytes,
            });
        }
        let place = regions.largest().unwrap();
        let serialised = bincode::serialize(&regions).unwrap();
        assert_eq!(serialised[place.offset..place.offset + 5000], big[..]);
        assert_eq!(place.in_page, big.as_ptr() as usize % page_size());
        assert_eq!((place.address, place.len), (big.as_ptr() as usize, 5000));
    }

    #[test]
    fn a_large_region_in_fresh_memory_not_page_aligned_gets_every_byte() {
        // 3 MiB + 5 bytes, starting 3 bytes into fresh memory (populated first, the
        // partial pages at both ends not): every byte arrives.
        let len = (3 << 20) + 5;
        let source: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mut regions = Regions::default();
        let mut kept = source.clone();
        regions.register(Region {
            name: "big".into(),
            data: kept.as_mut_ptr(),
            bytes: len,
        });
        let mut saved: SavedRegions =
            bincode::deserialize(&bincode::serialize(&regions).unwrap()).unwrap();
        let mut fresh: Vec<u8> = Vec::with_capacity(len + 3);
        // SAFETY: 3 + len bytes of fresh's capacity.
        unsafe {
            let region = Region {
                name: "big".into(),
                data: fresh.as_mut_ptr().add(3),
                bytes: len,
            };
            assert!(saved.copy_into(&region).unwrap());
            std::ptr::write_bytes(fresh.as_mut_ptr(), 0, 3);
            fresh.set_len(len + 3);
        }
        assert!(fresh[3..] == source[..], "every byte copied");
    }

    #[test]
    fn regions_in_a_state_message_are_copied_once_into_the_registered_memory() {
        let mut grid = [1.5f64, 2.5];
        let mut regions = Regions::default();
        regions.register(Region {
            name: "grid".into(),
            data: grid.as_mut_ptr().cast(),
            bytes: 16,
        });
        // Counters go before the regions in a state message.
        let mut message = vec![7u8; 3];
        bincode::serialize_into(&mut message, &regions).unwrap();
        let mut saved = SavedRegions::in_message(StateBuffer::copied_from(&message), 3).unwrap();
        let mut back = [0f64; 2];
        let target = Region {
            name: "grid".into(),
            data: back.as_mut_ptr().cast(),
            bytes: 16,
        };
        let wrong = Region {
            name: "grid".into(),
            data: back.as_mut_ptr().cast(),
            bytes: 8,
        };
        // SAFETY: `back` holds 16 writable bytes; the mismatch writes nothing.
        assert!(unsafe { saved.copy_into(&wrong) }.is_err());
        // SAFETY: `back` holds 16 writable bytes.
        assert_eq!(unsafe { saved.copy_into(&target) }, Ok(true));
        assert_eq!(back, grid);
        assert!(saved.is_empty());
        assert!(
            saved.message.as_slice().is_empty(),
            "the message is freed once every region is in place"
        );
        // SAFETY: as above; nothing is left to copy.
        assert_eq!(unsafe { saved.copy_into(&target) }, Ok(false));
    }
}
