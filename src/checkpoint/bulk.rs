//! A large vector of plain numbers as one block of bytes, for serde.
//!
//! Serde writes a `Vec<f64>` number by number: bincode calls the serialiser once per
//! value, and reads it back the same way into a vector that grows. For a rank's grid of
//! 8 MB that is a million calls each way, paid in every checkpoint and, when the rank
//! moves, while the job is held. With `#[serde(with = "rankmig::checkpoint::bulk")]`
//! on the field, the vector's memory is written as one block of bytes (one copy) and
//! read back into a vector of the right size (one copy).
//!
//! The element type is any [`bytemuck::Pod`] type: `f64`, `f32`, the integer types,
//! arrays of them, or a `#[repr(C)]` struct the program derives `Pod` for. The bytes
//! are those of the values in memory, so in the machine's byte order (little-endian on
//! x86-64 and AArch64): a state written on a machine of one byte order is not read on
//! one of the other. The format differs from serde's own for a vector (a byte count
//! and the bytes, not a value count and the values): a checkpoint written before the
//! attribute was added is not read with it.
//!
//! At a restore ([`crate::checkpoint::CheckpointContext::restore`]) the block is read
//! from the checkpoint file straight into the vector's memory, checksummed as it
//! arrives ([`crate::checkpoint::payload`]): no copy of the file is made, so the
//! restore runs at about the speed of a plain `read` of the file.
//!
//! ```
//! #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
//! struct State {
//!     iter: u64,
//!     #[serde(with = "rankmig::checkpoint::bulk")]
//!     rows: Vec<f64>,
//! }
//!
//! let state = State { iter: 7, rows: vec![0.5; 1000] };
//! let bytes = bincode::serialize(&state).unwrap();
//! // The iteration, the byte count, then the 8 000 bytes of the values.
//! assert_eq!(bytes.len(), 8 + 8 + 8000);
//! assert_eq!(bincode::deserialize::<State>(&bytes).unwrap(), state);
//! ```

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::fmt;
use std::io;
use std::marker::PhantomData;

use bytemuck::Pod;
use serde::de::{self, Deserializer, Visitor};
use serde::ser::Serializer;

/// Writes `values` as one block of bytes (their memory). For `#[serde(with)]`.
///
/// # Errors
/// Those of the serialiser.
pub fn serialize<S: Serializer, T: Pod>(values: &[T], serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_bytes(bytemuck::cast_slice(values))
}

/// Reads a vector written by [`serialize`]: one block of bytes, copied once into a
/// vector of `T` of the right length. For `#[serde(with)]`.
///
/// # Errors
/// Those of the deserialiser, and a block whose length is not a whole number of `T`.
pub fn deserialize<'de, D: Deserializer<'de>, T: Pod>(deserializer: D) -> Result<Vec<T>, D::Error> {
    // A checkpoint's payload reader that is asked for these bytes fills the vector
    // itself ([`take_offer`]); any other deserialiser leaves the offer alone.
    let _offered = Offered::new(Offer {
        fill: fill_direct::<T>,
    });
    deserializer.deserialize_bytes(BlockVisitor(PhantomData))
}

/// Reads `len` bytes into a new vector of `T` through `read`, which fills the
/// vector's memory. Boxed for [`Delivered`].
type FillFn =
    fn(usize, &mut dyn FnMut(&mut [u8]) -> io::Result<()>) -> bincode::Result<Box<dyn Any>>;

/// A [`deserialize`] in progress on this thread, waiting for its block of bytes: a
/// reader that can put the bytes straight into the vector's memory takes the offer
/// ([`take_offer`]), fills the vector and hands it over ([`Delivered`]) before calling
/// the visitor.
#[derive(Clone, Copy)]
pub(crate) struct Offer {
    fill: FillFn,
}

impl Offer {
    /// A new vector of `len` bytes of values, its memory filled by `read`.
    ///
    /// # Errors
    /// A `len` that is not a whole number of values, and `read`'s errors.
    pub(crate) fn fill(
        self,
        len: usize,
        read: &mut dyn FnMut(&mut [u8]) -> io::Result<()>,
    ) -> bincode::Result<Box<dyn Any>> {
        (self.fill)(len, read)
    }
}

