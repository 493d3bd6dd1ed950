//! varraystest: a message of three variable-length arrays, one of them empty, goes
//! to a chare on PE 1 as its creation message (100 ints, 300 floats, no bytes) and
//! comes back reshaped (300 ints, 100 floats, no bytes), checked at both ends (the
//! exchange is `varsizetest`'s).

use super::varsizetest::exchange;
use chorus_core::Layer;

/// An empty third array survives both ways (2 PEs at least, as the original).
pub fn varraystest(layer: Layer) {
    exchange(layer, 2, |_| 1, (100, 300, 0), (300, 100, 0));
    exchange(layer, 2, |_| 1, (0, 0, 64), (1, 0, 0));
}
