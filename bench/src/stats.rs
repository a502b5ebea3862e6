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

/// A figure's value as a number, so two builds' tables can be compared.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// A duration.
    Time(Duration),
    /// A size in bytes.
    Bytes(u64),
}

impl Number {
    /// As the table writes it.
    pub fn show(self) -> String {
        match self {
            Number::Time(d) => show(d),
            Number::Bytes(n) => bytes(n),
        }
    }

    fn value(self) -> f64 {
        match self {
            Number::Time(d) => d.as_secs_f64(),
            Number::Bytes(n) => n as f64,
        }
    }

    /// The median of `numbers` (all of one kind), `None` when empty.
    fn median(numbers: &[Number]) -> Option<Number> {
        let mut sorted = numbers.to_vec();
        sorted.sort_by(|a, b| a.value().total_cmp(&b.value()));
        sorted.get(sorted.len().saturating_sub(1) / 2).copied()
    }
}

/// One row: figure, value, spread, goal, and the value as a number when
/// it is one.
#[derive(Debug, Clone)]
struct Row {
    figure: String,
    value: String,
    spread: String,
    goal: String,
    number: Option<Number>,
}

/// The harness's table: figure, value (a median or p50), spread (p99 or
/// the best run), and the goal the figure is held to.
#[derive(Default)]
pub struct Table {
    rows: Vec<Row>,
}

impl Table {
    /// Adds one row whose value is text.
    pub fn row(&mut self, figure: &str, value: String, spread: String, goal: &str) {
        self.push(figure, value, spread, goal, None);
    }

    /// Adds one row whose value is a number (compared side by side).
    pub fn measure(&mut self, figure: &str, value: Number, spread: String, goal: &str) {
        self.push(figure, value.show(), spread, goal, Some(value));
    }

    fn push(
        &mut self,
        figure: &str,
        value: String,
        spread: String,
        goal: &str,
        number: Option<Number>,
    ) {
        // Printed as it comes too, so a long run shows progress on stderr.
        eprintln!("  {figure}: {value} {spread}");
        self.rows.push(Row {
            figure: figure.to_owned(),
            value,
            spread,
            goal: goal.to_owned(),
            number,
        });
    }

    /// The table as Markdown.
    pub fn render(&self) -> String {
        let mut out =
            String::from("| figure | median / p50 | p99 / best | goal |\n|---|---|---|---|\n");
        for row in &self.rows {
            out.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                row.figure, row.value, row.spread, row.goal
            ));
        }
        out
    }

    /// Two builds side by side as Markdown: each table of `baseline` and
    /// `this` is one round of the same sections; a number is the median of
    /// its rounds' values, with this build's value over the baseline's.
    /// Text rows show the last round's.
    pub fn side_by_side(baseline: &[Table], this: &[Table]) -> String {
        let mut out = String::from(
            "| figure | baseline | this build | this / baseline | goal |\n|---|---|---|---|---|\n",
        );
        let Some(last) = this.last() else {
            return out;
        };
        for (i, row) in last.rows.iter().enumerate() {
            let of = |tables: &[Table]| -> Vec<Row> {
                tables
                    .iter()
                    .filter_map(|t| t.rows.get(i).filter(|r| r.figure == row.figure).cloned())
                    .collect()
            };
            let (a, b) = (of(baseline), of(this));
            let numbers = |rows: &[Row]| rows.iter().filter_map(|r| r.number).collect::<Vec<_>>();
            let cell = |rows: &[Row]| match Number::median(&numbers(rows)) {
                Some(n) => n.show(),
                None => rows.last().map_or_else(String::new, |r| r.value.clone()),
            };
            let ratio = match (Number::median(&numbers(&a)), Number::median(&numbers(&b))) {
                (Some(x), Some(y)) if x.value() > 0.0 => format!("{:.2}×", y.value() / x.value()),
                _ => String::new(),
            };
            out.push_str(&format!(
                "| {} | {} | {} | {ratio} | {} |\n",
                row.figure,
                cell(&a),
                cell(&b),
                row.goal
            ));
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

    #[test]
    fn side_by_side_takes_each_figures_median_over_rounds_and_the_ratio() {
        let round = |ms: u64, text: &str| {
            let mut t = Table::default();
            t.measure(
                "start",
                Number::Time(Duration::from_millis(ms)),
                String::new(),
                "≤ 5 ms",
            );
            t.row("growth", text.to_owned(), String::new(), "");
            t
        };
        let baseline = [round(4, "a"), round(8, "b"), round(6, "c")];
        let this = [round(3, "x"), round(2, "y"), round(1, "z")];
        let out = Table::side_by_side(&baseline, &this);
        assert!(
            out.contains("| start | 6.00 ms | 2.00 ms | 0.33× | ≤ 5 ms |"),
            "{out}"
        );
        assert!(out.contains("| growth | c | z |  |  |"), "{out}");
    }
}
