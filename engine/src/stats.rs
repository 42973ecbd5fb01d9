//! Robust statistics over a window of values: the median and the median
//! absolute deviation, which a spike or two do not move. `rocemend why`
//! ranks signals by them, and the chaos report orders its tracks by them.

/// The median of `v` (NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

/// The median absolute deviation of `v` around `center`.
pub fn mad(v: &[f64], center: f64) -> f64 {
    median(&v.iter().map(|x| (x - center).abs()).collect::<Vec<_>>())
}
