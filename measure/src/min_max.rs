//! Slowest and fastest thread.

/// The smallest and largest of `rates`, or `None` when there are none (an
/// empty run has no slowest thread, and no number stands in for one).
///
/// ```
/// assert_eq!(lockref_measure::min_max(&[3.0, 1.0, 2.0]), Some((1.0, 3.0)));
/// assert_eq!(lockref_measure::min_max(&[]), None);
/// ```
pub fn min_max(rates: &[f64]) -> Option<(f64, f64)> {
    let (&first, rest) = rates.split_first()?;
    Some(
        rest.iter()
            .fold((first, first), |(lo, hi), &r| (lo.min(r), hi.max(r))),
    )
}
