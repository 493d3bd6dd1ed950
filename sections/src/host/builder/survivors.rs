//! The world without its failed PEs, seen as a section: a creation from the world
//! after a failure runs over it, ranked by PE.

use super::*;

/// `me`'s view of the section of every PE of `0..npes` but `dead` (sorted), ranked
/// in PE order with a k-ary tree over the ranks; None when no PE is dead.
pub(super) fn view(me: Pe, npes: u32, k: u32, dead: &[Pe]) -> Option<Section> {
    if dead.is_empty() {
        return None;
    }
    let live: Vec<Pe> = (0..npes)
        .filter(|p| dead.binary_search(p).is_err())
        .collect();
    let rank = live.binary_search(&me).ok()? as u32;
    // Only routing reads the view, and routing reads no id.
    let id = SectionId::from_token(0, live.len() as u32);
    Some(Section::over_roster(id, rank, k, &live))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_skips_the_dead_and_ranks_by_pe() {
        assert!(view(3, 8, 2, &[]).is_none());
        let s = view(3, 8, 2, &[1, 2]).unwrap();
        assert_eq!((s.rank, s.size), (1, 6));
        assert_eq!(s.parent, Some(0));
        assert_eq!(s.children, vec![5, 6]);
        assert!(view(2, 8, 2, &[1, 2]).is_none());
    }
}
