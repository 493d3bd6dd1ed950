//! Fixed-seed mutants of a good file, for the mutation tests of chorus's file readers
//! (traces, tuning profiles, checkpoints): byte flips, cuts at every k-th offset,
//! chunks doubled or removed, and spans replaced (huge numbers, wrong types).

/// xorshift64*: a fixed, seedable generator, so every run makes the same mutants.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is taken as 1).
    pub fn new(seed: u64) -> Self {
        Rng(seed.max(1))
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1) as u64) as usize
    }
}

/// How a mutant was made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// One bit flipped.
    Flip,
    /// Cut at an offset.
    Cut,
    /// A chunk written twice.
    Double,
    /// A chunk left out.
    Remove,
    /// A number made huge.
    Huge,
    /// A value replaced by one of another type.
    WrongType,
}

/// One mutant: how it was made, where, and its bytes.
pub struct Mutant {
    /// How it was made.
    pub kind: Kind,
    /// The offset mutated.
    pub at: usize,
    /// The mutated file.
    pub bytes: Vec<u8>,
}

/// `per_kind` bit flips, doubled chunks and removed chunks (up to `chunk` bytes) at
/// random offsets of `file`, and cuts at every (len / `per_kind`)-th offset.
pub fn structural(file: &[u8], per_kind: usize, chunk: usize, rng: &mut Rng) -> Vec<Mutant> {
    let n = file.len();
    let mut out = Vec::new();
    if n == 0 {
        return out;
    }
    for _ in 0..per_kind {
        let at = rng.below(n);
        let mut bytes = file.to_vec();
        bytes[at] ^= 1 << rng.below(8);
        out.push(Mutant {
            kind: Kind::Flip,
            at,
            bytes,
        });
    }
    for at in (0..n).step_by((n / per_kind.max(1)).max(1)) {
        let bytes = file[..at].to_vec();
        out.push(Mutant {
            kind: Kind::Cut,
            at,
            bytes,
        });
    }
    for _ in 0..per_kind {
        let at = rng.below(n);
        let end = (at + 1 + rng.below(chunk)).min(n);
        let mut doubled = file[..end].to_vec();
        doubled.extend_from_slice(&file[at..]);
        out.push(Mutant {
            kind: Kind::Double,
            at,
            bytes: doubled,
        });
        out.push(Mutant {
            kind: Kind::Remove,
            at,
            bytes: replace(file, (at, end), b""),
        });
    }
    out
}

/// `count` mutants of `file`, each with one of `spans` (picked at random) replaced by
/// one of `values` (likewise).
pub fn replace_spans(
    file: &[u8],
    spans: &[(usize, usize)],
    values: &[&[u8]],
    (kind, count): (Kind, usize),
    rng: &mut Rng,
) -> Vec<Mutant> {
    if spans.is_empty() || values.is_empty() {
        return Vec::new();
    }
    (0..count)
        .map(|_| {
            let span = spans[rng.below(spans.len())];
            let value = values[rng.below(values.len())];
            Mutant {
                kind,
                at: span.0,
                bytes: replace(file, span, value),
            }
        })
        .collect()
}

/// `file` with the bytes `start..end` replaced by `value`.
pub fn replace(file: &[u8], (start, end): (usize, usize), value: &[u8]) -> Vec<u8> {
    let mut b = file[..start].to_vec();
    b.extend_from_slice(value);
    b.extend_from_slice(&file[end..]);
    b
}

/// The byte ranges of the runs of ASCII digits in `text` (its numbers).
pub fn digit_runs(text: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < text.len() {
        let start = i;
        while i < text.len() && text[i].is_ascii_digit() {
            i += 1;
        }
        if i > start {
            out.push((start, i));
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutants_are_fixed_by_the_seed_and_each_differs_from_the_file() {
        let file = b"{\"a\": 12, \"b\": [3, 45]}";
        let make = || {
            let mut rng = Rng::new(9);
            let mut m = structural(file, 10, 4, &mut rng);
            let spans = digit_runs(file);
            assert_eq!(spans, [(6, 8), (16, 17), (19, 21)]);
            m.extend(replace_spans(
                file,
                &spans,
                &[b"1e300"],
                (Kind::Huge, 5),
                &mut rng,
            ));
            m
        };
        let (a, b) = (make(), make());
        // Cuts every 2nd offset of 23 bytes: 12.
        assert_eq!(a.len(), 10 + 12 + 20 + 5);
        for (x, y) in a.iter().zip(&b) {
            assert_eq!((x.kind, x.at, &x.bytes), (y.kind, y.at, &y.bytes));
        }
        assert!(a.iter().all(|m| m.bytes != file[..]));
        assert_eq!(replace(file, (6, 8), b"x"), b"{\"a\": x, \"b\": [3, 45]}");
    }
}