thread_local! {
    static OFFER: Cell<Option<Offer>> = const { Cell::new(None) };
    static DELIVERED: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

/// Takes the offer of the [`deserialize`] running on this thread, if any. Only the
/// reader serving that `deserialize`'s `deserialize_bytes` may call it, just before
/// calling its visitor.
pub(crate) fn take_offer() -> Option<Offer> {
    OFFER.with(Cell::take)
}

/// The offer of a [`deserialize`], withdrawn when it returns.
struct Offered {
    before: Option<Offer>,
}

impl Offered {
    fn new(offer: Offer) -> Self {
        Self {
            before: OFFER.with(|o| o.replace(Some(offer))),
        }
    }
}

impl Drop for Offered {
    fn drop(&mut self) {
        OFFER.with(|o| o.set(self.before.take()));
    }
}

/// A vector filled for the visitor about to be called; taken by it, or dropped when
/// the guard goes.
pub(crate) struct Delivered;

impl Delivered {
    /// Holds `values` (made by [`Offer::fill`]) for the visitor.
    pub(crate) fn new(values: Box<dyn Any>) -> Self {
        DELIVERED.with(|d| *d.borrow_mut() = Some(values));
        Self
    }
}

impl Drop for Delivered {
    fn drop(&mut self) {
        DELIVERED.with(|d| d.borrow_mut().take());
    }
}

/// The [`FillFn`] of a vector of `T`: fresh zeroed memory advised huge pages, filled
/// by `read`.
fn fill_direct<T: Pod>(
    len: usize,
    read: &mut dyn FnMut(&mut [u8]) -> io::Result<()>,
) -> bincode::Result<Box<dyn Any>> {
    let mut values: Vec<T> = empty_for::<T, bincode::Error>(len)?;
    read(bytemuck::cast_slice_mut::<T, u8>(&mut values))?;
    Ok(Box::new(values))
}

/// Takes the block of bytes however the deserialiser hands it over (borrowed from its
/// input, or in a buffer of its own).
struct BlockVisitor<T>(PhantomData<T>);

impl<T: Pod> Visitor<'_> for BlockVisitor<T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a block of bytes holding whole values of {} bytes",
            std::mem::size_of::<T>()
        )
    }

    fn visit_bytes<E: de::Error>(self, bytes: &[u8]) -> Result<Vec<T>, E> {
        if let Some(values) = DELIVERED.with(|d| d.borrow_mut().take()) {
            return values
                .downcast::<Vec<T>>()
                .map(|v| *v)
                .map_err(|_| E::custom("a block delivered for values of another type"));
        }
        values_from(bytes)
    }

    fn visit_byte_buf<E: de::Error>(self, bytes: Vec<u8>) -> Result<Vec<T>, E> {
        values_from(&bytes)
    }
}

/// The values whose memory `bytes` is: an [`empty_for`] vector, then one copy.
fn values_from<T: Pod, E: de::Error>(bytes: &[u8]) -> Result<Vec<T>, E> {
    let mut values: Vec<T> = empty_for(bytes.len())?;
    bytemuck::cast_slice_mut::<T, u8>(&mut values).copy_from_slice(bytes);
    Ok(values)
}

/// A vector of zeroed values (fresh pages from the allocator, not written) holding
/// `len` bytes, advised huge pages (a large vector is then faulted in 2 MiB at a time
/// when it is filled); an error when `len` is not a whole number of values.
fn empty_for<T: Pod, E: de::Error>(len: usize) -> Result<Vec<T>, E> {
    let size = std::mem::size_of::<T>();
    if size == 0 {
        return if len == 0 {
            Ok(Vec::new())
        } else {
            Err(E::invalid_length(len, &"no bytes for values of size 0"))
        };
    }
    if len % size != 0 {
        return Err(E::invalid_length(len, &BlockVisitor::<T>(PhantomData)));
    }
    let values: Vec<T> = bytemuck::zeroed_vec(len / size);
    crate::huge_pages::advise_capacity(&values);
    Ok(values)
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, PartialEq, Debug)]
    struct Grid {
        iter: u64,
        #[serde(with = "super")]
        rows: Vec<f64>,
        #[serde(with = "super")]
        owners: Vec<i32>,
        tail: String,
    }

    fn grid(n: usize) -> Grid {
        Grid {
            iter: 42,
            rows: (0..n).map(|i| i as f64 * 0.25 - 3.0).collect(),
            owners: (0..n as i32).map(|i| -i).collect(),
            tail: "end".into(),
        }
    }

    #[test]
    fn a_state_comes_back_equal_from_a_slice_and_from_a_reader() {
        let state = grid(10_000);
        let bytes = bincode::serialize(&state).unwrap();
        assert_eq!(bincode::deserialize::<Grid>(&bytes).unwrap(), state);
        // A reader hands the block over in a buffer of its own, not borrowed.
        let from_reader: Grid = bincode::deserialize_from(std::io::Cursor::new(&bytes)).unwrap();
        assert_eq!(from_reader, state);
    }

    #[test]
    fn the_values_are_written_as_their_memory() {
        let state = grid(3);
        let bytes = bincode::serialize(&state).unwrap();
        // iter, then the byte count of rows and their 24 bytes.
        assert_eq!(&bytes[8..16], &24u64.to_le_bytes());
        let first: [u8; 8] = bytes[16..24].try_into().unwrap();
        assert_eq!(f64::from_ne_bytes(first), -3.0);
        assert_eq!(bytes.len(), 8 + (8 + 24) + (8 + 12) + (8 + 3));
    }

    #[test]
    fn a_block_that_is_not_whole_values_is_an_error_that_says_so() {
        // A byte count of 7 for f64 values.
        let mut bytes = 1u64.to_le_bytes().to_vec();
        bytes.extend_from_slice(&7u64.to_le_bytes());
        bytes.extend_from_slice(&[0u8; 7]);
        #[derive(Deserialize)]
        struct Wrapped {
            _iter: u64,
            #[serde(with = "super")]
            _values: Vec<f64>,
        }
        let Err(err) = bincode::deserialize::<Wrapped>(&bytes) else {
            panic!("7 bytes read as f64 values");
        };
        let err = err.to_string();
        assert!(err.contains("invalid length 7"), "{err}");
        assert!(err.contains("values of 8 bytes"), "{err}");
    }

    #[test]
    fn an_empty_vector_round_trips() {
        let state = grid(0);
        let bytes = bincode::serialize(&state).unwrap();
        assert_eq!(bincode::deserialize::<Grid>(&bytes).unwrap(), state);
    }
}
