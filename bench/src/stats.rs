//! Medians, percentiles and the one table the harness prints.

use std::time::Duration;

/// The value at quantile `p` (0.0..=1.0) of `samples` (sorted here).
pub fn quantile(samples: &mut [Duration], p: f64) -> Duration {
    if samples.is_empty() {
        return Duration::ZERO;
    }
    samples.sort();
    let index = ((samples.len() - 1) as f64 * p).round() as usize;
    samples[index]
}

/// The median of `samples`.
pub fn median(mut samples: Vec<Duration>) -> Duration {
    quantile(&mut samples, 0.5)
}

/// A duration written for the table: µs below a millisecond, else ms.
pub fn show(duration: Duration) -> String {
    let micros = duration.as_secs_f64() * 1e6;
    if micros < 1000.0 {
        format!("{micros:.1} µs")
    } else {
        format!("{:.2} ms", micros / 1000.0)
    }
}

/// Bytes written for the table.
pub fn bytes(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{:.1} MB", n as f64 / (1u64 << 20) as f64)
    } else if n >= 1 << 10 {
        format!("{:.1} KB", n as f64 / 1024.0)
    } else {
        format!("{n} B")
    }
}

/// The harness's table: figure, value (a median or p50), spread (p99 or
/// the best run), and the goal the figure is held to.
#[derive(Default)]
pub struct Table {
    rows: Vec<[String; 4]>,
}

impl Table {
    /// Adds one row.
    pub fn row(&mut self, figure: &str, value: String, spread: String, goal: &str) {
        self.rows
            .push([figure.to_owned(), value, spread, goal.to_owned()]);
        // Printed as it comes too, so a long run shows progress on stderr.
        let [f, v, s, _] = &self.rows[self.rows.len() - 1];
        eprintln!("  {f}: {v} {s}");
    }

    /// The table as Markdown.
    pub fn render(&self) -> String {
        let mut out =
            String::from("| figure | median / p50 | p99 / best | goal |\n|---|---|---|---|\n");
        for [f, v, s, g] in &self.rows {
            out.push_str(&format!("| {f} | {v} | {s} | {g} |\n"));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_pick_the_nearest_rank() {
        let mut samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        assert_eq!(quantile(&mut samples, 0.5), Duration::from_millis(51));
        assert_eq!(quantile(&mut samples, 0.99), Duration::from_millis(99));
        assert_eq!(median(vec![]), Duration::ZERO);
        assert_eq!(show(Duration::from_micros(15)), "15.0 µs");
        assert_eq!(show(Duration::from_micros(2500)), "2.50 ms");
        assert_eq!(bytes(11_900), "11.6 KB");
    }
}
