//! Seeded randomness for the field cases: one generator per purpose, derived
//! from the case's seed, so that drawing one more number for one sensor never
//! shifts what another sensor or the world draws (a case stays the same bytes
//! when an unrelated part of the model changes its draws).

/// splitmix64: mixes a seed and a stream number into an independent seed.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The generator of stream `stream` of case `seed`.
pub(super) fn rng_for(seed: u64, stream: u64) -> fastrand::Rng {
    fastrand::Rng::with_seed(mix(mix(seed) ^ mix(stream.wrapping_add(0x5eed))))
}

/// A stream number for a purpose and up to three indices (node, rail, …).
pub(super) fn stream(purpose: u64, a: usize, b: usize, c: usize) -> u64 {
    (purpose << 48) ^ ((a as u64) << 32) ^ ((b as u64) << 16) ^ c as u64
}

/// Uniform in `[lo, hi)`.
pub(super) fn uniform(rng: &mut fastrand::Rng, lo: f64, hi: f64) -> f64 {
    lo + (hi - lo) * rng.f64()
}

/// Log-uniform in `[lo, hi)`: for quantities that span decades (step times,
/// error rates), where "twice as long" is as likely as "half as long".
pub(super) fn log_uniform(rng: &mut fastrand::Rng, lo: f64, hi: f64) -> f64 {
    (lo.ln() + (hi.ln() - lo.ln()) * rng.f64()).exp()
}

/// A standard normal deviate (Box–Muller; one of the pair is dropped, which
/// costs a logarithm and keeps the generator stateless).
pub(super) fn normal(rng: &mut fastrand::Rng) -> f64 {
    let u = rng.f64().max(1e-12);
    let v = rng.f64();
    (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
}

/// A Poisson count of mean `lambda`: exact by inversion for small means (the
/// rare events a healthy fabric has), normal beyond, where the difference is
/// below a counter's resolution.
pub(super) fn poisson(rng: &mut fastrand::Rng, lambda: f64) -> u64 {
    if lambda.is_nan() || lambda <= 0.0 {
        return 0;
    }
    if lambda > 30.0 {
        return (lambda + lambda.sqrt() * normal(rng)).round().max(0.0) as u64;
    }
    let limit = (-lambda).exp();
    let (mut k, mut p) = (0u64, rng.f64());
    while p > limit {
        k += 1;
        p *= rng.f64();
    }
    k
}

/// One element of a non-empty slice, uniformly; `None` for an empty one.
pub(super) fn pick<T: Copy>(rng: &mut fastrand::Rng, items: &[T]) -> Option<T> {
    if items.is_empty() {
        None
    } else {
        Some(items[rng.usize(..items.len())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_means_are_right_on_both_sides_of_the_switch() {
        let mut rng = rng_for(7, 1);
        for lambda in [0.3, 4.0, 50.0] {
            let n = 4000;
            let sum: u64 = (0..n).map(|_| poisson(&mut rng, lambda)).sum();
            let mean = sum as f64 / n as f64;
            assert!((mean - lambda).abs() < 0.1 * lambda + 0.05, "lambda {lambda}: mean {mean}");
        }
    }

    #[test]
    fn streams_are_independent_of_each_other() {
        let a: Vec<u64> = (0..4).map(|_| rng_for(1, 2).u64(..)).collect();
        let b: Vec<u64> = (0..4).map(|_| rng_for(1, 3).u64(..)).collect();
        assert_ne!(a, b);
        assert_eq!(rng_for(1, 2).u64(..), rng_for(1, 2).u64(..));
    }
}
