//! Percentiles, and tables printed with the CLI's own.

use std::time::Duration;

/// p50, p99 and max of `delays` (nearest rank); None without any.
pub fn percentiles(delays: &[Duration]) -> Option<[Duration; 3]> {
    let mut sorted = delays.to_vec();
    sorted.sort();
    let at = |p: usize| sorted.get((sorted.len() * p).div_ceil(100).saturating_sub(1));
    Some([*at(50)?, *at(99)?, *at(100)?])
}

/// `n`, then p50, p99 and max in milliseconds (`-` without any).
pub fn delay_cells(delays: &[Duration]) -> Vec<String> {
    let mut cells = vec![delays.len().to_string()];
    match percentiles(delays) {
        Some(ps) => cells.extend(ps.iter().map(|d| ms(*d))),
        None => cells.extend(["-".to_owned(), "-".to_owned(), "-".to_owned()]),
    }
    cells
}

pub fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1e3)
}

/// Prints `headers` and `rows` as the CLI prints its tables.
pub fn print(headers: &[&str], rows: Vec<Vec<String>>) {
    let mut table = pipewarden::cli::table::Table::new(headers);
    for row in rows {
        table.row(row);
    }
    print!("{}", table.render());
}
