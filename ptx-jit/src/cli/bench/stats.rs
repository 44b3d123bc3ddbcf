//! Statistics of timing samples, as `bench kernel` reports a series of launches or compiles: min,
//! median, max, and the mean with its 95% confidence interval (Student's t, samples taken as
//! independent).

/// The 97.5% quantiles of Student's t distribution for 1 to 30 degrees of freedom (two-sided 95%);
/// above 30, the normal's 1.96 (within 2.1% of t's).
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
    2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

fn t975(degrees: usize) -> f64 {
    T975.get(degrees.wrapping_sub(1)).copied().unwrap_or(1.96)
}

/// A running mean and variance (Welford's), so a series can test its interval after every sample.
#[derive(Default, Clone, Copy)]
pub struct Running {
    n: usize,
    mean: f64,
    m2: f64,
}

impl Running {
    pub fn push(&mut self, x: f64) {
        self.n += 1;
        let d = x - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (x - self.mean);
    }
    pub fn mean(&self) -> f64 {
        self.mean
    }
    /// Half the width of the mean's 95% confidence interval (infinite below two samples).
    pub fn half_width(&self) -> f64 {
        if self.n < 2 {
            return f64::INFINITY;
        }
        let sd = (self.m2 / (self.n - 1) as f64).sqrt();
        t975(self.n - 1) * sd / (self.n as f64).sqrt()
    }
}

/// What a series of samples comes to.
#[derive(serde::Serialize, Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub mean: f64,
    /// Half the width of the mean's 95% confidence interval (0 for one sample).
    pub ci95: f64,
}

impl Summary {
    /// The summary of `samples`; `None` when there are none.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        let mut r = Running::default();
        samples.iter().for_each(|&x| r.push(x));
        Some(Summary {
            n,
            min: sorted[0],
            median,
            max: sorted[n - 1],
            mean: r.mean(),
            ci95: if n < 2 { 0.0 } else { r.half_width() },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_known_series() {
        // Mean 5, sample variance 32/7, t(7) = 2.365: 2.365 * sqrt(32/7) / sqrt(8) = 1.787772…
        let s = Summary::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!((s.n, s.min, s.median, s.max, s.mean), (8, 2.0, 4.5, 9.0, 5.0));
        assert!((s.ci95 - 1.787_772).abs() < 1e-6, "{}", s.ci95);
        let one = Summary::of(&[3.0]).unwrap();
        assert_eq!((one.median, one.ci95), (3.0, 0.0));
        assert_eq!(Summary::of(&[]), None);
    }

    #[test]
    fn the_interval_narrows_with_samples_and_uses_the_normal_beyond_thirty() {
        let mut r = Running::default();
        r.push(1.0);
        assert!(r.half_width().is_infinite());
        for i in 0..40 {
            r.push(if i % 2 == 0 { 1.0 } else { 3.0 });
        }
        // 41 samples: 21 ones and 20 threes; sd = sqrt(41 * (20/41) * (21/41) * 4 / 40).
        let sd = (4.0 * 20.0 * 21.0 / (41.0 * 40.0f64)).sqrt();
        assert!((r.half_width() - 1.96 * sd / 41f64.sqrt()).abs() < 1e-12);
    }
}
