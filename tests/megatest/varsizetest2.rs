//! varsizetest2: a message of 300 ints and 100 floats, sized when it is made, goes
//! to a chare on any PE (here the last) and comes back the same shape, checked at both
//! ends (the exchange is `varsizetest`'s).

use super::varsizetest::exchange;
use chorus_core::Layer;

/// 300 ints and 100 floats each way, to the last PE, on every PE count.
pub fn varsizetest2(layer: Layer) {
    exchange(layer, 1, |pes| pes - 1, (300, 100, 0), (300, 100, 0));
}
