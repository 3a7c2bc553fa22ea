//! A byte reader that turns fuzz input into choices.
//!
//! Every read succeeds: past the end it yields zeros, so any byte string decodes to some run
//! and libFuzzer's mutations (insert, erase, flip) move between nearby runs. Multi-byte values
//! are little endian.

/// The fuzz input, consumed front to back.
pub struct Input<'a> {
    data: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Input<'a> {
        Input { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    pub fn bool(&mut self) -> bool {
        self.byte() & 1 == 1
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    pub fn u32(&mut self) -> u32 {
        u32::from(self.u16()) | (u32::from(self.u16()) << 16)
    }

    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }

    /// A value in `0..n` from one byte (`n` at most 256).
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!((1..=256).contains(&n));
        self.byte() as usize % n
    }

    /// A value near `base` most of the time (equal, or one off either way), else an edge value
    /// or an arbitrary one: how the ABI target picks ids, counts and window values.
    pub fn near(&mut self, base: u64) -> u64 {
        match self.byte() % 16 {
            0..=7 => base,
            8 | 9 => base.wrapping_add(1),
            10 | 11 => base.wrapping_sub(1),
            12 => 0,
            13 => u64::MAX,
            14 => u64::from(self.byte()),
            _ => self.u64(),
        }
    }

    /// The bytes left, consumed. Used to hand a callback script its own bytes.
    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.data.split_at(n.min(self.data.len()));
        self.data = rest;
        head
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_are_zero() {
        let mut i = Input::new(&[1, 2]);
        assert_eq!(i.u16(), 0x0201);
        assert!(i.is_empty());
        assert_eq!(i.u64(), 0);
        assert_eq!(i.byte(), 0);
    }

    #[test]
    fn take_splits_off_a_prefix() {
        let mut i = Input::new(&[1, 2, 3]);
        assert_eq!(i.take(2), &[1, 2]);
        assert_eq!(i.take(5), &[3]);
        assert!(i.take(1).is_empty());
    }
}
